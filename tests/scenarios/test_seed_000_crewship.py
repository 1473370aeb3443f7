"""Seed 000 (Crewship): a crew's runtime writes its journal day after day, with default
settings, and reads its memory back through the Python API, the CLI, HTTP and MCP.

What the story checks, each at the step where it matters: only signal becomes memory
(escalations, regressions, warn/error decisions; never output chunks or info decisions);
the journal itself stays searchable by keyword, archived rows included; importance
(decayed nightly, raised by the recalls that reference a memory) orders comparable
matches; ``crewship-dense`` is seed 000's pure cosine recall; ``/healthz`` tells the recall
mode as it is now; consolidation fires once on its trigger and rests after, its summary
never outranks its evidence, and it refreshes the health score.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from story import SimClock, cli, http_client, mcp_call

from episodic import Episodic
from episodic.errors import EmbedderUnavailable, NotFound
from episodic.model import ScopeFilter

WS = "crew-ops"
CONSOLIDATED = "memory.consolidated"


def ev(
    clock: SimClock,
    id: str,
    type: str,
    summary: str,
    *,
    severity: str = "info",
    days_ago: float = 0,
    agent: str = "builder",
    **extra: Any,
) -> dict[str, Any]:
    """One journal event as the crew's runtime writes it, stamped on the story's clock."""
    return {
        "id": id,
        "workspace": WS,
        "agent": agent,
        "crew": "ops",
        "type": type,
        "severity": severity,
        "summary": summary,
        "ts": (clock() - timedelta(days=days_ago)).isoformat(),
        **extra,
    }


def top(mem: Episodic, query: str, **kw: Any) -> list[str]:
    return [h.id for h in mem.recall(query, workspace=WS, mark=False, **kw).hits]


def is_memory(mem: Episodic, id: str) -> bool:
    try:
        mem.memory(ScopeFilter(WS), id)
    except NotFound:
        return False
    return True


def journal(mem: Episodic, query: str, **kw: Any) -> dict[str, bool]:
    """The journal search's hits: id -> archived."""
    return {h.id: h.archived for h in mem.search_journal(query, workspace=WS, **kw)}


