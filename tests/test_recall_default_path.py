"""What the seeds promise about recall holds on the default path: importance shapes the
ranking (as a bounded prior), who asks weighs what is near them without hiding the rest,
an out-of-range k is answered the same way on every interface, surprising episodes say
so, and a summary never displaces its evidence. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from mcp import Client
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.base import Matrix
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.mcp import Binding, build_server
from episodic.model import Event, Memory
from episodic.recall.details import AUTO_DETAIL_RANK
from episodic.scoring.prior import IMPORTANCE_PRIOR_WEIGHT
from episodic.store import open_store
from servers import serve

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(
        store=open_store(db_url), embedder=FakeEmbedder(dim=1024), clock=lambda: NOW, llm=None
    )
    yield m
    m.close()


def event(
    i: str,
    summary: str,
    *,
    days: float = 1,
    type: str = "peer.escalation",
    severity: str = "info",
    agent: str | None = None,
    crew: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": i,
        "workspace": "w",
        "agent": agent,
        "crew": crew,
        "type": type,
        "severity": severity,
        "summary": summary,
        "ts": (NOW - timedelta(days=days)).isoformat(),
        **extra,
    }


def ingest(m: Episodic, *events: dict[str, Any]) -> None:
    report = m.ingest(list(events))
    assert report.admitted == len(events), report.to_json()
    m.index_once()


def ids(m: Episodic, query: str, **kw: Any) -> list[str]:
    return [h.id for h in m.recall(query, workspace="w", mark=False, **kw).hits]


# -- importance -----------------------------------------------------------------------
def test_importance_orders_comparable_matches_in_the_default_ranking(mem: Episodic) -> None:
    # A routine note, 179 days old (decay leaves it 0.05 of importance), and a fresh
    # regression say the same, the note in fewer words: by text alone it ranks first.
    ingest(
        mem,
        event(
            "note", "checkout latency spike after the cache deploy", days=179,
            type="note", refs={"episodic": True},
        ),
        event(
            "regression", "checkout latency spike after the cache deploy, regression detected",
            type="eval.regression_detected",
        ),
        event("f1", "checkout page redesign shipped"),
        event("f2", "latency dashboards moved to grafana"),
        event("f3", "cache warmup job tuned"),
    )  # fmt: skip
    mem.decay()
    note, regression = mem.store.get_memories("w", ["note", "regression"])
    assert note.importance < 0.1 and regression.importance > 0.75
    query = "checkout latency spike cache"
    assert ids(mem, query, policy="bm25")[0] == "note"  # the words alone prefer the note
    assert ids(mem, query)[:2] == ["regression", "note"]  # importance decides between them


def test_importance_cannot_bury_a_clearly_better_match(mem: Episodic) -> None:
    ingest(
        mem,
        event(
            "exact", "payment gateway timeout in eu-west during the nightly refund batch",
            days=179, type="note", refs={"episodic": True},
        ),
        event("vague", "payment incident", type="eval.regression_detected"),
        *[event(f"f{i}", f"{w} on the orders service") for i, w in enumerate(
            ["kafka lag", "disk full", "oom kill", "slow query", "bad deploy"])],
    )  # fmt: skip
    mem.decay()
    assert ids(mem, "payment gateway timeout nightly refund batch")[0] == "exact"
    # The prior's bound: the least important memory keeps 1 - w of its score.
    hits = mem.recall("payment gateway timeout", workspace="w", mark=False, explain=True)
    trace = hits.trace
    assert trace is not None
    rerank = next(v for name, v in trace.to_json()["stages"].items() if name.startswith("rerank"))
    priors = {row["id"]: row["detail"]["importance_prior"] for row in rerank if row["detail"]}
    assert min(priors.values()) >= 1 - IMPORTANCE_PRIOR_WEIGHT - 1e-9


class Table:
    """An embedder with fixed vectors, so cosines are known exactly."""

    model_id = "test/table"
    dim = 4

    def __init__(self, vectors: Mapping[str, Sequence[float]]) -> None:
        self.vectors = {t: np.asarray(v, np.float32) for t, v in vectors.items()}

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        rows = [self.vectors.get(t, np.array([0, 0, 0, 1.0], np.float32)) for t in texts]
        return np.stack([r / np.linalg.norm(r) for r in rows]).astype(np.float32)


def test_seed_000_pure_dense_recall_sorts_by_cosine_x_importance_and_scores_the_cosine(
    db_url: str,
) -> None:
    table = Table(
        {
            "close but routine": [1.0, 0.2, 0, 0],  # cosine 0.981 to the query
            "farther but critical": [1.0, 0.6, 0, 0],  # cosine 0.857
            "query": [1.0, 0, 0, 0],
        }
    )
    with Episodic(store=open_store(db_url), embedder=table, clock=lambda: NOW, llm=None) as m:
        ingest(
            m,
            event("routine", "close but routine", type="note", refs={"episodic": True}),
            event("critical", "farther but critical", severity="error"),
        )
        routine, critical = m.store.get_memories("w", ["routine", "critical"])
        assert routine.importance * 0.981 < critical.importance * 0.857
        result = m.recall("query", workspace="w", policy="crewship-dense", mark=False)
        assert [h.id for h in result.hits] == ["critical", "routine"]
        assert [round(h.score, 3) for h in result.hits] == [0.857, 0.981]
        assert all(h.score == h.cosine for h in result.hits)


# -- who asks is not what may be seen ------------------------------------------------------
def seed_levels(m: Episodic) -> None:
    ingest(
        m,
        event("team", "build cache warmed slowly", agent="a2", crew="c1"),
        event("project", "build cache warmed slowly", agent="a3", crew="c2"),
        event("global", "build cache warmed slowly"),
    )


def test_an_agent_asking_sees_its_team_project_and_workspace_weighted_by_level(
    mem: Episodic,
) -> None:
    seed_levels(mem)
    result = mem.recall(
        "build cache", workspace="w", agent="a1", crew="c1", mark=False, explain=True
    )
    assert [h.id for h in result.hits] == ["team", "project", "global"]
    assert result.trace is not None
    rerank = next(v for n, v in result.trace.to_json()["stages"].items() if n.startswith("rerank"))
    assert {r["id"]: r["detail"]["scope_level"] for r in rerank} == {
        "team": 1.5,
        "project": 1.2,
        "global": 1.0,
    }


def test_a_scope_still_limits_what_is_seen(mem: Episodic) -> None:
    seed_levels(mem)
    assert ids(mem, "build cache", agent="a2", scope="own") == ["team"]
    assert ids(mem, "build cache", agent="a9", crew="c1", scope="crew_shared") == ["team"]


def test_institutional_memories_render_whoever_asks(mem: Episodic) -> None:
    mem.remember("Never deploy on Fridays.", workspace="w", type="institutional")
    ingest(mem, event("e1", "deploy of the checkout service failed", agent="a1", crew="c1"))
    for asker in ({}, {"agent": "a1"}, {"agent": "a1", "crew": "c1"}, {"crew": "c9"}):
        block = mem.render("deploy checkout", workspace="w", mark=False, **asker)
        assert "Never deploy on Fridays." in block, asker
    own = mem.render("deploy checkout", workspace="w", agent="a1", scope="own", mark=False)
    assert "Never deploy on Fridays." in own  # workspace-wide standing knowledge


# -- k outside 1..50 ---------------------------------------------------------------------
def many(m: Episodic) -> None:
    ingest(m, *[event(f"m{i}", f"queue backlog alert number {i}") for i in range(8)])


@pytest.mark.parametrize("k", [0, -3, 51, 10**6])
def test_k_out_of_range_recalls_five_with_a_warning(mem: Episodic, k: int) -> None:
    many(mem)
    result = mem.recall("queue backlog alert", workspace="w", k=k, mark=False)
    assert len(result.hits) == 5
    assert f"k={k} is outside 1..50: recalled 5 instead" in result.warnings
    assert mem.recall("queue backlog alert", workspace="w", k=7, mark=False).warnings == []


def test_k_out_of_range_is_the_same_on_the_cli_http_and_mcp(db_url: str) -> None:
    with Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=256), llm=None) as m:
        many(m)
        key = m.create_key("w", role="admin")[1]
        with serve(asgi(m)) as base:
            r = httpx.post(
                f"{base}/v1/recall",
                json={"query": "queue backlog alert", "k": 0, "mark": False},
                headers={"authorization": f"Bearer {key}"},
            )
        assert r.status_code == 200, r.text
        assert len(r.json()["hits"]) == 5
        assert r.json()["warnings"] == ["k=0 is outside 1..50: recalled 5 instead"]

        server = build_server(m, Binding.of("w", None, None, "admin"))

        async def main() -> dict[str, Any]:
            with serve(server.streamable_http_app()) as mcp_base:
                async with Client(f"{mcp_base}/mcp") as client:
                    out = await client.call_tool(
                        "recall_memory", {"query": "queue backlog alert", "k": 99}
                    )
                    assert not out.is_error, out.content
                    return dict(out.structured_content or json.loads(out.content[0].text))

        found = anyio.run(main)
        assert len(found["memories"]) == 5
        assert found["warnings"] == ["k=99 is outside 1..50: recalled 5 instead"]
    if db_url.startswith("sqlite"):
        cli = CliRunner().invoke(
            app,
            ["--db", db_url, "recall", "queue backlog alert", "-w", "w", "-k", "0", "--json"],
            env={"EPISODIC_EMBEDDER": "none"},
        )
        assert cli.exit_code == 0, cli.output
        assert "k=0 is outside 1..50: recalled 5 instead" in cli.stderr
        assert len(json.loads(cli.stdout)) == 5


# -- seed 003: key moments and their details ----------------------------------------------
def episode(
    m: Episodic, i: str, title: str, *, surprise: float, days: float, lines: Sequence[str]
) -> None:
    """An episode as segmentation stores it, with its messages."""
    ts = NOW - timedelta(days=days)
    msgs = [
        Event(
            f"{i}-msg{n}", "w", ts + timedelta(minutes=n), "message", summary=text,
            payload={"role": "user" if n % 2 == 0 else "assistant"}, conversation=f"c-{i}",
        )
        for n, text in enumerate(lines)
    ]  # fmt: skip
    m.store.append(msgs, [])
    m.store.close_episode(
        Memory(
            i, "w", ts, "episode", f"{title}: {' '.join(lines)}", conversation=f"c-{i}",
            payload={"title": title, "surprise": surprise, "key_moment": surprise >= 0.7,
                     "flashbulb": surprise >= 0.85},
            source_event_ids=tuple(e.id for e in msgs),
        ),
        [e.id for e in msgs], [], {},
    )  # fmt: skip


def test_key_moments_are_labelled_and_the_top_two_bring_their_messages(mem: Episodic) -> None:
    episode(
        mem,
        "flash",
        "migration wiped the staging replica",
        surprise=0.9,
        days=3,
        lines=["the staging replica is gone", "the migration dropped it, restoring now"],
    )
    episode(
        mem,
        "key",
        "staging replica restored from backup",
        surprise=0.75,
        days=2,
        lines=["staging replica restore done", "backup was 2 hours old"],
    )
    episode(mem, "calm", "staging replica weekly check", surprise=0.1, days=1,
            lines=["weekly staging replica check", "all fine"])  # fmt: skip
    mem.index_once()
    result = mem.recall("staging replica", workspace="w", types="episode", mark=False)
    by_id = {h.id: h for h in result.hits}
    assert (by_id["flash"].moment, by_id["key"].moment, by_id["calm"].moment) == (
        "flashbulb",
        "key moment",
        None,
    )
    top = [h for h in result.hits[:AUTO_DETAIL_RANK]]
    for h in result.hits:
        shown = h.to_json()
        assert shown["moment"] == h.moment
        if h in top and h.moment:
            assert [d["content"] for d in shown["details"]] == [e.summary for e in h.details]
            assert h.details and h.details[0].id == f"{h.id}-msg0"
        else:
            assert shown["details"] == []
    none = mem.recall("staging replica", workspace="w", types="episode", detail="none", mark=False)
    assert all(h.details == () for h in none.hits)
    full = mem.recall("staging replica", workspace="w", types="episode", detail="full", mark=False)
    assert all(len(h.details) == 2 for h in full.hits)

    block = mem.render("staging replica", workspace="w", types="episode", mark=False)
    assert "[episode · flashbulb ·" in block and "[episode · key moment ·" in block
    detailed = [h for h in result.hits[:AUTO_DETAIL_RANK] if h.moment]
    assert detailed  # the test's episodes put a key moment in the top two
    for h in result.hits:
        first = f"  > user: {mem.store.get_events('w', [f'{h.id}-msg0'])[0].summary}"
        assert (first in block) == (h in detailed), h.id


def test_an_unknown_detail_level_names_the_field(mem: Episodic) -> None:
    from episodic.errors import InvalidInput

    with pytest.raises(InvalidInput) as info:
        mem.recall("anything", workspace="w", detail="everything")
    assert info.value.field == "detail"


# -- seed 003: reviews run when segmentation does ------------------------------------------
def test_segmentation_runs_the_review_job(db_url: str) -> None:
    now = [NOW]
    settings = Settings(review_recalls=True)
    with Episodic(
        store=open_store(db_url), embedder=FakeEmbedder(dim=256), settings=settings,
        clock=lambda: now[0], llm=None,
    ) as m:  # fmt: skip
        ingest(m, event("fix", "refund job double charged: fixed by an idempotency key"))
        m.add_message("why were refunds charged twice?", workspace="w", conversation="k", ts=NOW)
        now[0] = NOW + timedelta(minutes=1)
        hits = m.recall("refunds charged twice", workspace="w", review_conversation="k").hits
        assert "fix" in [h.id for h in hits]
        m.add_message(
            "The refund job double charged; the idempotency key fix stopped it.",
            workspace="w", conversation="k", role="assistant", ts=NOW + timedelta(minutes=2),
        )  # fmt: skip
        now[0] = NOW + timedelta(minutes=3)
        assert m.store.get_memory("w", "fix").last_reviewed_at is None
        report = m.segment(flush=True, workspace="w", conversation="k")
        assert report.episodes >= 1
        assert m.store.get_memory("w", "fix").last_reviewed_at == now[0]


# -- a summary never displaces its evidence ------------------------------------------------
def test_a_consolidated_rule_never_outranks_its_evidence(mem: Episodic) -> None:
    ingest(
        mem,
        event("e1", "refund retries double charged a customer", agent="a1"),
        event("e2", "refund retry without an idempotency key charged twice", agent="a2"),
        *[event(f"f{i}", f"{w} on the orders service") for i, w in enumerate(
            ["kafka lag", "disk full", "oom kill", "slow query", "bad deploy"])],
    )  # fmt: skip
    rule = Memory(
        "rule", "w", NOW, "memory.consolidated",
        "Refund retries without an idempotency key double charge: refund retries must carry "
        "an idempotency key.",
        payload={"kind": "rule", "evidence": ["e1", "e2"], "consolidated_by": "test"},
        base_importance=0.7, importance=0.7,
    )  # fmt: skip
    mem.store.append([], [rule])
    mem.index_once()
    for policy in ("default", "crewship", "bm25", "n8n"):
        result = mem.recall("refund retries idempotency key double charge", workspace="w",
                            policy=policy, mark=False)  # fmt: skip
        order = [h.id for h in result.hits]
        assert "rule" in order and {"e1", "e2"} <= set(order), (policy, order)
        assert order.index("rule") > max(order.index("e1"), order.index("e2")), (policy, order)
        scores = {h.id: h.score for h in result.hits}
        assert scores["rule"] <= min(scores["e1"], scores["e2"]), (policy, scores)


def test_an_entry_takes_the_slot_of_a_learning_or_message_from_its_source(mem: Episodic) -> None:
    # A user's sentence stored as a message, an entry quoting it and a learning made from
    # it: one slot, and the entry holds it (it carries the evidence), even when the
    # learning's importance ranks it first.
    text = "The replacement should go to my office at Torstrasse 12 in Berlin."
    msg = Event(
        "m1", "w", NOW - timedelta(hours=1), "message", summary=text,
        payload={"role": "user"}, conversation="c1",
    )  # fmt: skip
    mem.store.append([msg], [])
    made = [
        Memory(
            mid,
            "w",
            NOW,
            kind,
            text,
            source_event_ids=("m1",),
            conversation="c1",
            payload=payload,
            base_importance=importance,
            importance=importance,
        )
        for mid, kind, importance, payload in [
            ("lrn", "learning", 0.9, {"kind": "declarative"}),
            ("ent", "entry", 0.5, {"source": "user_assertion", "evidence": text}),
        ]
    ]
    mem.store.append([], made)
    ingest(mem, *[event(f"f{i}", f"{w} on the orders service") for i, w in enumerate(
        ["kafka lag", "disk full", "oom kill"])])  # fmt: skip
    for policy in ("default", "n8n", "bm25"):
        result = mem.recall("office address for the replacement", workspace="w",
                            policy=policy, mark=False, explain=True)  # fmt: skip
        order = [h.id for h in result.hits]
        assert "ent" in order and "lrn" not in order, (policy, order)
        assert result.trace is not None
        assert "lrn" in {d.memory_id for d in result.trace.dropped}, policy
