"""Seed 002 (Noetic): the memory as a layer an agent runtime calls at fixed points.

An operations agent works for the payments team over several simulated days. Each run
starts with ``init``, recalls its past runs within a token budget before its first step,
and ends with ``on_complete`` and the run's outcome. The stories check what the runtime
(and the person reading its prompts) would notice: every run leaves an episode that keeps
its outcome, the next run finds the past run it needs even when asked in other words, the
block never outgrows the budget (held to 300..2000 tokens), a failed run reads as failed,
and the same memory is there through HTTP and MCP.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta

import anyio
import httpx
from story import SimClock, http_client, mcp_call

from episodic import Episodic
from episodic.client import AsyncClient, Client
from episodic.http import asgi
from episodic.layer import (
    BUDGET_MAX_TOKENS,
    BUDGET_MIN_TOKENS,
    MemoryLayer,
    Recalled,
    estimate_tokens,
)
from episodic.model import Memory
from episodic.scoring.decay import reinforcement_of
from episodic.write.episodes import episode_json
from servers import serve

WORKSPACE = "acme"
AGENT = "ops-bot"
TEAM = "team:payments"

REFUND_RUN = [
    (
        "user",
        "The nightly refund batch timed out at the payment gateway again, after 400 refunds.",
    ),
    (
        "assistant",
        "The gateway client opens only 5 connections, so the refund batch queues until the "
        "30 second timeout fires.",
    ),
    ("user", "Raising the gateway connection pool to 20 let the refund batch finish."),
    ("assistant", "Confirmed: the refund batch completed in 4 minutes with the pool at 20."),
]
CERT_RUN = [
    ("user", "Deploy the ledger service to the eu-west cluster today."),
    (
        "assistant",
        "The ledger deploy to eu-west stopped: the TLS certificate of the internal load "
        "balancer expired yesterday.",
    ),
    ("user", "The certificate renewal needs the security team, leave the deploy stopped."),
]
FAILED_DEPLOY = "failed: certificate expired"
# Asked on a later day in other words: no content word is shared with the refund run,
# so only the dense (vector) leg can find it.
PARAPHRASE = "overnight reimbursement job hangs talking to the card processor"


def run(clock: SimClock, lines: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """A run's transcript as a chat API writes it, a minute between messages."""
    start = clock.now
    return [
        {"role": role, "content": text, "ts": (start + timedelta(minutes=i)).isoformat()}
        for i, (role, text) in enumerate(lines)
    ]


def layer(memory: Episodic) -> MemoryLayer:
    return MemoryLayer(memory, workspace=WORKSPACE, agent=AGENT, resource=TEAM)


def outcomes(episodes: Sequence[Memory]) -> set[str | None]:
    return {episode_json(e)["outcome"] for e in episodes}


def refund_then_failed_deploy(ops: MemoryLayer, clock: SimClock) -> None:
    """Day 1: the refund batch is fixed. Day 2: the ledger deploy fails."""
    ops.on_complete(run(clock, REFUND_RUN), conversation="run-refunds", outcome="success")
    clock.advance(days=1)
    ops.on_complete(run(clock, CERT_RUN), conversation="run-ledger-deploy", outcome=FAILED_DEPLOY)


def filler_run(day: int) -> list[tuple[str, str]]:
    """A routine run about one ledger shard: long enough (~100 tokens an episode) that a
    week of them does not fit the smallest budget."""
    detail = " ".join(f"table{day}_{i}" for i in range(12))
    return [
        ("user", f"Reconcile ledger shard {day} against the bank statements: {detail}."),
        ("assistant", f"Ledger shard {day} reconciled, every balance matched: {detail}."),
    ]