def test_ten_days_of_a_crews_journal(memory: Episodic, clock: SimClock, db_url: str) -> None:
    mem = memory
    # Day 0: the runtime starts, carrying over a note from an earlier run and old output.
    report = mem.ingest(
        [
            ev(clock, "old-note", "note", "checkout latency spike after the cache deploy",
               days_ago=175, refs={"episodic": True}),
            ev(clock, "old-chunk", "exec.output_chunk", "linker output of the billing build",
               days_ago=120, payload={"text": "ld: undefined reference to zlib_inflate"}),
            ev(clock, "chunk", "exec.output_chunk", "cargo build output for the storefront",
               payload={"text": "error E0599: no method named drain found for Queue"}),
            ev(clock, "reindex", "keeper.decision", "approved the nightly catalog reindex"),
            ev(clock, "schema", "keeper.decision", "denied the schema change on billing",
               severity="warn"),
            ev(clock, "refunds", "peer.escalation",
               "payments agent escalated refunds stuck in the retry queue", agent="payments"),
            ev(clock, "facets", "peer.escalation",
               "search agent escalated stale product facets in the catalog", agent="search"),
        ]
    )  # fmt: skip
    # Selective admission: signal becomes memory; chunks and an info decision do not.
    assert (report.stored, report.admitted) == (7, 4), report.to_json()
    admitted = {i for i in ("old-note", "old-chunk", "chunk", "reindex", "schema", "refunds",
                            "facets") if is_memory(mem, i)}  # fmt: skip
    assert admitted == {"old-note", "schema", "refunds", "facets"}
    mem.index_once()

    # What admission refused is still in the journal, found by its summary and payload.
    assert journal(mem, "E0599") == {"chunk": False}
    assert journal(mem, "storefront cargo") == {"chunk": False}
    assert journal(mem, "reindex", types="keeper.decision") == {"reindex": False}
    assert journal(mem, "reindex", types="exec.output_chunk") == {}

    # The nightly upkeep archives journal rows older than 90 days: still found, and said.
    mem.compact(workspace=WS)
    assert journal(mem, "zlib_inflate linker") == {"old-chunk": True}
    assert is_memory(mem, "old-note")  # archiving moves journal rows, not memories
    with http_client(mem, WS) as api:
        assert api.get("/healthz").json()["episodic"] == "vector"
        found = api.get("/v1/journal", params={"q": "linker zlib_inflate"}).json()["events"]
        assert [(e["id"], e["type"], e["archived"]) for e in found] == [
            ("old-chunk", "exec.output_chunk", True)
        ]
        since = (clock() - timedelta(hours=1)).isoformat()
        found = api.get("/v1/journal", params={"q": "output", "since": since}).json()["events"]
        assert [e["id"] for e in found] == ["chunk"]  # the old chunk is before `since`

    # Days 1-3: the payments agent recalls its refunds escalation every morning.
    for _ in range(3):
        clock.advance(days=1)
        hits = mem.recall("refunds retry queue", workspace=WS, k=1).hits  # marks what it returns
        assert [h.id for h in hits] == ["refunds"]
    # Day 4: nightly decay. Two escalations of the same age and base; the one the crew
    # kept referencing now matters more.
    clock.advance(days=1)
    mem.decay()
    refunds, facets = (mem.memory(ScopeFilter(WS), i) for i in ("refunds", "facets"))
    assert refunds.base_importance == facets.base_importance
    assert refunds.importance > facets.importance

    # Days 5-8: more escalations, one a day.
    for n, what in enumerate(
        [
            "disk full on the ledger replica",
            "kafka consumer lag on orders",
            "oom kill in the pricing worker",
            "expired TLS cert on the cdn",
        ]
    ):
        clock.advance(days=1)
        mem.ingest([ev(clock, f"esc-{n}", "peer.escalation", f"ops agent escalated {what}")])
    # Day 9: a regression says what the old note said, word for word.
    clock.advance(days=1)
    mem.ingest(
        [
            ev(clock, "regression", "eval.regression_detected",
               "checkout latency spike after the cache deploy"),
        ]
    )  # fmt: skip
    mem.index_once()
    mem.decay()
    note, regression = (mem.memory(ScopeFilter(WS), i) for i in ("old-note", "regression"))
    assert note.importance < 0.1 < 0.75 < regression.importance
    query = "checkout latency spike cache"
    assert top(mem, query)[:2] == ["regression", "old-note"]  # importance decides

    # Seed 000's own recall: sorted by cosine x importance, and the score is the cosine.
    dense = mem.recall(query, workspace=WS, policy="crewship-dense", mark=False).hits
    assert dense and all(h.score == h.cosine for h in dense)
    weighted = [(h.cosine or 0.0) * h.memory.importance for h in dense]
    assert weighted == sorted(weighted, reverse=True)
    assert dense[0].id == "regression"

    # Through MCP the agent gets the same best memory; k=0 recalls 5 and says so.
    via_mcp = mcp_call(mem, "recall_memory", {"query": query}, workspace=WS)
    assert via_mcp["memories"][0]["id"] == "regression"
    zero = mem.recall("agent escalated", workspace=WS, k=0, mark=False)
    assert len(zero.hits) == 5
    assert zero.warnings == ["k=0 is outside 1..50: recalled 5 instead"]

    # A script reads the journal through the CLI, archived rows included.
    rows = json.loads(cli(db_url, "journal", "zlib_inflate", "--workspace", WS, "--json").stdout)
    assert [(r["id"], r["archived"]) for r in rows] == [("old-chunk", True)]
    rows = json.loads(cli(db_url, "journal", "E0599", "-w", WS, "-k", "5", "--json").stdout)
    assert [(r["id"], r["type"], r["severity"]) for r in rows] == [
        ("chunk", "exec.output_chunk", "info")
    ]


