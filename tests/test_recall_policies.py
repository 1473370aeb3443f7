"""Every seed's retrieval as a named policy, and the trace that explains a recall."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic, UnknownPolicy
from episodic.embed.fake import FakeEmbedder
from episodic.recall.policies import (
    POLICIES,
    Diversity,
    Factor,
    Fusion,
    Leg,
    RenderStyle,
    get_policy,
)
from episodic.scoring.blend import BlendScale, blend
from episodic.store import open_store

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("name", "legs", "fusion", "rrf_k", "pool_k5", "factors", "diversity", "render"),
    [
        (
            "crewship",
            {Leg.DENSE, Leg.SPARSE},
            Fusion.RRF,
            60,
            20,
            (),
            Diversity.NONE,
            RenderStyle.RECALLED_MEMORY,
        ),
        (
            "teaparty",
            {Leg.DENSE, Leg.SPARSE},
            Fusion.BLEND,
            60,
            20,
            (Factor.PROMINENCE, Factor.SCOPE_LEVEL),
            Diversity.MMR,
            RenderStyle.RECALLED_MEMORY,
        ),
        (
            "plastmem",
            {Leg.DENSE, Leg.SPARSE},
            Fusion.RRF,
            30,
            100,
            (Factor.RETRIEVABILITY,),
            Diversity.NONE,
            RenderStyle.RECALLED_MEMORY,
        ),
        (
            "n8n",
            {Leg.DENSE, Leg.SPARSE, Leg.RECENCY},
            Fusion.RRF,
            60,
            20,
            (Factor.RECENCY_WEIGHT,),
            Diversity.NONE,
            RenderStyle.MEMORY_NEWEST_FIRST,
        ),
        (
            "bm25",
            {Leg.SPARSE},
            Fusion.SCORE,
            60,
            20,
            (),
            Diversity.NONE,
            RenderStyle.RECALLED_MEMORY,
        ),
        (
            "dense",
            {Leg.DENSE},
            Fusion.SCORE,
            60,
            20,
            (),
            Diversity.NONE,
            RenderStyle.RECALLED_MEMORY,
        ),
    ],
)
def test_seed_policies_pin_the_seeds_constants(
    name: str,
    legs: set[Leg],
    fusion: Fusion,
    rrf_k: int,
    pool_k5: int,
    factors: tuple[Factor, ...],
    diversity: Diversity,
    render: RenderStyle,
) -> None:
    p = POLICIES[name]
    assert (set(p.legs), p.fusion, p.rrf_k, p.pool_size(5)) == (legs, fusion, rrf_k, pool_k5)
    assert (p.factors, p.diversity, p.render) == (factors, diversity, render)


def test_pool_sizes_follow_each_seed() -> None:
    assert POLICIES["crewship"].pool_size(10) == 30  # max(3k, 20)
    assert POLICIES["teaparty"].pool_size(10) == 40  # 4 x k
    assert POLICIES["plastmem"].pool_size(10) == 100  # 100 per leg
    # Seeds use one pool for every leg; default keeps BM25's shallower, never below k.
    assert [POLICIES[n].sparse_pool_size(10) for n in ("crewship", "plastmem")] == [30, 100]
    assert [POLICIES["default"].sparse_pool_size(k) for k in (5, 80, 150)] == [50, 80, 150]
    assert POLICIES["crewship"].dense_by_importance
    assert POLICIES["teaparty"].mmr_lambda == 0.7
    assert (POLICIES["teaparty"].blend_dense, POLICIES["teaparty"].blend_sparse) == (0.7, 0.3)
    assert POLICIES["n8n"].default_k == 12
    assert get_policy(None).name == "default"
    with pytest.raises(UnknownPolicy, match="known policies: bm25, crewship"):
        get_policy("nope")


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=1024), clock=lambda: NOW)
    yield m
    m.close()


def add(
    m: Episodic,
    i: str,
    summary: str,
    *,
    days: float,
    type: str = "peer.escalation",
    severity: str = "info",
    agent: str = "a1",
    crew: str = "c1",
    **extra: object,
) -> None:
    report = m.ingest(
        [
            {
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
        ]
    )
    assert report.admitted == 1


def test_crewship_orders_equal_matches_by_importance(mem: Episodic) -> None:
    add(mem, "low", "payment gateway timeout", days=1, type="note", refs={"episodic": True})
    add(mem, "high", "payment gateway timeout", days=1, severity="error")
    mem.index_once()
    assert [
        h.id for h in mem.recall("payment gateway timeout", workspace="w", policy="crewship").hits
    ][:1] == ["high"]


def test_recency_aware_policies_prefer_the_fresh_memory(mem: Episodic) -> None:
    add(mem, "old", "checkout cache eviction bug", days=400)
    add(mem, "new", "checkout cache eviction bug", days=2)
    mem.index_once()
    for name in ("plastmem", "n8n", "teaparty"):
        assert mem.recall("checkout cache eviction", workspace="w", policy=name).hits[0].id == "new"


def test_teaparty_mmr_merges_near_duplicates_and_the_trace_says_so(mem: Episodic) -> None:
    add(mem, "a", "dns resolver misconfigured in staging cluster", days=1)
    add(mem, "a2", "dns resolver misconfigured in staging cluster", days=1)  # a duplicate
    add(mem, "b", "staging dns resolver outage from an expired certificate", days=1)
    add(mem, "weak", "dns", days=1)  # the low end of the min-max BM25 range
    for i, topic in enumerate(["kafka lag", "disk full", "oom kill", "slow query", "bad deploy"]):
        add(mem, f"filler{i}", f"{topic} on the orders service", days=1)  # gives BM25 an IDF
    mem.index_once()
    plain = mem.recall("dns resolver staging", workspace="w", policy="crewship", k=2, mark=False)
    assert {h.id for h in plain.hits} == {"a", "a2"}  # without diversity: both duplicates
    result = mem.recall("dns resolver staging", workspace="w", policy="teaparty", k=2, explain=True)
    assert result.hits[1].id == "b" and result.hits[0].id in {"a", "a2"}
    assert result.trace is not None
    merged = [d for d in result.trace.dropped if d.reason == "merged by MMR"]
    assert len(merged) == 1 and {merged[0].memory_id, result.hits[0].id} == {"a", "a2"}


def test_n8n_renders_a_memory_block_newest_first_with_ages(mem: Episodic) -> None:
    add(mem, "older", "refund job double charged customers", days=9)
    add(mem, "newer", "refund job fixed by idempotency key", days=2)
    mem.index_once()
    block = mem.render("refund job", workspace="w", policy="n8n")
    lines = block.split("\n")
    assert lines[0] == "<memory>" and lines[-1] == "</memory>"
    assert "Untrusted hints" in lines[1]
    body = [line for line in lines if line.startswith("- ")]
    assert body == [
        "- refund job fixed by idempotency key (2 days ago)",
        "- refund job double charged customers (1 week ago)",
    ]


def test_trace_shows_legs_fusion_and_every_kind_of_drop(mem: Episodic) -> None:
    for i in range(8):
        add(
            mem,
            f"m{i}",
            f"kafka consumer lag on orders topic incident {i}",
            days=i + 1,
            agent="a1" if i % 2 == 0 else "a2",
        )
    add(mem, "far", "completely unrelated bakery order", days=1)
    mem.index_once()
    result = mem.recall(
        "kafka consumer lag orders",
        workspace="w",
        agent="a1",
        scope="own",
        k=2,
        explain=True,
        policy="crewship",
    )
    trace = result.trace
    assert trace is not None
    assert {"leg:dense", "leg:sparse", "leg:dense x importance", "fusion:rrf"} <= set(trace.stages)
    top = trace.stages["fusion:rrf"][0]
    assert top.rank == 1 and top.memory_id == result.hits[0].id
    reasons = {d.reason for d in trace.dropped}
    assert {"scope", "beyond k", "below threshold"} <= reasons
    assert {d.memory_id for d in trace.dropped if d.reason == "scope"} == {"m1", "m3", "m5", "m7"}
    as_json = trace.to_json()
    assert as_json["policy"] == "crewship" and as_json["stages"]["leg:sparse"][0]["rank"] == 1

    block, explained = mem.render_explained(
        "kafka consumer lag orders", workspace="w", k=5, max_chars=380, explain=True
    )
    assert block and explained.trace is not None
    assert any(d.reason == "over budget" for d in explained.trace.dropped)


def test_plain_recall_builds_no_trace(mem: Episodic) -> None:
    add(mem, "x", "anything at all", days=1)
    assert mem.recall("anything", workspace="w").trace is None


def test_time_expressions_favour_memories_of_that_time(mem: Episodic) -> None:
    add(mem, "yday", "checkout outage from a bad config push", days=1)
    add(mem, "old", "checkout outage from a bad config push", days=40)
    add(mem, "gc", "garbage collection pauses on the search cluster", days=1)
    add(mem, "conf", "team went to the kubecon conference in paris", days=20)
    add(mem, "before", "rotated every api key ahead of travelling", days=22)
    add(mem, "noise", "rotated every api key as routine hygiene", days=5)
    mem.index_once()
    hits = mem.recall("checkout outage yesterday", workspace="w", explain=True)
    assert [h.id for h in hits.hits][:2] == ["yday", "old"]
    assert hits.trace is not None and hits.trace.lexical_query == "checkout outage"
    assert "yesterday" in hits.trace.time_windows[0]
    # no useful words at all: the time leg alone brings back that day's memories
    assert {h.id for h in mem.recall("what happened yesterday", workspace="w").hits} >= {
        "yday",
        "gc",
    }
    # an anchored expression is dated by the memory it names
    anchored = mem.recall("api key rotated two days before the conference", workspace="w")
    assert anchored.hits[0].id == "before"
    # the seed policies are not time-aware: same order as plain lexical relevance
    plain = mem.recall("checkout outage yesterday", workspace="w", policy="crewship")
    assert {h.id for h in plain.hits[:2]} == {"yday", "old"}


def test_walk_adds_memories_one_similar_edge_away_when_enabled(mem: Episodic) -> None:
    from episodic.store import Relation

    add(mem, "hit", "redis failover took the cart service down", days=3)
    add(mem, "linked", "sentinel quorum misconfigured after the node upgrade", days=9)
    add(mem, "other", "unrelated marketing email campaign", days=2)
    mem.index_once()
    mem.store.add_relations("w", [Relation("hit", "linked", "similar", 0.83)])
    plain = mem.recall("redis failover cart", workspace="w", k=1)
    assert [h.id for h in plain.hits] == ["hit"]
    walked = mem.recall("redis failover cart", workspace="w", k=1, walk=1, explain=True)
    assert [(h.id, h.via) for h in walked.hits] == [("hit", None), ("linked", "hit")]
    assert walked.hits[1].score == pytest.approx(walked.hits[0].score * 0.83)
    assert walked.trace is not None and "walk:similar" in walked.trace.stages


def test_institutional_memories_always_render_under_their_own_budget(mem: Episodic) -> None:
    add(
        mem,
        "rule",
        "never deploy on fridays after five pm",
        days=200,
        type="institutional",
        refs={"episodic": True},
    )
    add(mem, "inc", "kafka consumer lag broke the orders pipeline", days=1)
    for i in range(6):
        add(mem, f"lag{i}", f"kafka consumer lag incident number {i} " + "x" * 80, days=2)
    mem.index_once()
    block, result = mem.render_explained("kafka consumer lag", workspace="w", max_chars=500)
    assert result.warnings == []  # the standing budget is not the recalled one's overrun
    lines = block.split("\n")
    assert "[institutional" in lines[2] and "never deploy on fridays" in lines[2]
    recalled = [line for line in lines[3:-1] if line.startswith("- ")]
    assert recalled and sum(len(line) + 1 for line in recalled) <= 500
    assert block.count("never deploy on fridays") == 1  # not ranked again among the hits
    # the standing entry shows even when nothing is recalled for the query
    quiet = mem.render("zebra crossing", workspace="w")
    assert "never deploy on fridays" in quiet and quiet.endswith("</recalled-memory>")


def test_llm_key_terms_feed_the_lexical_leg_and_fall_back_to_the_raw_text(
    db_url: str, new_db_url: Callable[[], str]
) -> None:
    from episodic.errors import LLMError
    from episodic.llm import ScriptedLLM

    def service(llm: ScriptedLLM, url: str) -> Episodic:
        m = Episodic(store=open_store(url), embedder=None, llm=llm, clock=lambda: NOW)
        add(m, "pg", "postgres replica fell behind during the vacuum", days=1)
        add(m, "dns", "coredns stub zone typo broke resolution", days=1)
        return m

    llm = ScriptedLLM([{"terms": ["postgres", "replica", "vacuum"]}])
    with service(llm, db_url) as m:
        question = "why was the read database stale this morning?"
        assert m.recall(question, workspace="w").hits == []  # off by default, no word matches
        assert llm.calls == []
        result = m.recall(question, workspace="w", key_terms=True, explain=True)
        assert [h.id for h in result.hits] == ["pg"]
        assert result.trace is not None and result.trace.lexical_query == "postgres replica vacuum"
        assert "stale this morning" in llm.calls[0].user
    broken = ScriptedLLM([LLMError("down"), LLMError("down")])
    with service(broken, new_db_url()) as m:
        raw = m.recall("coredns stub zone", workspace="w", key_terms=True)
        assert [h.id for h in raw.hits] == ["dns"]  # fell back to the words as typed


def test_scope_multipliers_are_configurable_per_policy(mem: Episodic) -> None:
    from dataclasses import replace

    from episodic.recall.policies import TEAPARTY

    add(mem, "proj", "build cache warmed slowly", days=1)  # belongs to crew c1: project
    mem.ingest(
        [
            {
                "id": "glob",
                "workspace": "w",
                "type": "peer.escalation",
                "summary": "build cache warmed slowly",
                "ts": (NOW - timedelta(days=1)).isoformat(),
            }
        ]
    )  # no crew, no agent: global
    mem.index_once()
    assert dict(TEAPARTY.scope_multipliers) == {"team": 1.5, "project": 1.2, "global": 1.0}
    ask = {"workspace": "w", "k": 2, "mark": False}
    assert mem.recall("build cache", policy="teaparty", **ask).hits[0].id == "proj"
    flipped = replace(TEAPARTY, scope_multipliers=(("project", 1.0), ("global", 2.0)))
    assert mem.recall("build cache", policy=flipped, **ask).hits[0].id == "glob"


def test_turns_of_the_conversation_that_matched_best_rise_above_other_conversations(
    mem: Episodic,
) -> None:
    import dataclasses

    # a1 answers the query in words; a2, four turns later in the same conversation, only
    # shares "sunset", and so does b1 in another conversation, where it is a shorter (so
    # BM25-stronger) match.
    turns = [
        ("a1", "A", "Melanie painted a sunset over the lake last weekend"),
        ("f1", "A", "the kids wanted pancakes for breakfast"),
        ("f2", "A", "we drove to the store to buy groceries"),
        ("f3", "A", "my brother called about his new job"),
        ("a2", "A", "she said the sunset one took her three evenings, the colours kept changing"),
        ("b1", "B", "sunset run"),
    ]
    for n, (i, conversation, text) in enumerate(turns):
        add(
            mem,
            i,
            text,
            days=10 - n / 100,
            conversation=conversation,
            type="note",
            refs={"episodic": True},
        )
    for n in range(10):
        add(
            mem,
            f"x{n}",
            f"unrelated note number {n} about invoices",
            days=20,
            type="note",
            refs={"episodic": True},
        )
    sparse = dataclasses.replace(get_policy("default"), legs=(Leg.SPARSE,), neighbours=0)
    flat = dataclasses.replace(sparse, conversation_weight=0.0)

    def order(policy: object) -> list[str]:
        hits = mem.recall("sunset painting lake", workspace="w", k=3, policy=policy).hits  # type: ignore[arg-type]
        return [h.id for h in hits]

    assert order(flat) == ["a1", "b1", "a2"]
    assert order(sparse) == ["a1", "a2", "b1"]
    result = mem.recall("sunset painting lake", workspace="w", k=3, policy=sparse, explain=True)
    assert result.trace is not None
    assert "context:conversation" in result.trace.stages


def test_bm25_feedback_finds_a_memory_that_shares_only_the_best_matches_words(
    mem: Episodic,
) -> None:
    import dataclasses

    from episodic.recall.policies import BM25

    add(mem, "a", "redis failover took the cart service down", days=3)
    add(mem, "b", "redis failover again: sentinel quorum lost", days=2)
    add(mem, "c", "sentinel quorum misconfigured after the node upgrade", days=9)
    add(mem, "d", "unrelated marketing email campaign", days=1)
    mem.index_once()
    plain = [h.id for h in mem.recall("redis failover", workspace="w", policy=BM25).hits]
    assert "c" not in plain
    feedback = dataclasses.replace(BM25, prf_terms=5, prf_docs=2)
    hits = [h.id for h in mem.recall("redis failover", workspace="w", policy=feedback).hits]
    assert set(hits[:2]) == set(plain[:2]) == {"a", "b"}
    assert "c" in hits and "d" not in hits


def test_the_blend_scale_of_a_policy_is_what_fusion_uses(mem: Episodic) -> None:
    for i, text in enumerate(
        ["kafka consumer lag on orders", "orders topic lag", "kafka broker disk full", "lunch"]
    ):
        add(mem, f"m{i}", text, days=i + 1)
    mem.index_once()
    fused = {}
    for scale in ("raw", "cdf"):
        # the blend's fixed weights (default moves them per query: test_confidence_fusion)
        policy = dataclasses.replace(
            get_policy("default"), blend_scale=scale, confidence_fusion=0.0
        )
        result = mem.recall("kafka orders lag", workspace="w", k=3, explain=True, policy=policy)
        assert result.trace is not None
        legs = {
            name: {r.memory_id: r.score for r in result.trace.stages[f"leg:{name}"]}
            for name in ("dense", "sparse")
        }
        # the legs' candidates are the same whatever the scale; their fused scores are
        # blend()'s over them with the policy's scale
        expected = dict(
            blend(
                legs["dense"],
                legs["sparse"],
                dense_weight=policy.blend_dense,
                sparse_weight=policy.blend_sparse,
                every_match=True,
                scale=BlendScale(scale),
            )
        )
        fused[scale] = {r.memory_id: r.score for r in result.trace.stages["fusion:blend"]}
        assert fused[scale] == pytest.approx(expected)
    assert fused["raw"] != pytest.approx(fused["cdf"])
