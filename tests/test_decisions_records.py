"""The decision records as pure functions: admission names its rule and the fix for each
refusal, importance names its floor, and ``Decision`` records are read from what the
store keeps (links, an episode's drops, a merge, a retirement)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from episodic.model import Event, Memory, MemoryStatus
from episodic.policy import admission, importance_reason
from episodic.service.decisions import (
    MERGED,
    NOT_KEPT,
    RETIRED,
    SUPERSEDED,
    SUPERSEDES,
    Decision,
    admission_decisions,
    dropped_decisions,
    link_decisions,
    status_decisions,
)
from episodic.store.supersession import Supersession
from episodic.write.dedupe import drop_similar
from episodic.write.extract import Entry
from episodic.write.journal import count_by_reason, event_admission

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
KEEP = "set refs.episodic to keep it"


@pytest.mark.parametrize(
    ("event_type", "severity", "payload", "refs", "rule", "admitted", "fix"),
    [
        ("network.flow", "info", {}, {"episodic": True}, "never-admitted-type", False, None),
        ("deploy.finished", "info", {}, {"episodic": True}, "refs.episodic", True, None),
        ("deploy.finished", "info", {}, {"episodic": "true"}, "unlisted-type", False, KEEP),
        ("approval.denied", "info", {}, {}, "always-admitted-type", True, None),
        ("keeper.decision", "warn", {}, {}, "severity-gate", True, None),
        ("keeper.decision", "info", {}, {}, "severity-gate", False, f"{KEEP}, or send it at warn"),
        (
            "peer.conversation",
            "info",
            {"state": "escalated"},
            {},
            "escalated-conversation",
            True,
            None,
        ),
        ("peer.conversation", "info", {"state": "open"}, {}, "escalated-conversation", False, KEEP),
        ("message", "info", {"role": "user"}, {}, "spoken-message", True, None),
        ("message", "info", {"role": "tool"}, {}, "spoken-message", False, KEEP),
    ],
)
def test_admission_names_its_rule_and_how_to_keep_what_it_refused(
    event_type: str,
    severity: str,
    payload: dict[str, str],
    refs: dict[str, object],
    rule: str,
    admitted: bool,
    fix: str | None,
) -> None:
    decided = admission(event_type, severity, payload, refs)
    assert (decided.rule, decided.admitted, decided.fix) == (rule, admitted, fix)
    assert decided.reason


def test_an_info_deploy_event_says_why_it_was_not_kept() -> None:
    decided = admission("deploy.finished", "info", {}, {})
    assert decided.reason == "deploy.finished is not a type kept as a memory"
    info = admission("keeper.decision", "info", {}, {})
    assert info.reason == "info-level keeper.decision events are kept only at warn or error"


def test_a_message_with_no_text_is_not_kept_and_nothing_can_keep_it() -> None:
    empty = Event("m", "acme", T, "message", payload={"role": "assistant"}, summary=" ")
    decided = event_admission(empty)
    assert (decided.admitted, decided.rule, decided.fix) == (False, "empty-message", None)


def test_importance_names_its_parts_and_the_floor() -> None:
    assert importance_reason("keeper.decision", "warn") == (
        "base 0.50 keeper.decision +0.10 warn +0.15 = 0.75 (no refs.priority floor)"
    )
    assert importance_reason("keeper.decision", "warn", "pin") == (
        "base 0.50 keeper.decision +0.10 warn +0.15; refs.priority pin floors it at 0.80: 0.80"
    )


def test_refusals_are_counted_by_reason_in_first_seen_order() -> None:
    counts = count_by_reason([], admission("a.b", "info", {}, {}))
    counts = count_by_reason(counts, admission("keeper.decision", "info", {}, {}))
    counts = count_by_reason(counts, admission("a.b", "info", {}, {}), 2)
    assert [(c.rule, c.count) for c in counts] == [("unlisted-type", 3), ("severity-gate", 1)]


def test_a_journal_memory_names_the_rule_that_admitted_it() -> None:
    event = Event("e", "acme", T, "keeper.decision", severity="error", refs={"priority": "high"})
    memory = Memory("e", "acme", T, "keeper.decision", "x", source_event_ids=("e",))
    admitted, weight = admission_decisions(memory, event)
    assert (admitted.kind, admitted.decided_by, admitted.other) == (
        "admitted",
        "policy:severity-gate",
        "e",
    )
    assert "refs.priority high floors it at 0.85: 0.85" in weight.reason


def test_a_derived_memory_names_what_made_it() -> None:
    entry = Memory(
        "n",
        "acme",
        T,
        "entry",
        "x",
        payload={"extracted_by": "offline:sentences"},
        source_event_ids=("m1", "m2"),
    )
    admitted, _ = admission_decisions(entry, None)
    assert (admitted.decided_by, admitted.other) == ("offline:sentences", "m1")
    archived = Memory("e", "acme", T, "note", "x", source_event_ids=("e",))
    assert admission_decisions(archived, None)[0].decided_by == "policy:unknown"


def test_links_read_from_either_end_and_keep_their_revert() -> None:
    link = Supersession("a", "b", "offline:rule", "same slot", T, T, "cli")
    [old] = link_decisions("a", [link])
    [new] = link_decisions("b", [link])
    assert (old.kind, old.other, old.reverted, old.reverted_by) == (SUPERSEDED, "b", True, "cli")
    assert (new.kind, new.other) == (SUPERSEDES, "a")
    assert link_decisions("c", [link]) == []


def test_a_near_duplicate_drop_names_the_stored_memory_it_matched() -> None:
    vector = np.array([[1.0, 0.0]], dtype=np.float32)
    entry = Entry("x", "user_assertion", "x", "m1", "offline")
    _, [drop] = drop_similar([entry], vector, vector, existing_ids=["stored-7"])
    assert drop.detail == "cosine 1.000 with memory stored-7"
    episode = Memory(
        "ep",
        "acme",
        T,
        "episode",
        "x",
        payload={"extraction_dropped": [{"reason": drop.reason, "detail": drop.detail}]},
    )
    [decided] = dropped_decisions(episode)
    assert (decided.kind, decided.decided_by, decided.other) == (
        NOT_KEPT,
        "extraction:similar",
        "stored-7",
    )


def test_a_merge_and_a_retirement_name_what_decided_them() -> None:
    loser = Memory("l", "acme", T, "note", "x", status=MemoryStatus.COMPACTED)
    assert status_decisions(loser, "w") == [
        Decision(MERGED, "upkeep:compact", status_decisions(loser, "w")[0].reason, "w")
    ]
    phased = Memory(
        "p",
        "acme",
        T,
        "note",
        "x",
        status=MemoryStatus.RETIRED,
        payload={"phase": "beta", "retired_at": "2026-03-04T10:00:00.000000Z"},
    )
    [retired] = status_decisions(phased, None)
    assert (retired.kind, retired.decided_by, retired.reason) == (
        RETIRED,
        "upkeep:retire-phase",
        "phase beta ended",
    )
    assert retired.at == datetime(2026, 3, 4, 10, 0, tzinfo=UTC)
    by_hand = Memory("r", "acme", T, "note", "x", status=MemoryStatus.RETIRED)
    assert status_decisions(by_hand, None)[0].decided_by == "explicit"
    assert status_decisions(Memory("a", "acme", T, "note", "x"), None) == []
