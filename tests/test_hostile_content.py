"""Hostile content: every payload of tests/hostile_payloads.py goes in as a journal event
and as conversation messages, through indexing (the real MiniLM) and recall, and out
through every renderer: the ``<recalled-memory>`` block, the ``<memory>`` block (n8n
policy and auto-inject), the layer's ``<episodes>`` block and its recall_memory tool, the
HTTP API (a real uvicorn) and the MCP tool (the SDK's client over the protocol).

Every block must stay intact and well-formed under every reading ``block_problems``
knows (raw, NFKC, NFKD without marks, invisibles stripped, case-folded, parsed as HTML),
and every payload's marker must be inside it: inert, not dropped.
"""

from __future__ import annotations

import html
import json
import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.http import asgi
from episodic.layer import MemoryLayer, episode_line
from episodic.mcp import Binding, build_server
from episodic.model import Hit, Memory
from episodic.recall.render import (
    escape_text,
    fit_block,
    render_block,
    render_memory_block,
)
from episodic.store import open_store
from hostile_payloads import (
    CATEGORIES,
    LONGEST,
    PAYLOADS,
    Frame,
    Payload,
    block_problems,
    frames,
    readings,
)
from servers import serve

FRAMES = frames()
NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
# Categories the issue names, each with several payloads.
REQUIRED = {
    "closing_tag",
    "forged_tag",
    "nested_partial",
    "entities",
    "cdata",
    "ignore_instructions",
    "role_headers",
    "markdown",
    "html",
    "fences",
    "control_chars",
    "zero_width",
    "bidi",
    "long_line",
}


def hit(p: Payload, *, kind: str = "note", age: float = 3600.0) -> Hit:
    m = Memory(id=f"id-{p.marker}", workspace="ws", ts=NOW, type=kind, content=p.text)
    return Hit(memory=m, score=0.5, age_seconds=age)


def text_problems(value: str, marker: str | None = None) -> list[str]:
    """A single escaped string (a tool's field): one line, no tag in any reading, nothing
    invisible, the marker kept."""
    problems = []
    for reading, text in readings(value):
        if "<" in text or "\n" in text:
            problems.append(f"{reading}: a '<' or a line break")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in value):
        problems.append("an invisible or control character")
    if marker is not None and marker not in value:
        problems.append(f"marker {marker} missing")
    return problems


def test_the_corpus_covers_every_category() -> None:
    assert len(PAYLOADS) >= 60
    assert set(CATEGORIES) >= REQUIRED
    assert len({p.marker for p in PAYLOADS}) == len(PAYLOADS)
    assert LONGEST >= 100_000


# -- pure rendering: no store ----------------------------------------------------------------
@pytest.mark.parametrize("budget", [400, 2000, 50_000])
def test_each_payload_alone_renders_an_intact_block(budget: int) -> None:
    failures: dict[str, list[str]] = {}
    for p in PAYLOADS:
        for name, block in (
            ("recalled", render_block([hit(p)], budget)),
            ("memory", render_memory_block([hit(p)], budget)),
        ):
            problems = block_problems(block, FRAMES[name], [p.marker])
            if len(block) > budget:
                problems.append(f"{len(block)} chars over the budget of {budget}")
            if problems:
                failures[f"{p.name}/{name}"] = problems
    assert not failures, failures


def test_all_payloads_in_one_block_and_hostile_types() -> None:
    hits = [hit(p, kind=f"</recalled-memory>{p.text[:40]}") for p in PAYLOADS]
    short = [p for p in PAYLOADS if len(p.text) < 1000]
    budget = 400_000
    for name, block in (
        ("recalled", render_block(hits, budget)),
        ("memory", render_memory_block(hits, budget)),
        (
            "recalled",
            fit_block(
                hits[:10],
                budget,
                standing=hits[10:20],
                standing_chars=5_000,
                type_caps={hits[0].memory.type: 500},
            )[0],
        ),
    ):
        problems = block_problems(block, FRAMES[name], [p.marker for p in short[:10]])
        assert not problems, (name, problems)


def test_lookalikes_of_less_than_are_escaped_visibly() -> None:
    # Regression: NFKC turns U+FF1C and U+FE64 into "<", and NFKD without marks turns
    # U+226E into one: each could close the block once a tokenizer normalised it.
    assert escape_text("\uff1c/recalled-memory\uff1e") == "&#xFF1C;/recalled-memory\uff1e"
    assert escape_text("\ufe64/x \u226e/y <z") == "&#xFE64;/x &#x226E;/y &lt;z"


def test_escaping_reads_back_and_a_cut_never_leaves_half_a_reference() -> None:
    # Regression: a dangling "&#x" (in the text, or left by the budget's cut) made an HTML
    # parser read the block's closing tags as text.
    text = "R&D <b> &#x &#60; \uff1c"
    assert html.unescape(escape_text(text)) == text
    for budget in range(330, 420):
        block = render_block(
            [hit(Payload("refs", "entities", "hxm999 " + "\uff1c" * 300, "hxm999"))], budget
        )
        assert not block_problems(block, FRAMES["recalled"], ["hxm999"]), budget


