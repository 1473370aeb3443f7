"""The operator's page end to end: uvicorn on a free loopback port, headless Chromium
driven over the DevTools protocol, a screenshot taken and checked."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from browser import HEIGHT, WIDTH, Browser, png_size
from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.model import MemoryStatus
from episodic.store import open_store
from servers import serve

NOW = datetime.now(UTC)
SCORES = [52.0, 58.5, 61.0, 70.0, 77.5, 81.0]


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Episodic]:
    db = tmp_path / "ui.db"
    m = Episodic(
        store=open_store(f"sqlite:///{db}"), embedder=FakeEmbedder(dim=256), settings=Settings()
    )
    events = [
        ("u1", "deployer", "checkout OOM after the cache TTL change <script>alert(1)</script>"),
        ("u2", "deployer", "checkout deploy rolled back after error spike"),
        ("u3", "reviewer", "payment review found a flaky checkout test"),
        ("u4", "reviewer", "keeper denied the production deploy of checkout"),
        ("u5", "oncall", "disk pressure on the checkout nodes"),
    ]
    m.ingest(
        [
            {
                "id": i,
                "workspace": "acme",
                "agent": agent,
                "type": "peer.escalation",
                "summary": text,
                "ts": (NOW - timedelta(hours=n)).isoformat(),
            }
            for n, (i, agent, text) in enumerate(events)
        ]
        + [{"id": "x1", "workspace": "orbit", "type": "peer.escalation", "summary": "orbit"}]
    )
    m.index_once()
    con = sqlite3.connect(db)
    with con:
        for n, score in enumerate(SCORES):
            day = (NOW - timedelta(days=len(SCORES) - 1 - n)).date().isoformat()
            con.execute(
                "INSERT INTO memory_health_snapshots VALUES ('acme', '', ?, 70, 80, 40, 90, 75, ?)",
                (day, score),
            )
    con.close()
    yield m
    m.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def rows(b: Browser, table: str) -> list[str]:
    ids: list[str] = b.eval(
        f"[...document.querySelectorAll('#{table} tbody tr')].map(r => r.dataset.id)"
    )
    return ids


def test_operator_page_in_a_real_browser(mem: Episodic, browser: Browser, tmp_path: Path) -> None:
    _, admin = mem.create_key("acme", role="admin")
    with serve(asgi(mem)) as base:
        b = browser
        # Without a key: the sign-in form.
        b.navigate(f"{base}/ui/memories")
        assert b.eval("document.querySelector('#login') !== null")
        b.eval(f"document.querySelector('#key').value = {json.dumps('ep_k_wrong')}")
        b.act_and_wait("document.querySelector('#login').submit()")
        assert "unknown or revoked API key" in b.eval("document.querySelector('#error').innerText")
        b.eval(f"document.querySelector('#key').value = {json.dumps(admin)}")
        b.act_and_wait("document.querySelector('#signin').click()")
        assert b.eval("location.pathname") == "/ui/memories"
        assert b.eval("document.querySelector('#who').innerText").startswith("acme · admin")
        assert rows(b, "memories") == ["u1", "u2", "u3", "u4", "u5"]  # never orbit's
        # Content is shown as text, never run as markup.
        assert b.eval("document.querySelectorAll('#memories script').length") == 0
        assert "<script>" in b.eval("document.querySelector('#memories tbody tr').innerText")

        # Filter by agent through the form.
        b.eval("document.querySelector('#filters input[name=agent]').value = 'reviewer'")
        b.act_and_wait("document.querySelector('#filters').submit()")
        assert rows(b, "memories") == ["u3", "u4"]

        # Retire one, forget another, with the row's own buttons.
        b.act_and_wait("document.querySelector('tr[data-id=u3] button.retire').click()")
        assert b.eval("document.querySelector('#flash').innerText") == "retired u3"
        assert mem.store.get_memory("acme", "u3").status is MemoryStatus.RETIRED
        assert b.eval("document.querySelector('tr[data-id=u3]').className") == "status-retired"
        # Forgetting asks first, on a page of its own; cancelling keeps the memory.
        b.act_and_wait("document.querySelector('tr[data-id=u5] button.forget').click()")
        assert b.eval("location.pathname") == "/ui/memories/u5/forget"
        assert "disk pressure" in b.eval("document.querySelector('#doomed').innerText")
        assert mem.store.get_memories("acme", ["u5"]) != []
        b.act_and_wait("document.querySelector('#cancel').click()")
        assert "u5" in rows(b, "memories")
        b.act_and_wait("document.querySelector('tr[data-id=u5] button.forget').click()")
        b.act_and_wait("document.querySelector('#do-forget').click()")
        assert b.eval("document.querySelector('#flash').innerText").startswith(
            "forgot u5: 1 memories"
        )
        assert mem.store.get_memories("acme", ["u5"]) == []
        assert "u5" not in rows(b, "memories")

        # A recall with its trace: the kept hit, and what was dropped where and why.
        b.navigate(f"{base}/ui/recall")
        b.eval("document.querySelector('#q').value = 'checkout deploy'")
        b.eval("document.querySelector('#recall input[name=k]').value = '1'")
        b.act_and_wait("document.querySelector('#run').click()")
        hits = rows(b, "hits")
        assert len(hits) == 1 and hits[0] in {"u1", "u2", "u4"}
        outcomes = b.eval(
            "[...document.querySelectorAll('#trace tbody tr')]"
            ".map(r => r.lastElementChild.innerText)"
        )
        assert outcomes == ["kept #1"]
        # Each stage of the policy, folded, with how many candidates it ranked.
        stages = b.eval(
            "[...document.querySelectorAll('#stages details.stage')]"
            ".map(d => [d.dataset.stage, d.open, d.querySelectorAll('li').length,"
            " d.querySelector('summary .n').innerText])"
        )
        assert len(stages) >= 3 and all(not opened for _, opened, _, _ in stages)
        for _, _, count, n in stages:
            assert n == f"{count} candidate" + ("" if count == 1 else "s")
        why = b.eval(
            "[...document.querySelectorAll('#dropped-rows tbody tr')]"
            ".map(r => r.lastElementChild.textContent)"
        )
        assert why and all(w.startswith("beyond k (score ") for w in why)
        assert "u3" not in rows(b, "dropped-rows")
        assert "u3" not in rows(b, "trace")  # retired: not a candidate at all
        assert mem.store.get_memory("acme", hits[0]).reference_count == 0  # looking is not using
        shot = b.screenshot(tmp_path / "recall.png")
        assert png_size(shot) == (WIDTH, HEIGHT) and len(shot) > 10_000

        # The health trend as an inline SVG chart, one point per snapshot.
        b.navigate(f"{base}/ui/health")
        assert b.eval("document.querySelector('#score').innerText").startswith("Health 81 (green)")
        assert b.eval("document.querySelectorAll('#trend circle').length") == len(SCORES)
        points = b.eval("document.querySelector('#trend polyline').getAttribute('points')")
        ys = [float(p.split(",")[1]) for p in points.split()]
        assert ys == sorted(ys, reverse=True)  # scores rise, so the line climbs
        # Each metric with its value, its weight and what it measures; the weak one
        # (coherence, 40) with its fix marked.
        metrics = b.eval(
            "[...document.querySelectorAll('#metrics tbody tr')].map(r => [r.dataset.metric,"
            " r.querySelector('.value').innerText, r.querySelector('.weight').innerText,"
            " r.className, r.querySelector('.means').innerText.length,"
            " r.querySelector('.fix').innerText])"
        )
        assert [m[:3] for m in metrics] == [
            ["freshness", "70.0", "25%"],
            ["coverage", "80.0", "25%"],
            ["coherence", "40.0", "20%"],
            ["efficiency", "90.0", "15%"],
            ["reachability", "75.0", "15%"],
        ]
        assert all(m[4] > 40 for m in metrics)
        assert [m[0] for m in metrics if m[3] == "weak"] == ["coherence"]
        weak_fix = metrics[2][5]
        assert weak_fix.startswith("Weak.") and "episodic consolidate run" in weak_fix
        assert not metrics[0][5].startswith("Weak.") and "episodic" in metrics[0][5]
        shot = b.screenshot(tmp_path / "health.png")
        assert png_size(shot) == (WIDTH, HEIGHT) and len(shot) > 10_000

        # Signing out forgets the key.
        b.act_and_wait("document.querySelector('header form button').click()")
        assert b.eval("document.querySelector('#login') !== null")


# The views a narrow screen must hold: the listing, one memory, a conversation, a recall
# with its trace, the health chart.
NARROW, WIDE = 420, 1280


def fits(b: Browser, width: int) -> None:
    """Nothing sticks out sideways and the main column shows text at ``width``: the page
    does not scroll sideways, and no element is wider than the screen or reaches past it
    (a table scrolling inside itself counts: its cells reach past the screen)."""
    assert b.eval("window.innerWidth") == width
    assert b.eval("document.documentElement.scrollWidth") <= width
    wide = b.eval(
        "[...document.querySelectorAll('body *')].filter(e => {"
        " const r = e.getBoundingClientRect();"
        " return r.width > 0 && (r.width > innerWidth || r.right > innerWidth + 0.5"
        " || r.left < -0.5); })"
        ".map(e => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`"
        " + ` ${Math.round(e.getBoundingClientRect().right)}px`)"
    )
    assert wide == [], f"wider than {width} px: {wide[:8]}"
    box = b.eval(
        "(() => { const r = document.querySelector('main').getBoundingClientRect();"
        " return [r.left, r.right, document.querySelector('main').innerText.length]; })()"
    )
    assert box[0] >= 0 and box[1] <= width and box[1] - box[0] >= width * 0.8 and box[2] > 0


def shoot(b: Browser, name: str, width: int) -> None:
    """A screenshot for the docs, only when asked (EPISODIC_SCREENSHOTS=docs), so a test
    run leaves the tree clean."""
    shots = os.environ.get("EPISODIC_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        b.screenshot(Path(shots) / f"ui-{name}{width}.png")


def width_of(b: Browser, selector: str) -> list[float]:
    """The widths of what ``selector`` matches, as laid out."""
    widths: list[float] = b.eval(
        f"[...document.querySelectorAll({json.dumps(selector)})]"
        ".map(e => e.getBoundingClientRect().width)"
    )
    return widths


# Long journal lines that all match the recall below: with k=2 about 40 are dropped.
CHECKOUT = (
    "eu-west-1/payments/checkout-workers/node-{n}.internal: checkout deploy {n} rolled back, "
    "the cache TTL change made the payment workers run out of memory under the evening peak"
)


@pytest.mark.parametrize("width", [WIDE, NARROW])
def test_every_view_fits_the_screen(
    mem: Episodic, browser: Browser, tmp_path: Path, width: int
) -> None:
    for n, text in enumerate(
        [
            "The payment gateway returns 409 on partial refunds after the idempotency change.",
            "We moved the refund to card A and it went through.",
        ]
    ):
        mem.add_message(
            text,
            workspace="acme",
            conversation="chat-7",
            name="Dana",
            agent="helper",
            ts=NOW - timedelta(minutes=10 - n),
        )
    mem.segment(flush=True)
    mem.ingest(
        [
            {
                "id": f"c{n:02d}",
                "workspace": "acme",
                "agent": "deployer",
                "type": "peer.escalation",
                "summary": CHECKOUT.format(n=n),
                "ts": (NOW - timedelta(days=2, hours=n)).isoformat(),
            }
            for n in range(45)
        ]
    )
    mem.index_once()
    _, admin = mem.create_key("acme", role="admin")
    with serve(asgi(mem)) as base:
        b = browser
        b.resize(width)
        b.navigate(f"{base}/ui")
        fits(b, width)  # the sign-in box too
        shoot(b, "login-", width)
        b.eval(f"document.querySelector('#key').value = {json.dumps(admin)}")
        b.act_and_wait("document.querySelector('#signin').click()")
        assert b.eval("location.pathname") == "/ui/memories"
        fits(b, width)
        # The content column is there and wide enough to read, in the table or the cards.
        cell = b.eval(
            "(() => { const r = document.querySelector('tr[data-id=u1] td.content')"
            ".getBoundingClientRect(); return [r.left, r.right]; })()"
        )
        assert cell[0] >= 0 and cell[1] <= width and cell[1] - cell[0] >= min(300, width * 0.7)
        shoot(b, "", width)
        b.act_and_wait("document.querySelector('tr[data-id=u1] a.open').click()")
        assert b.eval("location.pathname") == "/ui/memories/u1"
        assert "<script>" in b.eval("document.querySelector('#content').innerText")
        fits(b, width)
        shoot(b, "memory-", width)
        b.navigate(f"{base}/ui/conversations/chat-7")
        assert b.eval("document.querySelectorAll('section.episode').length") == 1
        assert b.eval("document.querySelectorAll('section.episode ol.messages li').length") == 2
        fits(b, width)
        shoot(b, "conversation-", width)

        b.navigate(f"{base}/ui/recall?q=checkout+deploy+rolled+back&k=2")
        assert len(rows(b, "hits")) == 2
        fits(b, width)
        # The hits' text is readable: a wide column, or a card per hit on a phone.
        for w in width_of(b, "#hits td.content"):
            assert w >= min(300, width * 0.7)
        cards = b.eval("getComputedStyle(document.querySelector('#hits tr')).display")
        assert (cards == "block") is (width < 600)
        # The dropped candidates (about 40) are folded under one line that counts them.
        assert not b.eval("document.querySelector('#dropped').open")
        summary = b.eval("document.querySelector('#dropped summary').innerText")
        dropped = len(rows(b, "dropped-rows"))
        assert dropped >= 30 and summary.startswith(f"Dropped {dropped}:")
        assert "beyond k at final (" in summary
        assert sum(int(n) for n in re.findall(r"\((\d+)\)", summary)) == dropped
        folded = b.eval("document.querySelector('#dropped').getBoundingClientRect().height")
        assert folded < 80  # one line, not forty rows
        shoot(b, "recall-", width)
        # Opened, the dropped rows and every stage's ranking still fit.
        b.eval("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert b.eval("document.querySelector('#dropped').getBoundingClientRect().height") > 400
        fits(b, width)

        b.navigate(f"{base}/ui/health")
        fits(b, width)
        shoot(b, "health-", width)
        shot = b.screenshot(tmp_path / "health.png")
        assert png_size(shot) == (width, HEIGHT)