def test_each_run_leaves_an_episode_with_its_outcome_and_the_next_run_finds_it(
    memory: Episodic, clock: SimClock
) -> None:
    ops = layer(memory)
    # Day 1: a fresh agent has nothing to recall.
    state = ops.init()
    assert (state.episodes, state.last_episode_at) == (0, None)
    assert state.mode == "vector"  # the default path embeds with the local model
    assert ops.recall(800).text == ""

    refund = ops.on_complete(run(clock, REFUND_RUN), conversation="run-refunds", outcome="success")
    assert refund and outcomes(refund) == {"success"}
    assert all(e.conversation == "run-refunds" for e in refund)

    # Day 2: the deploy fails; its episode says so.
    clock.advance(days=1)
    cert = ops.on_complete(
        run(clock, CERT_RUN),
        conversation="run-ledger-deploy",
        outcome=FAILED_DEPLOY,
    )
    assert cert and outcomes(cert) == {FAILED_DEPLOY}

    # Days 3 to 8: routine runs, one a day.
    for day in range(6):
        clock.advance(days=1)
        ops.on_complete(
            run(clock, filler_run(day)), conversation=f"run-{day:02d}", outcome="success"
        )

    # Day 10: the next run starts. init sees every run, the latest last.
    clock.advance(days=2)
    state = ops.init()
    assert state.episodes == len(refund) + len(cert) + 6
    assert state.last_episode_at is not None and state.last_episode_at > max(e.ts for e in cert)

    # The smallest budget holds only the newest runs: the refund run is not among them ...
    newest = ops.recall(300)
    assert newest.episodes and "run-refunds" not in {e.conversation for e in newest.episodes}
    # ... but asked about the refund batch, it recalls that run within the same budget.
    found = ops.recall(300, "refund batch timeout at the gateway", order="relevant")
    assert "run-refunds" in {e.conversation for e in found.episodes}, found.text
    assert "connection pool to 20" in found.text
    assert found.budget_tokens == 300 and found.tokens == estimate_tokens(found.text) <= 300


def test_the_next_run_recalls_a_past_run_asked_in_other_words(
    memory: Episodic, clock: SimClock
) -> None:
    ops = layer(memory)
    ops.on_complete(run(clock, REFUND_RUN), conversation="run-refunds", outcome="success")
    for day in range(6):
        clock.advance(days=1)
        ops.on_complete(
            run(clock, filler_run(day)), conversation=f"run-{day:02d}", outcome="success"
        )
    clock.advance(days=2)
    # No content word of the question is in the refund run: only its meaning matches.
    found = ops.recall(300, PARAPHRASE, order="relevant")
    assert "run-refunds" in {e.conversation for e in found.episodes}, found.text
    assert "connection pool to 20" in found.text and found.tokens <= 300
    # HTTP recall finds it the same way, right after the run.
    with http_client(memory, WORKSPACE) as client:
        hits = client.post(
            "/v1/recall",
            json={"query": PARAPHRASE, "agent": AGENT, "resource": TEAM, "types": ["episode"]},
        ).json()["hits"]
    assert hits and hits[0]["conversation"] == "run-refunds"


def test_the_budget_is_held_to_300_and_2000_tokens(memory: Episodic, clock: SimClock) -> None:
    ops = layer(memory)
    # Three weeks of routine runs, one a day.
    for day in range(21):
        ops.on_complete(
            run(clock, filler_run(day)), conversation=f"run-{day:02d}", outcome="success"
        )
        clock.advance(days=1)

    floor, ceiling = ops.recall(BUDGET_MIN_TOKENS), ops.recall(BUDGET_MAX_TOKENS)
    assert 0 < len(floor.episodes) < len(ceiling.episodes)
    assert floor.tokens <= 300 and ceiling.tokens <= 2000
    # The smallest budget keeps the newest runs.
    assert floor.episodes[-1].conversation == "run-20"

    # A runtime asking for less than the layer's minimum gets the minimum ...
    for asked in (1, 50, 299):
        tight = ops.recall(asked)
        assert tight.budget_tokens == 300, asked
        assert tight.text == floor.text and tight.tokens <= 300
    # ... and asking for more than its maximum gets the maximum.
    for asked in (2001, 8000, 1_000_000):
        wide = ops.recall(asked)
        assert wide.budget_tokens == 2000, asked
        assert wide.text == ceiling.text and wide.tokens <= 2000
    # Within the bounds the budget is what was asked for.
    middle = ops.recall(1000)
    assert middle.budget_tokens == 1000 and middle.tokens <= 1000
    assert len(floor.episodes) <= len(middle.episodes) <= len(ceiling.episodes)


