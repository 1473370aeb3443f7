"""Admission and base importance pinned to seed 000's tables."""

from __future__ import annotations

from typing import Any

import pytest

from episodic.model import PRIORITIES, SEVERITIES
from episodic.policy import (
    NEVER_ADMIT_TYPES,
    PRIORITY_FLOOR,
    SEVERITY_BONUS,
    TYPE_BONUS,
    admit,
    base_importance,
)

ALWAYS = (
    "peer.escalation",
    "summary.generated",
    "memory.consolidated",
    "approval.denied",
    "eval.regression_detected",
)
GATED = ("keeper.decision", "mission.status_change")
NEVER = ("exec.output_chunk", "container.metrics", "network.egress", "network.dns")
OVERRIDE: dict[str, Any] = {"episodic": True}


@pytest.mark.parametrize("severity", SEVERITIES)
@pytest.mark.parametrize("event_type", ALWAYS)
def test_always_admitted_types_at_every_severity(event_type: str, severity: str) -> None:
    assert admit(event_type, severity, {}, {}) is True


@pytest.mark.parametrize(
    ("severity", "admitted"),
    [("debug", False), ("info", False), ("notice", False), ("warn", True), ("error", True)],
)
@pytest.mark.parametrize("event_type", GATED)
def test_keeper_and_mission_only_at_warn_or_error(
    event_type: str, severity: str, admitted: bool
) -> None:
    assert admit(event_type, severity, {}, {}) is admitted


@pytest.mark.parametrize("event_type", GATED)
def test_override_lifts_a_routine_keeper_or_mission_event(event_type: str) -> None:
    assert admit(event_type, "info", {}, OVERRIDE) is True


@pytest.mark.parametrize("severity", SEVERITIES)
@pytest.mark.parametrize("event_type", NEVER)
@pytest.mark.parametrize("refs", [{}, OVERRIDE, {"episodic": True, "priority": "permanent"}])
def test_high_volume_types_never_admitted_even_with_override(
    event_type: str, severity: str, refs: dict[str, Any]
) -> None:
    assert admit(event_type, severity, {"state": "escalated"}, refs) is False


def test_never_admitted_types_are_exactly_the_seed_list() -> None:
    assert set(NEVER_ADMIT_TYPES) == {"exec.output_chunk", "container.metrics"}
    # A type that merely contains "network" is not a network.* type.
    assert admit("incident.network", "info", {}, OVERRIDE) is True


@pytest.mark.parametrize(
    ("payload", "refs", "admitted"),
    [
        ({"state": "escalated"}, {}, True),
        ({"state": "open"}, {}, False),
        ({"state": "resolved"}, {}, False),
        ({}, {}, False),
        ({"state": "ESCALATED"}, {}, False),
        ({"state": "open"}, OVERRIDE, True),
        ({}, OVERRIDE, True),
        ({"state": "open"}, {"episodic": False}, False),
    ],
)
def test_peer_conversation(payload: dict[str, Any], refs: dict[str, Any], admitted: bool) -> None:
    assert admit("peer.conversation", "info", payload, refs) is admitted


@pytest.mark.parametrize("event_type", ["tool.call", "message", "note", "deploy.started"])
@pytest.mark.parametrize(
    ("refs", "admitted"),
    [
        ({}, False),
        ({"episodic": False}, False),
        (OVERRIDE, True),
        # Only a JSON true counts; truthy look-alikes do not force admission.
        ({"episodic": "true"}, False),
        ({"episodic": 1}, False),
        ({"priority": "permanent"}, False),
    ],
)
def test_other_types_only_with_boolean_override(
    event_type: str, refs: dict[str, Any], admitted: bool
) -> None:
    assert admit(event_type, "error", {}, refs) is admitted


def test_message_with_escalated_state_is_not_a_peer_conversation() -> None:
    assert admit("message", "warn", {"state": "escalated"}, {}) is False


@pytest.mark.parametrize(
    ("event_type", "bonus"),
    [
        ("peer.escalation", 0.20),
        ("summary.generated", 0.15),
        ("memory.consolidated", 0.20),
        ("approval.denied", 0.15),
        ("eval.regression_detected", 0.30),
        ("keeper.decision", 0.10),
        ("mission.status_change", 0.05),
        ("tool.call", 0.0),
        ("message", 0.0),
    ],
)
def test_type_bonus_at_info(event_type: str, bonus: float) -> None:
    assert base_importance(event_type, "info", None) == pytest.approx(0.5 + bonus)


@pytest.mark.parametrize(
    ("severity", "bonus"),
    [("debug", 0.0), ("info", 0.0), ("notice", 0.05), ("warn", 0.15), ("error", 0.25)],
)
def test_severity_bonus_on_an_untyped_event(severity: str, bonus: float) -> None:
    assert base_importance("note", severity, None) == pytest.approx(0.5 + bonus)


def test_tables_cover_the_vocabulary() -> None:
    assert set(SEVERITY_BONUS) == set(SEVERITIES)
    assert set(PRIORITY_FLOOR) == set(PRIORITIES)
    assert set(TYPE_BONUS) == {*ALWAYS, *GATED}


@pytest.mark.parametrize(
    ("event_type", "severity", "expected"),
    [
        ("peer.escalation", "warn", 0.85),
        ("summary.generated", "notice", 0.70),
        ("memory.consolidated", "error", 0.95),
        ("approval.denied", "warn", 0.80),
        ("keeper.decision", "warn", 0.75),
        ("keeper.decision", "error", 0.85),
        ("mission.status_change", "warn", 0.70),
        ("mission.status_change", "error", 0.80),
        ("eval.regression_detected", "warn", 0.95),
        # 0.5 + 0.3 + 0.25 = 1.05, clamped.
        ("eval.regression_detected", "error", 1.0),
    ],
)
def test_type_and_severity_add_up_and_clamp(
    event_type: str, severity: str, expected: float
) -> None:
    assert base_importance(event_type, severity, None) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("event_type", "severity", "priority", "expected"),
    [
        # Low base (0.5): the floor wins.
        ("note", "info", "pin", 0.80),
        ("note", "info", "high", 0.85),
        ("note", "info", "permanent", 0.95),
        # High base (0.95): a floor never lowers it.
        ("peer.escalation", "error", "pin", 0.95),
        ("peer.escalation", "error", "high", 0.95),
        ("peer.escalation", "error", "permanent", 0.95),
        # Base between the floors: only the higher ones lift it.
        ("peer.escalation", "warn", "pin", 0.85),
        ("peer.escalation", "warn", "high", 0.85),
        ("peer.escalation", "warn", "permanent", 0.95),
        # Already clamped at 1.0; the floor leaves it there.
        ("eval.regression_detected", "error", "permanent", 1.0),
        # Unknown priority: no floor.
        ("note", "info", "urgent", 0.5),
    ],
)
def test_priority_floor(event_type: str, severity: str, priority: str, expected: float) -> None:
    assert base_importance(event_type, severity, priority) == pytest.approx(expected)


@pytest.mark.parametrize("event_type", [*ALWAYS, *GATED, "note"])
@pytest.mark.parametrize("severity", SEVERITIES)
@pytest.mark.parametrize("priority", [None, *PRIORITIES])
def test_importance_always_in_unit_interval(
    event_type: str, severity: str, priority: str | None
) -> None:
    assert 0.5 <= base_importance(event_type, severity, priority) <= 1.0
