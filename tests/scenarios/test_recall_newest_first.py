"""A fact that changed, recalled with default settings: the newer record first, the older one
right after it as history; a conversation's repeated turns are left in their own order.

Runs on both backends with the real model: the `similar` edges come from the indexer's
0.80 cosine threshold, which is calibrated for all-MiniLM-L6-v2."""

from __future__ import annotations

from typing import Any

from story import SimClock, http_client

from episodic import Episodic

WS = "ops"


def note(clock: SimClock, id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": id,
        "workspace": WS,
        "type": "agent.note",
        "summary": text,
        "ts": clock.now.isoformat(),
        "refs": {"episodic": True},
        "agent": "platform",
        **extra,
    }


def test_the_newer_version_of_a_changed_setting_is_recalled_first(
    memory: Episodic, clock: SimClock
) -> None:
    mem = memory
    mem.ingest(
        [
            note(clock, "timeout-v1", "payments-api request timeout is 30 seconds"),
            note(clock, "backup-v1", "Nightly backup of the orders database runs at 02:00 UTC"),
            note(clock, "pool", "orders-db connection pool holds 40 connections"),
            note(clock, "retry", "payments-api retries a failed charge three times"),
        ]
    )
    mem.index_once()
    clock.advance(days=20)
    mem.ingest(
        [
            note(clock, "timeout-v2", "payments-api request timeout is now 45 seconds"),
            note(clock, "backup-v2", "Nightly backup of the orders database now runs at 04:00 UTC"),
        ]
    )
    mem.index_once()
    clock.advance(days=1)

    def order(query: str, **options: object) -> list[str]:
        hits = mem.recall(query, workspace=WS, k=5, mark=False, **options).hits
        return [h.id for h in hits]

    # "is now" is weaker than the supersession rule's change language (precision first):
    # the old values stay in default recall, right after the newer ones, marked earlier...
    hits = mem.recall("what is the payments-api request timeout?", workspace=WS, k=5, mark=False)
    timeout = [h.id for h in hits.hits]
    assert timeout[:2] == ["timeout-v2", "timeout-v1"], timeout
    assert hits.hits[1].newer == "timeout-v2", hits.hits[1]
    backup = order("when does the orders database backup run?")
    assert backup.index("backup-v2") < backup.index("backup-v1"), backup
    # ... and with superseded memories asked for too, the newer version still comes first.
    both = order("what is the payments-api request timeout?", include_superseded=True)
    assert both[:2] == ["timeout-v2", "timeout-v1"], both
    both = order("when does the orders database backup run?", include_superseded=True)
    assert both.index("backup-v2") < both.index("backup-v1"), both

    # The HTTP API is the same service: the same order.
    with http_client(mem, WS) as api:
        body = api.post(
            "/v1/recall",
            json={
                "query": "what is the payments-api request timeout?",
                "k": 5,
                "include_superseded": True,
            },
        ).json()
    assert [h["id"] for h in body["hits"]][:2] == ["timeout-v2", "timeout-v1"]


def test_repeated_turns_of_a_conversation_keep_their_own_order(
    memory: Episodic, clock: SimClock
) -> None:
    mem = memory
    first = note(
        clock,
        "turn-1",
        "Sam: the payments-api request timeout is 30 seconds on staging",
        conversation="standup",
    )
    mem.ingest([first])
    clock.advance(days=3)
    mem.ingest(
        [
            note(
                clock,
                "turn-2",
                "Sam: payments-api timeout is 30 seconds",
                conversation="standup",
            )
        ]
    )
    mem.index_once()
    query = "payments-api request timeout on staging"
    default = [h.id for h in mem.recall(query, workspace=WS, k=5, mark=False).hits]
    assert default.index("turn-1") < default.index("turn-2"), default