def test_a_failed_run_reads_as_failed_in_the_next_runs_prompt(
    memory: Episodic, clock: SimClock
) -> None:
    ops = layer(memory)
    refund_then_failed_deploy(ops, clock)
    clock.advance(days=2)
    # The next run's prompt lists both runs, and says which one failed and why.
    lines = ops.recall(800).text.splitlines()
    deploy = next(line for line in lines if "ledger deploy" in line)
    refund = next(line for line in lines if "refund batch" in line)
    assert f"(outcome: {FAILED_DEPLOY})" in deploy
    assert "(outcome: success)" in refund and "failed" not in refund
    # Asked about the deploy, the run finds the failed attempt, marked as such.
    asked = ops.recall(300, "ledger deploy to eu-west", order="relevant")
    assert "run-ledger-deploy" in {e.conversation for e in asked.episodes}
    assert f"(outcome: {FAILED_DEPLOY}) The ledger deploy" in asked.text


def test_the_same_memory_through_http_and_mcp(memory: Episodic, clock: SimClock) -> None:
    ops = layer(memory)
    refund_then_failed_deploy(ops, clock)
    clock.advance(days=4)

    with http_client(memory, WORKSPACE) as client:
        # The newest episodes, with how each run ended.
        recent = client.get("/v1/recent", params={"agent": AGENT, "resource": TEAM})
        assert recent.status_code == 200, recent.text
        shown = {e["conversation"]: e["outcome"] for e in recent.json()["episodes"]}
        assert shown == {
            "run-refunds": "success",
            "run-ledger-deploy": FAILED_DEPLOY,
        }
        # Recall finds the refund run's episode, with its outcome.
        found = client.post(
            "/v1/recall",
            json={
                "query": "refund batch gateway timeout",
                "agent": AGENT,
                "resource": TEAM,
                "types": ["episode"],
            },
        )
        assert found.status_code == 200, found.text
        hits = found.json()["hits"]
        assert hits and hits[0]["conversation"] == "run-refunds"
        assert hits[0]["payload"]["outcome"] == "success"

    # The agent's MCP tool, bound to the same agent and team, recalls the same run when
    # asked in other words (its messages and entries carry vectors).
    tool = mcp_call(
        memory,
        "recall_memory",
        {"query": PARAPHRASE},
        workspace=WORKSPACE,
        agent=AGENT,
        resource=TEAM,
    )
    contents = " ".join(m["content"] for m in tool["memories"]).lower()
    assert "refund batch" in contents and "connection pool" in contents


# -- the layer's hooks on every interface, and sessions ------------------------------------
@contextmanager
def served(memory: Episodic, *, role: str = "admin", agent: str | None = None) -> Iterator[str]:
    """A real HTTP server over ``memory``; yields its base URL. The key is ``KEY[0]``."""
    KEY[:] = [memory.create_key(WORKSPACE, role=role, agent=agent)[1]]
    with serve(asgi(memory)) as base:
        yield base


KEY: list[str] = []


def shape(found: Recalled) -> tuple[str, list[str], list[str | None], int, int]:
    """What a runtime reads of a recall: the block, which episodes and how each run
    ended, the tokens and the budget."""
    return (
        found.text,
        [e.id for e in found.episodes],
        [episode_json(e)["outcome"] for e in found.episodes],
        found.tokens,
        found.budget_tokens,
    )


def reinforcement(memory: Episodic, ids: Sequence[str]) -> dict[str, int]:
    return {m.id: reinforcement_of(m.payload) for m in memory.store.get_memories(WORKSPACE, ids)}


