"""Seed 000 (Crewship): a crew's runtime writes its journal day after day, with default
settings, and reads its memory back through the Python API, the CLI, HTTP and MCP.

What the story checks, each at the step where it matters: only signal becomes memory
(escalations, regressions, warn/error decisions; never output chunks or info decisions);
the journal itself stays searchable by keyword, archived rows included; importance
(decayed nightly, raised by the recalls that reference a memory) orders comparable
matches; ``crewship-dense`` is seed 000's pure cosine recall; ``/healthz`` tells the recall
mode as it is now; consolidation fires once on its trigger and rests after, its summary
never outranks its evidence, and it refreshes the health score. And: a render budget too
small for one memory shows the first cut and counts only it; importance orders two equal
matches but never buries a clearly better one, with or without an embedder; every
interface refuses bad arguments naming the field, and a batch keeps its good items; MCP
names who it serves; one memory is embedded on demand; doctor names the embedder the
stored vectors came from.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import timedelta
from typing import Any

import anyio
import pytest
from story import SimClock, cli, http_client, mcp_call
from typer.testing import CliRunner

from embed_server import MODEL as OLLAMA_MODEL
from embed_server import running_embed_server
from episodic import Episodic, Settings
from episodic.cli import app
from episodic.client import AsyncClient, Client
from episodic.errors import EmbedderUnavailable, InvalidInput, NotFound
from episodic.layer import MemoryLayer
from episodic.mcp import Binding
from episodic.model import Role, ScopeFilter
from episodic.service.models import MODE_FRESH_S
from outage_support import settings_for

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

        # Day 3: down again, then back with no recall in between: /healthz says the mode
        # the next recall would use, not the one the last recall saw.
        clock.advance(days=1)
        monkeypatch.setattr(model, "embed_batch", down)
        assert mem.recall("checkout deploy", workspace=WS, mark=False).mode == "sparse-only"
        assert api.get("/healthz").json()["episodic"] == "sparse-only"
        monkeypatch.undo()
        time.sleep(MODE_FRESH_S + 0.1)
        assert api.get("/healthz").json()["episodic"] == "vector"
    # Each change logged once, the recovery at the default level as well.
    back = [r for r in caplog.records if "answers again" in r.getMessage()]
    assert len(back) == 2 and all(r.levelno == logging.WARNING for r in back)


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


def refs(mem: Episodic, *ids: str) -> dict[str, int]:
    """Reference counts, once the marks a server batches are written."""
    mem.flush_marks()
    return {i: mem.memory(ScopeFilter(WS), i).reference_count for i in ids}


def test_a_small_render_budget_shows_one_memory_cut_and_counts_only_it(
    memory: Episodic, clock: SimClock, db_url: str
) -> None:
    mem = memory
    mem.ingest(
        [
            ev(clock, "oom-1", "peer.escalation",
               "checkout-api pods were OOM killed after the cart cache size change; the "
               "payments and search pods on the same nodes were evicted with them"),
            ev(clock, "oom-2", "peer.escalation",
               "the checkout workers ran out of memory during the flash sale"),
        ]
    )  # fmt: skip
    mem.index_once()
    query = "OOM in checkout"
    # Python: a budget smaller than the block's frame still shows the best memory, cut,
    # says so, and counts a reference only for what the block holds.
    block, result = mem.render_explained(query, workspace=WS, k=2, max_chars=100)
    (shown,) = result.hits
    other = ({"oom-1", "oom-2"} - {shown.id}).pop()
    assert block.startswith("<recalled-memory>") and "…" in block
    assert shown.memory.content[:20] in block
    assert any("max_chars=100 is less than" in w for w in result.warnings), result.warnings
    assert refs(mem, shown.id, other) == {shown.id: 1, other: 0}

    # HTTP and the Python client: the same block, hit_ids naming only what it holds.
    with http_client(mem, WS) as api:
        body = api.post("/v1/render", json={"query": query, "k": 2, "max_chars": 100}).json()
        assert body["block"] == block and body["hit_ids"] == [shown.id]
        assert any("max_chars=100 is less than" in w for w in body["warnings"])
        assert refs(mem, shown.id, other) == {shown.id: 2, other: 0}
        key = api.headers["authorization"].removeprefix("Bearer ")
        with Client(str(api.base_url), key) as client:
            assert client.render(query, k=2, max_chars=100) == block
        assert refs(mem, shown.id, other) == {shown.id: 3, other: 0}
        # A budget that holds both counts both.
        body = api.post("/v1/render", json={"query": query, "k": 2}).json()
        assert sorted(body["hit_ids"]) == ["oom-1", "oom-2"] and body["warnings"] == []
        assert refs(mem, shown.id, other) == {shown.id: 4, other: 1}

    # The CLI: the block on stdout, the warning on stderr.
    out = cli(db_url, "render", query, "-w", WS, "-k", "2", "--max-chars", "100")
    assert out.stdout.startswith("<recalled-memory>") and "…" in out.stdout
    assert "max_chars=100 is less than" in out.stderr
    assert refs(mem, shown.id, other) == {shown.id: 5, other: 1}

    # The layer's auto-inject: only the entry its block holds is counted.
    for n, text in enumerate(
        [
            "checkout OOM: raise the cart cache pod memory limit to 2Gi",
            "checkout OOM: the cart cache change doubled per-pod memory",
        ]
    ):
        mem.remember(text, workspace=WS, type="entry", id=f"entry-{n}")  # fmt: skip
    layer = MemoryLayer(mem, workspace=WS)
    injected = layer.auto_inject("checkout OOM cart cache", max_chars=100)
    assert injected.startswith("<memory>") and injected.count("\n- ") == 1
    counted = refs(mem, "entry-0", "entry-1")
    assert sorted(counted.values()) == [0, 1], counted


# Held out (written for this test, not taken from any benchmark): an error-level
# regression and a fresher info note say the same thing.
KESTREL_REGRESSION = (
    "Regression: the kestrel cache warmup job delays the nightly reports by 40 minutes."
)
KESTREL_NOTE = "Note: the kestrel cache warmup job delays the nightly reports."
KESTREL_QUERY = "kestrel cache warmup delays nightly reports"


def test_importance_decides_between_equal_matches_and_never_buries_a_better_one(
    memory: Episodic, clock: SimClock
) -> None:
    mem = memory
    mem.ingest(
        [
            ev(clock, "kestrel-regression", "eval.regression_detected", KESTREL_REGRESSION,
               severity="error", days_ago=25),
            ev(clock, "kestrel-note", "note", KESTREL_NOTE, days_ago=2,
               refs={"episodic": True}),
        ]
    )  # fmt: skip
    mem.index_once()
    mem.decay()
    note, regression = (
        mem.memory(ScopeFilter(WS), i) for i in ("kestrel-note", "kestrel-regression")
    )
    assert regression.importance > note.importance
    # Alone in the workspace, the two match about equally (the note's BM25 is a few
    # percent higher, being shorter): importance decides.
    assert top(mem, KESTREL_QUERY) == ["kestrel-regression", "kestrel-note"]
    mem.ingest(
        [
            # Important, but about something else than the question.
            ev(clock, "ledger-regression", "eval.regression_detected",
               "Regression: the ledger export fails when the nightly job restarts",
               severity="error", days_ago=3),
        ]
    )  # fmt: skip
    mem.index_once()
    # The two kestrel memories match about equally: importance puts the regression first;
    # the ledger regression, more important than the note but a clearly worse match,
    # stays below it.
    expected = ["kestrel-regression", "kestrel-note", "ledger-regression"]
    assert top(mem, KESTREL_QUERY)[:3] == expected
    via_mcp = mcp_call(mem, "recall_memory", {"query": KESTREL_QUERY}, workspace=WS)
    assert [m["id"] for m in via_mcp["memories"]][:3] == expected
    with http_client(mem, WS) as api:
        hits = api.post("/v1/recall", json={"query": KESTREL_QUERY, "mark": False}).json()
        assert [h["id"] for h in hits["hits"]][:3] == expected


def test_keyword_only_recall_lets_importance_order_close_matches(
    db_url: str, clock: SimClock, default_env: None
) -> None:
    # Seed 001's floor example under EPISODIC_EMBEDDER=none: the weaker BM25 match keeps
    # its share, so an entry of importance 0.9 is not ranked below one of 0.2.
    with Episodic.open(db_url, settings=Settings(embedder="none"), clock=clock) as mem:
        mem.remember("deploy script: always pass the staging flag", workspace=WS,
                     importance=0.2, id="low")  # fmt: skip
        mem.remember("the deploy script needs the staging flag before the migration step",
                     workspace=WS, importance=0.9, id="high")  # fmt: skip
        for policy in ("default", "teaparty"):
            result = mem.recall("deploy script staging flag", workspace=WS, policy=policy,
                                mark=False)  # fmt: skip
            assert result.mode == "sparse-only"
            assert [h.id for h in result.hits] == ["high", "low"], policy
            assert result.hits[1].score > 0


def test_the_python_api_checks_recall_arguments_as_http_does(memory: Episodic) -> None:
    mem = memory
    # The Python API refuses what HTTP refuses, naming the field.
    bad: list[tuple[str, dict[str, Any]]] = [
        ("query", {"query": None}),
        ("query", {"query": 123}),
        ("walk", {"query": "x", "walk": 2}),
        ("walk", {"query": "x", "walk": -1}),
        ("mark", {"query": "x", "mark": "no"}),
    ]
    for field, args in bad:
        with pytest.raises(InvalidInput) as info:
            mem.recall(args.pop("query"), workspace=WS, **args)
        assert info.value.field == field, args
    with pytest.raises(InvalidInput) as info:
        mem.render("x", workspace=WS, max_chars="100")  # type: ignore[arg-type]
    assert info.value.field == "max_chars"
    with http_client(mem, WS) as api:
        r = api.post("/v1/recall", json={"query": "x", "walk": 2})
        assert r.status_code == 422 and "walk" in r.text


def test_an_empty_escalation_is_refused_and_a_batch_keeps_its_good_items(
    memory: Episodic, clock: SimClock
) -> None:
    mem = memory
    # An escalation with nothing in it is refused, naming summary; the rest is stored.
    report = mem.ingest(
        [ev(clock, "empty", "peer.escalation", ""), ev(clock, "full", "peer.escalation", "x")]
    )
    assert report.stored == 1 and [(e.line, e.field) for e in report.errors] == [(1, "summary")]
    assert not is_memory(mem, "empty")

    with http_client(mem, WS) as api:
        # One item naming another workspace is reported on its own; the rest is stored.
        batch = [
            ev(clock, "mine", "peer.escalation", "refunds stuck again"),
            {**ev(clock, "theirs", "peer.escalation", "not ours"), "workspace": "other-ws"},
            ev(clock, "blank", "peer.escalation", "  "),
        ]
        r = api.post("/v1/events", json={"events": batch})
        assert r.status_code == 200, r.text
        body = r.json()
        assert (body["received"], body["stored"]) == (3, 1)
        assert [(e["index"], e["field"]) for e in body["errors"]] == [
            (1, "workspace"),
            (2, "summary"),
        ]
        assert is_memory(mem, "mine")


def test_mcp_without_an_agent_needs_the_wider_role_said(memory: Episodic, db_url: str) -> None:
    with pytest.raises(InvalidInput) as info:
        Binding.of(WS, None, None, None)
    assert info.value.field == "agent" and "--role admin" in info.value.message
    result = CliRunner().invoke(app, ["--db", db_url, "mcp", "--workspace", WS])
    assert result.exit_code != 0 and "--role admin" in result.output
    # Said explicitly, it serves the whole workspace; named, the agent's own memories.
    assert Binding.of(WS, None, None, "admin").role is Role.ADMIN
    assert Binding.of(WS, None, "ops", "lead").role is Role.LEAD
    assert Binding.of(WS, "builder", None, None).role is Role.AGENT


def test_one_memory_is_indexed_on_demand_through_every_interface(
    memory: Episodic, clock: SimClock, db_url: str
) -> None:
    mem = memory
    mem.ingest(
        [ev(clock, f"hot-{n}", "peer.escalation", f"hot path escalation number {n}")
         for n in range(4)]
    )  # fmt: skip
    assert mem.stats(WS).pending_vectors == 4
    done = mem.index_one_in(ScopeFilter(WS), "hot-0")
    assert done and done.indexed and mem.stats(WS).pending_vectors == 3
    with http_client(mem, WS) as api:
        r = api.post("/v1/memories/hot-1/index")
        assert r.status_code == 200 and r.json()["indexed"] is True, r.text
        assert api.post("/v1/memories/nope/index").status_code == 404
        key = api.headers["authorization"].removeprefix("Bearer ")
        with Client(str(api.base_url), key) as client:
            assert client.index_one("hot-2").indexed

        async def via_async() -> bool:
            async with AsyncClient(str(api.base_url), key) as aclient:
                return (await aclient.index_one("hot-3")).indexed

        assert anyio.run(via_async)
    assert mem.stats(WS).pending_vectors == 0
    mem.ingest([ev(clock, "hot-cli", "peer.escalation", "escalated from the command line")])
    shown = json.loads(cli(db_url, "index", "--id", "hot-cli", "-w", WS, "--json").stdout)
    assert shown["indexed"] is True and mem.stats(WS).pending_vectors == 0
    # Without an embedder it is not done, and the command says why instead of exiting 0.
    mem.ingest([ev(clock, "hot-sparse", "peer.escalation", "escalated while sparse-only")])
    args = ["--db", db_url, "index", "--id", "hot-sparse", "-w", WS]
    refused = CliRunner().invoke(app, args, env={"EPISODIC_EMBEDDER": "none"})
    assert refused.exit_code == 1 and "sparse-only" in refused.stderr, refused.output


def test_doctor_names_the_embedder_the_stored_vectors_came_from(
    db_url: str, clock: SimClock, default_env: None
) -> None:
    with running_embed_server() as srv:
        settings = settings_for(srv)
        with Episodic.open(db_url, settings=settings, clock=clock) as mem:
            mem.ingest([ev(clock, "made-by-ollama", "peer.escalation", "disk full on ledger")])
            assert mem.index_once().embedded == 1
            srv.set("down")
            (check,) = [c for c in mem.doctor().checks if c.name == "embedder"]
    assert check.status == "warn"
    assert f"ollama/{OLLAMA_MODEL}" in check.fix and "EPISODIC_EMBEDDER=ollama" in check.fix
    assert "EPISODIC_EMBEDDER=local" not in check.fix
