"""Outage cycles: continuous ingest while the embedding server goes down, slow and
garbage and comes back, over and over, with the background sweeper running; then the
LLM failure modes, many runs each. On both backends.

Sizes: EPISODIC_STRESS_OUTAGE_CYCLES (default 40 mode switches) and
EPISODIC_STRESS_OUTAGE_RUNS (default 10 transcripts per LLM failure mode).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import Counter
from datetime import UTC, datetime

import pytest

from chat_server import running_chat_server
from embed_server import FAILURES, running_embed_server
from episodic import Episodic
from episodic.embed.fake import FakeEmbedder
from episodic.layer import MemoryLayer
from episodic.llm.openai_compat import OpenAICompatLLM
from episodic.recall.engine import MODE_SPARSE_ONLY, MODE_VECTOR
from episodic.store import open_store
from outage_support import (
    CONVERSATION,
    LLM_FAILURES,
    PWN,
    responder_for,
    settings_for,
    stored_text,
    vector_census,
)
from stress.results import record

CYCLES = int(os.environ.get("EPISODIC_STRESS_OUTAGE_CYCLES", "40"))
RUNS = int(os.environ.get("EPISODIC_STRESS_OUTAGE_RUNS", "10"))
COUNTS: Counter[str] = Counter()
MODES_SEEN: set[str] = set()
LLM_MODES_SEEN: set[str] = set()


def test_ingest_through_repeated_embedder_outages(db_url: str) -> None:
    with running_embed_server() as srv:
        settings = settings_for(srv, sweep_interval_s=0.05)
        with Episodic.open(db_url, settings=settings) as mem:
            assert mem.start_indexer()
            stop = threading.Event()
            during = Counter[str]()
            counter = itertools.count()
            errors: list[str] = []

            def writer() -> None:
                while not stop.is_set():
                    i = next(counter)
                    event = {
                        "id": f"w{i}",
                        "workspace": "acme",
                        "type": "peer.escalation",
                        "summary": f"incident {i} in checkout, cache key k{i} evicted",
                        "ts": datetime.now(UTC).isoformat(),
                    }
                    report = mem.ingest([event])
                    if report.admitted != 1:
                        errors.append(f"w{i}: {report.to_json()}")
                    during[srv.mode] += 1
                    time.sleep(0.005)

            thread = threading.Thread(target=writer)
            thread.start()
            modes = list(FAILURES) * (CYCLES // len(FAILURES) + 1)
            try:
                for mode in modes[:CYCLES]:
                    srv.set(mode)
                    MODES_SEEN.add(mode)
                    time.sleep(0.3)
                    result = mem.recall(
                        f"checkout incident cache {mode} {time.time()}", workspace="acme"
                    )
                    COUNTS["recalls during outages"] += 1
                    # Every query is new: its embedding fails, and the recall says so.
                    assert result.mode == MODE_SPARSE_ONLY and result.warnings, mode
                    COUNTS["sparse-only recalls that said why"] += 1
                    srv.set("up")
                    time.sleep(0.2)
            finally:
                stop.set()
                thread.join(30)
            assert not errors, errors[:5]
            outage_events = sum(n for m, n in during.items() if m != "up")
            COUNTS["events ingested during outages"] += outage_events
            COUNTS["events ingested"] += sum(during.values())
            deadline = time.monotonic() + 120
            while mem.stats("acme").pending_vectors and time.monotonic() < deadline:
                time.sleep(0.1)
            assert mem.stats("acme").pending_vectors == 0
            stored, garbage = vector_census(mem)
            assert stored == mem.stats("acme").memories == sum(during.values())
            COUNTS["events indexed after recovery"] += stored
            COUNTS["garbage vectors stored"] += garbage
            assert garbage == 0
            back = mem.recall("checkout incident cache after the storm", workspace="acme")
            assert back.mode == MODE_VECTOR and back.warnings == []


@pytest.mark.parametrize("mode", LLM_FAILURES)
def test_llm_failure_modes_over_many_runs(db_url: str, mode: str) -> None:
    with running_chat_server() as chat:
        chat.responder = responder_for(mode)
        base = chat.base_url if mode != "down" else "http://127.0.0.1:9/v1"
        with OpenAICompatLLM(base_url=base, model="test-model", timeout_s=0.3) as llm:
            mem = Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=64), llm=llm)
            with mem:
                for run in range(RUNS):
                    layer = MemoryLayer(mem, workspace="acme", agent=f"a{run}")
                    layer.on_complete(
                        [{"role": r, "content": f"{t} (run {run})"} for r, t in CONVERSATION],
                        conversation=f"run{run}",
                    )
                    mem.recall(f"migration warmup run {run}", workspace="acme", key_terms=True)
                    COUNTS["LLM-backed runs"] += 1
                [job] = mem.consolidate(workspace="acme")
                assert job.ok
                bad = [t for t in stored_text(mem) if PWN in t.casefold()]
                COUNTS["invalid LLM outputs stored"] += len(bad)
                assert not bad
                COUNTS["LLM requests answered badly"] += len(chat.requests)
    LLM_MODES_SEEN.add(mode)


def test_zz_record() -> None:
    record(
        "outages",
        "Outages (tests/stress/test_outages.py)",
        ".venv/bin/pytest tests/stress/test_outages.py",
        {
            "embedder failure modes exercised": ", ".join(sorted(MODES_SEEN)),
            "mode switches per backend": CYCLES,
            "events ingested (both backends)": COUNTS["events ingested"],
            "events ingested during outages": COUNTS["events ingested during outages"],
            "events indexed after recovery": COUNTS["events indexed after recovery"],
            "vectors with garbage stored": COUNTS["garbage vectors stored"],
            "recalls during outages (all sparse-only, with a warning)": COUNTS[
                "sparse-only recalls that said why"
            ],
            "LLM failure modes": ", ".join(sorted(LLM_MODES_SEEN)),
            "LLM-backed runs (transcripts + key-term recalls)": COUNTS["LLM-backed runs"],
            "LLM requests answered badly": COUNTS["LLM requests answered badly"],
            "invalid LLM outputs stored": COUNTS["invalid LLM outputs stored"],
        },
        "Ingest acknowledged every event during every outage; the sweeper indexed all of "
        "them once the server was back; no vector stored was NaN/inf, zero or of another "
        "dimension. Every LLM step fell back offline; nothing the model said that failed a "
        "check reached a memory's content, keys, title or summary.",
    )