def test_a_run_completed_over_http_mcp_and_the_clients_is_an_episode_at_once(
    memory: Episodic, clock: SimClock
) -> None:
    """A runtime in another process completes its runs and asks for the budgeted
    ``<episodes>`` block over HTTP, MCP, ``Client`` and ``AsyncClient``: each run's
    episodes exist when the call returns (not after three idle hours), keep the outcome,
    and every interface's block is the one ``MemoryLayer`` gives."""
    ops = layer(memory)
    with served(memory) as base:
        done = httpx.post(
            f"{base}/v1/layer/complete",
            headers={"authorization": f"Bearer {KEY[0]}"},
            json={
                "agent": AGENT,
                "resource": TEAM,
                "conversation": "run-refunds",
                "outcome": "success",
                "transcript": run(clock, REFUND_RUN),
            },
            timeout=60,
        )
        assert done.status_code == 200, done.text
        made = done.json()["episodes"]
        assert made and {e["payload"]["outcome"] for e in made} == {"success"}
        assert {e["conversation"] for e in made} == {"run-refunds"}
        clock.advance(days=1)
        with Client(base, KEY[0]) as client:
            remote = client.layer(agent=AGENT, resource=TEAM)
            episodes = remote.on_complete(
                run(clock, CERT_RUN), conversation="run-ledger-deploy", outcome=FAILED_DEPLOY
            )
            assert episodes and outcomes(episodes) == {FAILED_DEPLOY}
            clock.advance(days=1)
            here = ops.recall(800)
            assert "run-refunds" in here.text or "refund batch" in here.text
            assert f"(outcome: {FAILED_DEPLOY})" in here.text
            assert shape(remote.recall(800)) == shape(here)
            state = remote.init()
            assert (state.episodes, state.runs) == (ops.init().episodes, 2)
            asked = remote.recall(300, "ledger deploy to eu-west", order="relevant")
            assert shape(asked) == shape(
                ops.recall(300, "ledger deploy to eu-west", order="relevant")
            )
            # The budget is held to the layer's bounds over HTTP too.
            assert remote.recall(1).budget_tokens == BUDGET_MIN_TOKENS

        async def through_async() -> Recalled:
            async with AsyncClient(base, KEY[0]) as client:
                return await client.layer(agent=AGENT, resource=TEAM).recall(800)

        assert shape(anyio.run(through_async)) == shape(here)
    tool = mcp_call(
        memory,
        "recall_episodes",
        {"budget_tokens": 800},
        workspace=WORKSPACE,
        agent=AGENT,
        resource=TEAM,
    )
    assert tool["text"] == here.text and tool["budget_tokens"] == 800
    # A third run completed through MCP is an episode at once too.
    clock.advance(days=1)
    completed = mcp_call(
        memory,
        "on_complete",
        {"transcript": run(clock, filler_run(1)), "outcome": "success"},
        workspace=WORKSPACE,
        agent=AGENT,
        resource=TEAM,
    )
    assert completed["episodes"] and ops.init().runs == 3


def test_a_session_reinforces_each_memory_its_recalls_returned_once(
    memory: Episodic, clock: SimClock
) -> None:
    """Seed 001's reinforcement through the layer: the memories a run's recalls
    returned (auto-inject, the recall_memory tool, a relevant recall) are reinforced once
    each when the run completes, however often they were returned; a later run that
    recalls nothing reinforces nothing."""
    ops = layer(memory)
    ops.on_complete(run(clock, REFUND_RUN), conversation="run-refunds", outcome="success")
    clock.advance(days=1)
    next_run = layer(memory)
    block = next_run.auto_inject("the refund batch timed out at the gateway")
    assert block
    again = memory.recall(
        "refund batch gateway", workspace=WORKSPACE, agent=AGENT, scope="own", mark=False
    )
    tool = next_run.recall_memory("refund batch connection pool")
    assert tool
    found = next_run.recall(300, "refund batch timeout", order="relevant")
    assert found.episodes
    recalled_ids = {e.id for e in found.episodes}
    # Through the tool and auto-inject: what they returned, by content.
    shown = {h.id for h in again.hits if h.memory.content in block}
    assert shown
    next_run.on_complete(run(clock, CERT_RUN), outcome=FAILED_DEPLOY)
    counts = reinforcement(memory, [*recalled_ids, *shown])
    assert set(counts.values()) == {1}, counts
    assert set(next_run.reinforced) >= recalled_ids | shown
    # The next run recalls nothing: nothing is reinforced again.
    clock.advance(days=1)
    next_run.on_complete(run(clock, filler_run(2)), outcome="success")
    assert set(reinforcement(memory, [*recalled_ids, *shown]).values()) == {1}


