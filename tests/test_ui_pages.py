"""The operator page's detail views over HTTP, once on SQLite and once on PostgreSQL: one
memory in full, text search with type/status counts, and a conversation's episodes.
Hostile text must come back as text in every view."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from episodic import Episodic, InvalidInput, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.errors import Unauthenticated
from episodic.http import asgi
from episodic.model import MemoryStatus, ScopeFilter
from episodic.store import open_store
from episodic.store.vectors import Relation
from servers import serve

NOW = datetime.now(UTC)
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
LONG = "The checkout service ran out of memory after the cache TTL change. " * 6


def ev(i: str, ws: str, summary: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": i,
        "workspace": ws,
        "type": "peer.escalation",
        "summary": summary,
        "ts": (NOW - timedelta(hours=float(extra.pop("hours", 1)))).isoformat(),
        **extra,
    }


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def mem(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Episodic]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'm.db'}"
    else:
        url = request.getfixturevalue("pg_module_url")
    m = Episodic(store=open_store(url), embedder=FakeEmbedder(dim=256), settings=Settings())
    m.ingest(
        [
            ev("long", "acme", LONG, agent="deployer", crew="ops", resource="svc:checkout"),
            ev("evil", "acme", f"rollback note {HOSTILE}", agent="deployer", hours=2),
            ev(
                "deny", "acme", "keeper denied the deploy", agent="reviewer", type="approval.denied"
            ),
            ev(
                "tool",
                "acme",
                "flaky checkout test retried",
                agent="reviewer",
                type="tool.call",
                refs={"episodic": True},
            ),
            ev("o1", "orbit", "checkout in the orbit sandbox", agent="deployer"),
        ]
    )
    m.index_once()
    m.store.add_relations("acme", [Relation("long", "evil", "similar", 0.87)])
    m.update("long", workspace="acme", content=LONG + "Fixed by pinning the TTL.")
    m.store.set_status("acme", "tool", MemoryStatus.RETIRED)
    # A conversation: the first episode states a fact, the second restates it (dropped
    # by extraction as known) and adds a new one.
    say = [
        ("c1", f"The payment gateway returns 409 on partial refunds. {HOSTILE}", 60),
        (
            "c2",
            "The payment gateway still returns 409 on partial refunds. "
            "Refunds above 500 euros also time out at the acquirer.",
            30,
        ),
    ]
    for conversation, text, minutes in say:
        m.add_message(
            text,
            workspace="acme",
            conversation="chat-1",
            name="Dana",
            agent="helper",
            resource="user:dana",
            ts=NOW - timedelta(days=1, minutes=minutes) if conversation == "c1" else NOW,
        )
        m.segment(flush=True)
    m.index_once()
    yield m
    m.close()


@pytest.fixture(scope="module")
def base(mem: Episodic) -> Iterator[str]:
    with serve(asgi(mem)) as url:
        yield url


@contextmanager
def signed_in(
    base: str, mem: Episodic, *, role: str = "admin", agent: str | None = None
) -> Iterator[httpx.Client]:
    _, secret = mem.create_key("acme", role=role, agent=agent)
    with httpx.Client(base_url=base, timeout=30) as c:
        assert c.post("/ui/login", data={"key": secret}).status_code == 303
        yield c


def assert_escaped(html: str) -> None:
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert" in html


def test_a_memory_in_full(base: str, mem: Episodic) -> None:
    with signed_in(base, mem) as c:
        listing = c.get("/ui/memories").text
        assert 'href="/ui/memories/long"' in listing  # linked from the list
        r = c.get("/ui/memories/long")
        assert r.status_code == 200
        page = r.text
        content = re.search(r'<div class="fulltext" id="content">(.*?)</div>', page, re.S)
        assert content is not None and content.group(1) == LONG + "Fixed by pinning the TTL."
        facts = page.split('id="facts"')[1].split("</table>")[0]
        for name, shown in (
            ("workspace", "acme"),
            ("agent", "deployer"),
            ("crew", "ops"),
            ("resource", "svc:checkout"),
            ("conversation", "–"),
        ):
            assert f"<tr><th>{name}</th><td>{shown}</td></tr>" in facts
        assert "peer.escalation" in page.split('id="title"')[1].split("</h2>")[0]
        m = mem.store.get_memory("acme", "long")
        assert f"{m.importance:.2f} (base {m.base_importance:.2f})" in facts
        refs = re.search(r'id="refs">(\d+)', page)
        assert refs is not None and refs.group(1) == "0"
        sources = page.split('id="sources"')[1].split("</ul>")[0]
        assert '<li data-id="long">long</li>' in sources  # its own event: not a link to itself
        # The similar edge, with the other memory's text (escaped).
        relations = page.split('id="relations"')[1].split("</table>")[0]
        assert 'data-id="evil"' in relations and "0.87" in relations and "similar" in relations
        assert_escaped(relations)
        # History: the current text, then the one the edit replaced.
        history = page.split('id="history"')[1].split("</table>")[0]
        versions = re.findall(r'data-version="(\d+)"', history)
        assert versions == ["2", "1"]
        assert "(current)" in history and "Fixed by pinning" in history


def test_detail_shows_fsrs_state_and_escapes(base: str, mem: Episodic) -> None:
    with signed_in(base, mem) as c:
        listed = mem.list_memories(ScopeFilter("acme"), limit=50).items
        episode = next(m for m in listed if m.type == "episode" and "<script>" in m.content)
        page = c.get(f"/ui/memories/{episode.id}").text
        fsrs = page.split('id="fsrs"')[1].split("</table>")[0]
        assert episode.stability is not None
        assert f"{episode.stability:.2f} days" in fsrs
        assert_escaped(page)
        evil = c.get("/ui/memories/evil").text
        assert_escaped(evil)


def test_an_unseen_memory_is_a_flash_not_a_page(base: str, mem: Episodic) -> None:
    with signed_in(base, mem) as c:
        for memory_id in ("o1", "nope", "%3Cscript%3E", "a%00b"):
            r = c.get(f"/ui/memories/{memory_id}", follow_redirects=True)
            assert r.status_code == 200 and "no memory" in r.text
            assert 'id="content"' not in r.text
            assert "<script>" not in r.text.split('id="flash"')[1].split("</div>")[0]
    with signed_in(base, mem, role="agent", agent="deployer") as c:
        r = c.get("/ui/memories/deny", follow_redirects=True)  # the reviewer's
        assert "no memory deny here" in r.text
        assert c.get("/ui/memories/long").status_code == 200
    with httpx.Client(base_url=base, timeout=30) as c:
        assert c.get("/ui/memories/long").status_code == 401


def test_search_and_type_status_counts(base: str, mem: Episodic) -> None:
    with signed_in(base, mem) as c:
        page = c.get("/ui/memories", params={"q": "checkout"}).text
        ids = re.findall(r'<tr class="status-\w+" data-id="([^"]+)"', page)
        assert set(ids) == {"long", "tool"}  # never orbit's
        counts = dict(re.findall(r'data-value="([^"]+)">[^<]*<span class="n">(\d+)</span>', page))
        assert counts["peer.escalation"] == "1" and counts["tool.call"] == "1"
        assert counts["active"] == "1" and counts["retired"] == "1"
        # A status narrows the type counts; the status counts stay for the whole search.
        page = c.get("/ui/memories", params={"q": "checkout", "status": "active"}).text
        counts = dict(re.findall(r'data-value="([^"]+)">[^<]*<span class="n">(\d+)</span>', page))
        assert "tool.call" not in counts and counts["retired"] == "1"
        assert re.findall(r'<tr class="status-\w+" data-id="([^"]+)"', page) == ["long"]
        # Hostile search text comes back as text.
        r = c.get("/ui/memories", params={"q": HOSTILE})
        assert r.status_code == 200
        assert_escaped(r.text)
        r = c.get("/ui/memories", params={"q": "x" * 2000})
        assert r.status_code == 400 and "q:" in r.text


def test_a_conversations_episodes(base: str, mem: Episodic) -> None:
    with signed_in(base, mem) as c:
        r = c.get("/ui/conversations/chat-1")
        assert r.status_code == 200
        page = r.text
        sections = page.split('<section class="episode"')[1:]
        assert len(sections) == 2
        newest, oldest = sections
        assert "Refunds above 500 euros also time out at the acquirer." in newest
        assert "409 on partial refunds" in oldest  # its message
        # The second episode's extraction dropped the restated fact, with the reason.
        drops = newest.split('class="drops"')[1].split("</ul>")[0]
        assert "restates_known" in drops
        assert 'class="notes"' in oldest and "/ui/memories/ent_" in oldest
        assert_escaped(page)
        # A conversation that does not exist, or hostile in the path, is an empty page.
        r = c.get("/ui/conversations/%3Cscript%3Ealert(1)")
        assert r.status_code == 200 and "No episodes here yet" in r.text
        assert "<script>alert(1)" not in r.text
        assert "No episodes here yet" in c.get("/ui/conversations/a%00b").text
    with signed_in(base, mem, role="agent", agent="deployer") as c:
        assert "No episodes here yet" in c.get("/ui/conversations/chat-1").text  # helper's


def test_count_memories_by_type_and_status(mem: Episodic) -> None:
    acme = ScopeFilter("acme")
    assert mem.count_memories(acme, q="checkout") == {
        ("peer.escalation", "active"): 1,
        ("tool.call", "retired"): 1,
    }
    counts = mem.count_memories(acme)
    assert sum(counts.values()) == len(mem.list_memories(acme, limit=200).items)
    assert mem.count_memories(ScopeFilter("acme", agent_id="reviewer")) == {
        ("approval.denied", "active"): 1,
        ("tool.call", "retired"): 1,
    }
    for q in ("refund", "checkout TTL", "the", "zzzz"):  # the same matching as the list
        found = mem.list_memories(acme, limit=200, q=q).items
        assert sum(mem.count_memories(acme, q=q).values()) == len(found)
    with pytest.raises(InvalidInput) as err:
        mem.count_memories(acme, q="  ")
    assert err.value.field == "q"


def test_an_entry_shows_its_source_message_evidence_and_episode(base: str, mem: Episodic) -> None:
    listed = mem.list_memories(ScopeFilter("acme"), limit=50).items
    entry = next(m for m in listed if m.type == "entry" and "acquirer" in m.content)
    (message_id,) = entry.source_event_ids
    with signed_in(base, mem) as c:
        page = c.get(f"/ui/memories/{entry.id}").text
        sources = page.split('id="sources"')[1].split("</ul>")[0]
        assert f'href="/ui/memories/{message_id}"' in sources
        assert "Refunds above 500 euros" in sources  # the message's own text
        evidence = page.split('id="evidence"')[1].split("</table>")[0]
        assert f"<tr><th>source</th><td>{entry.payload['source']}</td></tr>" in evidence
        assert str(entry.payload["evidence"]) in evidence
        assert f'href="/ui/memories/{entry.payload["episode_id"]}"' in evidence


def test_a_replaced_memory_shows_its_validity_and_what_replaced_it(
    base: str, mem: Episodic
) -> None:
    mem.remember("the wiki lives at wiki-old.internal", workspace="acme", id="ui-wiki-1")
    new = mem.supersede("ui-wiki-1", "the wiki lives at wiki-new.internal", workspace="acme")
    with signed_in(base, mem) as c:
        page = c.get("/ui/memories/ui-wiki-1").text
        validity = page.split('id="validity"')[1].split("</td>")[0]
        assert "replaced by" in validity and f'href="/ui/memories/{new.id}"' in validity
        assert "superseded" in page.split('id="title"')[1].split("</h2>")[0]
        current = c.get(f"/ui/memories/{new.id}").text
        assert "now" in current.split('id="validity"')[1].split("</td>")[0]


def test_the_cookie_holds_a_session_never_the_key(base: str, mem: Episodic) -> None:
    """The sign-in cookie is a random session id kept server-side: the key never reaches
    the browser, and the id stops working at sign-out, at expiry and when its key is
    revoked."""
    key, secret = mem.create_key("acme", role="admin")
    with httpx.Client(base_url=base, timeout=30) as c:
        r = c.post("/ui/login", data={"key": secret})
        assert r.status_code == 303
        set_cookie = r.headers["set-cookie"]
        session = c.cookies["episodic_session"]
        assert secret not in set_cookie and key.id not in set_cookie
        assert session not in secret and len(session) >= 40
        attributes = {part.strip().split("=")[0].lower() for part in set_cookie.split(";")}
        assert {"httponly", "max-age", "path"} <= attributes
        assert "samesite=strict" in set_cookie.lower() and "path=/ui" in set_cookie.lower()
        assert c.get("/ui/memories").status_code == 200
        # Two sign-ins with the same key are two sessions.
        with httpx.Client(base_url=base, timeout=30) as other:
            other.post("/ui/login", data={"key": secret})
            assert other.cookies["episodic_session"] != session
        assert c.post("/ui/logout").status_code == 303
    # The old id, replayed after sign-out (as a stolen cookie would be): refused.
    with httpx.Client(base_url=base, timeout=30, cookies={"episodic_session": session}) as c:
        assert c.get("/ui/memories").status_code == 401
    # The raw key as the cookie (what the page used to keep) is no sign-in either.
    with httpx.Client(base_url=base, timeout=30, cookies={"episodic_session": secret}) as c:
        assert c.get("/ui/memories").status_code == 401


def test_a_session_expires_and_ends_with_its_key(base: str, mem: Episodic) -> None:
    key, secret = mem.create_key("acme", role="admin")
    session = mem.sign_in(secret)
    assert mem.signed_in_caller(session).key.id == key.id
    real = mem.clock
    try:
        mem.clock = lambda: real() + timedelta(hours=12, seconds=1)
        with httpx.Client(base_url=base, timeout=30, cookies={"episodic_session": session}) as c:
            assert c.get("/ui/memories").status_code == 401
        mem.clock = lambda: real() + timedelta(hours=11)
        with httpx.Client(base_url=base, timeout=30, cookies={"episodic_session": session}) as c:
            assert c.get("/ui/memories").status_code == 200
    finally:
        mem.clock = real
    mem.revoke_key(key.id)
    with pytest.raises(Unauthenticated):
        mem.signed_in_caller(session)
    with pytest.raises(Unauthenticated):
        mem.sign_in(secret)  # a revoked key cannot sign in


def test_the_trace_view_folds_drops_by_where_and_why() -> None:
    from episodic.ui_views import STAGE_ROWS, trace_view

    ranked = [(f"m{i}", i + 1, 1.0 - i / 100) for i in range(STAGE_ROWS + 5)]
    dropped = [
        ("m0", "final", "beyond k", ""),  # a kept hit is never listed as dropped
        ("m2", "dense", "below threshold", "0.12"),
        ("m2", "final", "beyond k", ""),  # only a memory's first drop is shown
        ("m3", "final", "beyond k", ""),
        ("m4", "final", "beyond k", "score 0.3"),
    ]
    view = trace_view({"leg:dense": ranked, "fusion": ranked[:3]}, dropped, ["m0", "m1"], {})
    assert [(k.memory_id, k.kept, k.ranks) for k in view.kept] == [
        ("m0", 1, [("leg:dense", 1), ("fusion", 1)]),
        ("m1", 2, [("leg:dense", 2), ("fusion", 2)]),
    ]
    dense = view.stages[0]
    assert (dense.name, dense.count, len(dense.rows), dense.more) == (
        "leg:dense",
        STAGE_ROWS + 5,
        STAGE_ROWS,
        5,
    )
    assert [r.kept for r in dense.rows[:3]] == [1, 2, None]
    assert [(d.memory_id, d.stage, d.reason) for d in view.dropped] == [
        ("m2", "dense", "below threshold"),
        ("m3", "final", "beyond k"),
        ("m4", "final", "beyond k"),
    ]
    assert view.dropped_groups == [("final", "beyond k", 2), ("dense", "below threshold", 1)]


def test_a_keyword_match_too_common_to_weigh_shows_as_a_match_on_the_page() -> None:
    from episodic.recall.trace import SPARSE_STAGE, WEIGHTLESS_NOTE
    from episodic.ui_views import trace_view

    rows = [("m1", 1, 0.0), ("m2", 2, 0.0)]
    view = trace_view({SPARSE_STAGE: rows, "fusion": rows}, [], ["m1"], {})
    sparse, fused = view.stages
    assert [r.shown for r in sparse.rows] == ["matched, weight ~0"] * 2
    assert sparse.note == WEIGHTLESS_NOTE
    assert [r.shown for r in fused.rows] == ["0.000", "0.000"] and fused.note is None


def test_over_https_the_session_cookie_is_secure(mem: Episodic) -> None:
    from fastapi.testclient import TestClient

    _, secret = mem.create_key("acme", role="admin")
    for scheme, secure in (("https", True), ("http", False)):
        with TestClient(asgi(mem), base_url=f"{scheme}://testserver") as c:
            r = c.post("/ui/login", data={"key": secret}, follow_redirects=False)
            assert r.status_code == 303
            assert ("secure" in r.headers["set-cookie"].lower()) is secure