def test_healthz_follows_an_embedder_outage_and_the_journal_stays_searchable(
    memory: Episodic, clock: SimClock, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.INFO, logger="episodic")
    mem = memory
    mem.ingest(
        [
            ev(clock, "deploy", "peer.escalation", "deploy of the checkout service failed"),
            ev(clock, "chunk", "exec.output_chunk", "helm upgrade output",
               payload={"text": "Error: UPGRADE FAILED: timed out waiting for the condition"}),
        ]
    )  # fmt: skip
    mem.index_once()
    model = mem.embedder
    assert model is not None
    with http_client(mem, WS) as api:
        assert api.get("/healthz").json()["episodic"] == "vector"

        # Day 1: the embedding model starts failing.
        clock.advance(days=1)

        def down(texts: object) -> object:
            raise EmbedderUnavailable("the embedding model cannot be loaded")

        monkeypatch.setattr(model, "embed_batch", down)
        for query in ("checkout deploy failed", "deploy of checkout", "checkout failure"):
            result = mem.recall(query, workspace=WS, mark=False)
            assert [h.id for h in result.hits] == ["deploy"]  # keyword recall still answers
            assert any("sparse-only" in w for w in result.warnings)
        assert api.get("/healthz").json()["episodic"] == "sparse-only"
        mem.ingest([ev(clock, "late", "peer.escalation", "rollback of checkout done")])
        mem.index_once()  # a sweep that fails: nothing logged again
        # The journal search needs no model.
        events = api.get("/v1/journal", params={"q": "UPGRADE timed out"}).json()["events"]
        assert [e["id"] for e in events] == ["chunk"]
        sparse = [r for r in caplog.records if "sparse-only" in r.getMessage()
                  and r.levelno == logging.WARNING]  # fmt: skip
        assert len(sparse) == 1  # one warning for the change, not one per call

        # Day 2: the model is back; the next recall uses vectors and /healthz says so.
        clock.advance(days=1)
        monkeypatch.undo()
        assert mem.recall("checkout rollback", workspace=WS, mark=False).warnings == []
        assert api.get("/healthz").json()["episodic"] == "vector"
        mem.index_once()
        assert mem.stats(WS).pending_vectors == 0
    back = [r for r in caplog.records if "answers again" in r.getMessage()]
    assert len(back) == 1


# Incidents the crew meets over the days, none of them alike to the OOM reports.
SERVICES = ["ledger", "orders", "pricing", "search", "cdn", "auth", "mailer", "reports",
            "billing", "inventory"]  # fmt: skip
PROBLEMS = ["disk filled up on the primary", "consumer lag passed ten minutes",
            "TLS certificate expired", "error rate doubled after the deploy",
            "cron job did not run overnight"]  # fmt: skip
OOM = [
    "checkout-api pods were OOM killed after the cart cache size change",
    "checkout-api ran out of memory after the cart cache change",
    "the cart cache change made checkout pods run out of memory",
]


def test_consolidation_fires_once_keeps_evidence_first_and_refreshes_health(
    memory: Episodic, clock: SimClock
) -> None:
    mem = memory
    incidents = [f"{s}: {p}" for p in PROBLEMS for s in SERVICES] + OOM  # 53 memories
    # Ten days, about five escalations a day; the scheduler checks after every day.
    for day in range(10):
        batch = incidents[day * 5 : (day + 1) * 5] if day < 9 else incidents[45:]
        mem.ingest([ev(clock, f"inc-{day}-{n}", "peer.escalation", text, agent=f"a{n}")
                    for n, text in enumerate(batch)])  # fmt: skip
        mem.index_once()
        due = mem.consolidate_if_due()
        if day < 9:  # under the default backlog of 50: nothing to do yet
            assert due == [], (day, [r.detail for r in due])
            clock.advance(days=1)
    (run,) = due
    assert run.ok and run.detail["trigger"] == "threshold", run.detail
    assert run.detail["clusters"] >= 1
    # Nothing new: the next checks rest, that night and the day after.
    assert mem.consolidate_if_due() == []
    clock.advance(days=1)
    assert mem.consolidate_if_due() == []

    # The summary of the OOM reports is found, never above the reports themselves.
    result = mem.recall("checkout pods out of memory after the cart cache change",
                        workspace=WS, k=10, mark=False)  # fmt: skip
    order = [h.id for h in result.hits]
    summaries = [h for h in result.hits if h.memory.type == CONSOLIDATED]
    assert summaries, order
    for summary in summaries:
        evidence = [i for i in summary.memory.payload["evidence_ids"] if i in order]
        assert evidence and order.index(summary.id) > max(order.index(i) for i in evidence)

    # Consolidating refreshes the health score; the next night's run refreshes it again.
    assert run.detail["health"]["status"] == "ok"
    clock.advance(days=1)
    (nightly,) = mem.consolidate(workspace=WS)
    view = mem.memory_health(WS)
    assert view is not None and view.snapshot_date == clock().date().isoformat()
    assert nightly.detail["health"]["score"] == view.score and len(view.history) == 1