def test_http_and_mcp_name_the_session_on_a_recall_and_end_it(
    memory: Episodic, clock: SimClock
) -> None:
    ops = layer(memory)
    ops.on_complete(run(clock, REFUND_RUN), conversation="run-refunds", outcome="success")
    clock.advance(days=1)
    with served(memory) as base, Client(base, KEY[0]) as client:
        where = {"agent": AGENT, "resource": TEAM}
        first = client.recall("refund batch gateway timeout", session="chat-7", **where)
        second = client.recall("connection pool for the refunds", session="chat-7", **where)
        ids = {h.id for h in first.hits} | {h.id for h in second.hits}
        assert {h.id for h in first.hits} & {h.id for h in second.hits}
        # Reinforced at the session's end, not before.
        assert set(reinforcement(memory, ids).values()) == {0}
        ended = client.end_session("chat-7")
        assert set(ended.reinforced) == ids and ended.session == "chat-7"
        assert set(reinforcement(memory, ids).values()) == {1}
        # Ended again, with nothing recalled since: nothing more.
        assert client.end_session("chat-7").reinforced == []
    tool = mcp_call(
        memory,
        "recall_memory",
        {"query": "refund batch gateway", "session": "chat-8"},
        workspace=WORKSPACE,
        agent=AGENT,
        resource=TEAM,
    )
    returned = [m["id"] for m in tool["memories"]]
    assert returned
    before = reinforcement(memory, returned)
    ended_mcp = mcp_call(
        memory, "end_session", {"session": "chat-8"}, workspace=WORKSPACE, agent=AGENT
    )
    assert set(ended_mcp["reinforced"]) == set(returned)
    assert reinforcement(memory, returned) == {i: n + 1 for i, n in before.items()}


def test_the_cap_of_20_counts_runs_not_the_episodes_a_long_run_became(
    memory: Episodic, clock: SimClock
) -> None:
    """Seed 002 keeps one episode per ``onComplete``, the last 20: a long run that
    segmentation splits (here by 40-minute pauses) still counts as one of the 20 runs,
    and all its episodes stay in view until 20 newer runs push the whole run out."""
    ops = layer(memory)
    start = clock.now
    long_run = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Step {i} of the quarterly ledger close for {part}: balances checked.",
            "ts": (start + timedelta(minutes=40 * (i // 3) + i)).isoformat(),
        }
        for i, part in enumerate(["region north"] * 3 + ["region south"] * 3 + ["region east"] * 3)
    ]
    made = ops.on_complete(long_run, conversation="run-close", outcome="success")
    assert len(made) == 3  # one run, three episodes
    for day in range(19):
        clock.advance(days=1)
        ops.on_complete(
            run(clock, [("user", f"Check shard {day}."), ("assistant", "Shard checked.")]),
            conversation=f"run-{day:02d}",
            outcome="success",
        )
    state = ops.init()
    assert (state.runs, state.episodes) == (20, 19 + 3)
    assert {e.id for e in made} <= {e.id for e in ops.recall(BUDGET_MAX_TOKENS).episodes}
    # One more run: the long run leaves the view whole, not one episode at a time.
    clock.advance(days=1)
    ops.on_complete(run(clock, [("user", "Check shard 19.")]), conversation="run-19")
    state = ops.init()
    assert (state.runs, state.episodes) == (20, 20)
    assert not {e.id for e in made} & {e.id for e in ops.recall(BUDGET_MAX_TOKENS).episodes}
