"""Hostile content at scale: the corpus and thousands of generated variants (payloads
concatenated, hostile characters inserted at random, wrapped in each category's trick)
through every renderer, and a store-sized share of them through ingest, indexing by the
real MiniLM, recall and the HTTP and MCP outputs, on both backends.

Sizes: EPISODIC_STRESS_HOSTILE_PURE (default 20000 rendered variants) and
EPISODIC_STRESS_HOSTILE_STORED (default 1500 stored variants per backend).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import anyio
import httpx
import pytest
from mcp import Client

from episodic import Episodic, Settings
from episodic.embed import MiniLMEmbedder
from episodic.http import asgi
from episodic.mcp import Binding, build_server
from episodic.model import Hit, Memory
from episodic.recall.render import escape_text, fit_block, render_block, render_memory_block
from episodic.store import open_store
from hostile_payloads import PAYLOADS, block_problems, frames, readings, variants
from servers import serve
from stress.results import record

PURE = int(os.environ.get("EPISODIC_STRESS_HOSTILE_PURE", "20000"))
STORED = int(os.environ.get("EPISODIC_STRESS_HOSTILE_STORED", "1500"))
FRAMES = frames()
NOW = datetime.now(UTC)
COUNTS: Counter[str] = Counter()
FAILURES: list[str] = []


def _hit(marker: str, text: str, kind: str = "note") -> Hit:
    m = Memory(id=f"id-{marker}", workspace="ws", ts=NOW, type=kind, content=text)
    return Hit(memory=m, score=0.5, age_seconds=60.0)


def _check(where: str, block: str, frame: str, marker: str, budget: int | None = None) -> None:
    COUNTS["outputs checked"] += 1
    problems = block_problems(block, FRAMES[frame], [marker])
    if budget is not None and len(block) > budget:
        problems.append(f"{len(block)} chars over {budget}")
    if problems:
        FAILURES.append(f"{where}: {problems[:2]}")


def test_rendering_thousands_of_variants() -> None:
    for n, (marker, text) in enumerate(variants(seed=8, count=PURE)):
        COUNTS["payloads tried"] += 1
        budget = (600, 2000, 30_000)[n % 3]
        hit = _hit(marker, text, kind=text[:30])
        _check(f"{marker}/render", render_block([hit], budget), "recalled", marker, budget)
        _check(f"{marker}/memory", render_memory_block([hit], budget), "memory", marker, budget)
        escaped = escape_text(text)
        COUNTS["outputs checked"] += 1
        if any("<" in t for _, t in readings(escaped)) or marker not in escaped:
            FAILURES.append(f"{marker}/escape_text")
    # Many hostile hits in one block, with standing knowledge and type caps.
    batch = [_hit(m, t, kind=t[:20]) for m, t in variants(seed=9, count=400)]
    for i in range(0, len(batch), 40):
        hits = batch[i : i + 40]
        block, _ = fit_block(hits[:30], 20_000, standing=hits[30:], standing_chars=3_000)
        _check(f"batch{i}", block, "recalled", hits[0].memory.id.removeprefix("id-"))
    assert not FAILURES, FAILURES[:10]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(params=["sqlite", "postgres"])
def stored(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder
) -> Iterator[tuple[Episodic, list[tuple[str, str]]]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('hostile') / 'm.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    texts = [(p.marker, p.text) for p in PAYLOADS] + list(variants(seed=10, count=STORED))
    mem = Episodic(
        store=open_store(url),
        embedder=minilm,
        settings=Settings(max_text_chars=200_000, institutional_chars=0),
        llm=None,
    )
    events = [
        {"id": f"e-{m}", "workspace": "hostile", "summary": t, "refs": {"episodic": True}}
        for m, t in texts
    ]
    report = mem.ingest(events)
    nul = [i for i, (_, t) in enumerate(texts) if "\x00" in t]
    assert [e.line - 1 for e in report.errors] == nul
    assert all(e.field == "summary" for e in report.errors)
    COUNTS["refused for a NUL (by name)"] += len(nul)
    mem.ingest([{**events[i], "summary": texts[i][1].replace("\x00", "")} for i in nul])
    assert mem.index_once().failed == 0
    yield mem, texts
    mem.close()


def test_stored_variants_through_recall_http_and_mcp(
    stored: tuple[Episodic, list[tuple[str, str]]],
) -> None:
    mem, texts = stored
    key = mem.create_key("hostile", role="admin")[1]
    # bm25 with k=1: the marker is in one memory only, so that memory is the hit.
    for marker, _ in texts:
        COUNTS["payloads tried (stored)"] += 1
        block = mem.render(marker, workspace="hostile", policy="bm25", k=1, mark=False)
        _check(f"{marker}/store", block, "recalled", marker, 2000)
    with (
        serve(asgi(mem)) as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
    ):
        for marker, _ in texts[::3]:
            body = {"query": marker, "policy": "bm25", "k": 1, "mark": False, "max_chars": 2000}
            r = http.post("/v1/render", json=body)
            assert r.status_code == 200, r.text[:300]
            _check(f"{marker}/http", r.json()["block"], "recalled", marker, 2000)

    server = build_server(mem, Binding.of("hostile", None, None, "admin"))

    async def main() -> None:
        async with Client(server) as client:
            for marker, _ in texts[1::3]:
                result = await client.call_tool("recall_memory", {"query": marker, "k": 3})
                COUNTS["outputs checked"] += 1
                raw = result.content[0].text.replace("\n", " ")
                if any("<" in t for _, t in readings(raw)) or marker not in raw:
                    FAILURES.append(f"{marker}/mcp")

    anyio.run(main)
    assert not FAILURES, FAILURES[:10]


def test_zz_record() -> None:
    record(
        "hostile",
        "Hostile content (tests/stress/test_hostile.py)",
        ".venv/bin/pytest tests/stress/test_hostile.py",
        {
            "corpus payloads": len(PAYLOADS),
            "generated variants rendered": COUNTS["payloads tried"],
            "payloads tried through store, recall, HTTP, MCP (both backends)": COUNTS[
                "payloads tried (stored)"
            ],
            "outputs checked": COUNTS["outputs checked"],
            "refused for a NUL, by name": COUNTS["refused for a NUL (by name)"],
            "block-integrity failures": len(FAILURES),
        },
        "Every block read raw, NFKC, NFKD without marks, invisibles stripped and case-folded, "
        "and parsed as HTML: one wrapper at each end, no other markup, no '<' inside, no "
        "invisible or bidi character, the payload's marker inside, within its budget.",
    )