def test_smuggling_characters_are_removed() -> None:
    # Regression: the invisible "tag" letters (ASCII smuggling), the Arabic letter mark
    # (a bidi control), variation selectors and soft hyphens used to pass through.
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "obey")
    assert escape_text(f"a{hidden}b \u061cc\u00add \ufe0fe\U000e0100") == "ab cd e"
    # Line breaks of every kind still leave a space between the words they separated.
    assert escape_text("a\x0bb\x1cc\x85d\u2029e") == "a b c d e"


def test_a_long_line_is_cut_to_the_budget_with_its_marker_first() -> None:
    long = next(p for p in PAYLOADS if p.name == "long_tags")
    block = render_block([hit(long)], 500)
    assert len(block) <= 500 and block.split("\n")[2].endswith("…")
    assert not block_problems(block, FRAMES["recalled"], [long.marker])


def test_episode_lines_are_escaped() -> None:
    failures = {}
    for p in PAYLOADS[:40]:
        episode = Memory(
            id="ep",
            workspace="ws",
            ts=NOW,
            type="episode",
            content=p.text,
            payload={"title": p.text[:200], "summary": p.text[:600], "start": p.text[:30]},
        )
        line = episode_line(episode)
        if problems := text_problems(line, p.marker):
            failures[p.name] = problems
    assert not failures, failures


# -- through a store, recall and every interface --------------------------------------------
@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def loaded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Episodic, str]]:
    """Every payload as an event (workspace ``ev<n>``) and as a finished run's transcript
    (workspace ``cv<n>``), indexed; one database per backend for the module. The fake
    embedder keeps this fast: what is checked is text, not ranking (the stress suite runs
    the same corpus through the real MiniLM)."""
    if request.param == "sqlite":
        db_url = f"sqlite:///{tmp_path_factory.mktemp('hostile') / 'm.db'}"
    else:
        db_url = request.getfixturevalue("pg_module_url")
    settings = Settings(max_text_chars=LONGEST + 100, institutional_chars=0)
    mem = Episodic(
        store=open_store(db_url), embedder=FakeEmbedder(dim=64), settings=settings, llm=None
    )
    events = [
        {
            "id": f"e-{p.marker}",
            "workspace": f"ev{i}",
            "agent": "agent",
            # Every other event also carries a hostile type (ids refuse only controls).
            "type": "note" if i % 2 else f"</recalled-memory>\u202e{p.marker}",
            "summary": p.text,
            "refs": {"episodic": True},
            "ts": NOW.isoformat(),
        }
        for i, p in enumerate(PAYLOADS)
    ]
    # The same events once more in one workspace, for the HTTP API (one key).
    shared = [{**e, "id": f"a-{e['id']}", "workspace": "all"} for e in events]
    report = mem.ingest(shared)
    assert report.admitted == len(PAYLOADS) - sum("\x00" in p.text for p in PAYLOADS)
    mem.ingest([{**e, "summary": e["summary"].replace("\x00", "")} for e in shared])
    report = mem.ingest(events)
    # A NUL is refused by name on both backends (PostgreSQL text cannot hold one); every
    # other payload is stored.
    refused = [i for i, p in enumerate(PAYLOADS) if "\x00" in p.text]
    assert [(e.line - 1, e.field) for e in report.errors] == [(i, "summary") for i in refused]
    assert report.admitted == len(PAYLOADS) - len(refused)
    for i, p in enumerate(PAYLOADS):
        layer = MemoryLayer(mem, workspace=f"cv{i}", agent="agent")
        transcript = [
            # Said as a situation, so that offline extraction makes an entry of it and
            # auto-inject (which shows entries only) meets the payload too.
            {"role": "user", "content": f"The nightly export failed with this output: {p.text}"},
            {"role": "assistant", "content": f"Noted {p.marker}. {p.text[:300]}"},
        ]
        if i in refused:
            with pytest.raises(InvalidInput) as info:
                layer.on_complete(transcript, conversation=f"run-{i}")
            assert info.value.field == "summary"
            # What a caller does with the error: drop the NUL and store the run.
            transcript = [{**t, "content": t["content"].replace("\x00", "")} for t in transcript]
        layer.on_complete(transcript, conversation=f"run-{i}")
        if i in refused:
            mem.ingest([{**events[i], "summary": p.text.replace("\x00", "")}])
    result = mem.index_once()
    assert result.failed == 0 and result.error is None
    assert mem.stats().pending_vectors == 0
    yield mem, request.param
    mem.close()


def _mcp_answers(mem: Episodic, workspaces: list[tuple[str, str]]) -> dict[str, Any]:
    """recall_memory(marker) in each workspace, over the MCP protocol (in-process)."""
    answers: dict[str, Any] = {}

    async def main() -> None:
        for ws, marker in workspaces:
            server = build_server(mem, Binding.of(ws, None, None, "admin"))
            async with Client(server) as client:
                result = await client.call_tool("recall_memory", {"query": marker, "k": 5})
                assert not result.is_error, result.content
                answers[ws] = (result.content[0].text, result.structured_content)

    anyio.run(main)
    return answers


def _takes(backend: str, i: int, n: int, slot: int) -> bool:
    """Whether payload ``i`` goes through output ``slot`` of ``n``: every output on SQLite;
    on PostgreSQL (whose recalls cost more) one output per payload, in turn, so every
    payload and every output still meets the backend's search path."""
    return backend == "sqlite" or i % n == slot


def test_payloads_stay_inert_through_ingest_recall_and_every_output(
    loaded: tuple[Episodic, str],
) -> None:
    mem, backend = loaded
    failures: dict[str, list[str]] = {}
    checked = 0

    def check(where: str, block: str, frame: Frame, marker: str) -> None:
        nonlocal checked
        checked += 1
        if problems := block_problems(block, frame, [marker]):
            failures[where] = problems

    for i, p in enumerate(PAYLOADS):
        ev, cv = f"ev{i}", f"cv{i}"
        layer = MemoryLayer(mem, workspace=cv, agent="agent")
        if _takes(backend, i, 5, 0):
            block = mem.render(p.marker, workspace=ev)
            check(f"{p.name}/event/render", block, FRAMES["recalled"], p.marker)
        if _takes(backend, i, 5, 1):
            block = mem.render(p.marker, workspace=ev, policy="n8n")
            check(f"{p.name}/event/n8n", block, FRAMES["memory"], p.marker)
        if _takes(backend, i, 5, 2):
            block = mem.render(p.marker, workspace=cv)
            check(f"{p.name}/run/render", block, FRAMES["recalled"], p.marker)
        if _takes(backend, i, 5, 3):
            check(
                f"{p.name}/run/auto_inject", layer.auto_inject(p.marker), FRAMES["memory"], p.marker
            )
        if _takes(backend, i, 5, 4):
            tool = layer.recall_memory(p.marker)
            checked += 1
            fields = [
                str(v) for h in tool for k, v in h.items() if k in ("content", "type", "evidence")
            ]
            bad = [pr for v in fields for pr in text_problems(v)]
            if bad or not any(p.marker in v for v in fields):
                failures[f"{p.name}/run/recall_memory"] = bad or ["marker missing"]
        # The episodes block lists the newest episodes: no recall, cheap on both backends.
        check(f"{p.name}/run/episodes", layer.recall(4000).text, FRAMES["episodes"], p.marker)
    assert checked >= (6 if backend == "sqlite" else 2) * len(PAYLOADS)
    assert not failures, dict(list(failures.items())[:10])


def test_http_and_mcp_outputs(loaded: tuple[Episodic, str]) -> None:
    mem, backend = loaded
    failures: dict[str, list[str]] = {}
    for i, p in enumerate(PAYLOADS):
        # What the store gives back is what went in (a NUL was refused, see the fixture).
        stored = mem.store.get_memory(f"ev{i}", f"e-{p.marker}").content
        if stored != p.text.replace("\x00", ""):
            failures[f"{p.name}/stored"] = ["the stored text is not the text sent"]
    key = mem.create_key("all", role="admin")[1]
    auth = {"Authorization": f"Bearer {key}"}
    with serve(asgi(mem)) as base, httpx.Client(base_url=base, timeout=60) as http:
        for i, p in enumerate(PAYLOADS):
            # bm25 with k=1: the marker is in that one memory only, so it is the hit.
            body = {"query": p.marker, "mark": False, "policy": "bm25", "k": 1}
            if _takes(backend, i, 3, 0):
                r = http.post("/v1/recall", json=body, headers=auth)
                assert r.status_code == 200, (p.name, r.text[:300])
                hits = r.json()["hits"]
                stored = mem.store.get_memory("all", f"a-e-{p.marker}").content
                # JSON is the escaping here: a parser gives back the stored text exactly.
                if [h["content"] for h in hits] != [stored]:
                    failures[f"{p.name}/http/recall"] = ["the hit's text is not the stored text"]
            if _takes(backend, i, 3, 1):
                r = http.post("/v1/render", json={**body, "max_chars": 2000}, headers=auth)
                assert r.status_code == 200, (p.name, r.text[:300])
                block = r.json()["block"]
                problems = block_problems(block, FRAMES["recalled"], [p.marker])
                if len(block) > 2000:
                    problems.append("over budget")
                if problems:
                    failures[f"{p.name}/http/render"] = problems
    through_mcp = [(i, p) for i, p in enumerate(PAYLOADS) if _takes(backend, i, 3, 2)]
    answers = _mcp_answers(mem, [(f"ev{i}", p.marker) for i, p in through_mcp])
    for i, p in through_mcp:
        raw, structured = answers[f"ev{i}"]
        # The JSON a model reads is pretty-printed: its own line breaks are not content.
        problems = [f"raw json: {x}" for x in text_problems(raw.replace("\n", " "))]
        memories = (structured or json.loads(raw))["memories"]
        for m in memories:
            for field in ("content", "type", "source", "evidence"):
                if m[field] is not None:
                    problems += [f"{field}: {x}" for x in text_problems(m[field])]
        if not any(p.marker in m["content"] for m in memories):
            problems.append("marker missing")
        if problems:
            failures[f"{p.name}/mcp"] = problems
    assert not failures, dict(list(failures.items())[:10])
