"""Admission and base importance: which journal events become memories, and how much
each one starts out mattering (seed 000).

Admission is deliberately selective. High-volume, low-signal types (output chunks,
container metrics, network traffic) would flood the embedding space and dilute recall,
so they are refused even when an operator tags them ``refs.episodic``.

Decision order in :func:`admit`:

1. ``exec.output_chunk``, ``container.metrics`` and any ``network.*`` type: never.
2. ``refs.episodic is True`` (a JSON ``true``): always. The override is checked before the
   type/severity filter, as seed 000's indexer does, so it also lifts an info-level
   ``keeper.decision`` or a plain ``message``. Strings such as ``"true"`` or numbers such
   as ``1`` do not count: the override must be an explicit boolean so that a loosely
   typed producer cannot turn it on by accident (``write.events`` also refuses them).
3. The always-admitted types.
4. ``keeper.decision`` and ``mission.status_change`` at ``warn`` or ``error`` only.
5. ``peer.conversation`` only when ``payload.state == "escalated"``.
6. ``message`` (a chat message of a conversation) when ``payload.role`` is ``user`` or
   ``assistant``: what was said is conversation memory. Tool output and system prompts
   stay with the conversation as events but are not memories.
7. Everything else: refused.

Pure: no I/O, no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Refused even with refs.episodic: their volume, not their content, is the problem.
NEVER_ADMIT_TYPES: frozenset[str] = frozenset({"exec.output_chunk", "container.metrics"})
NEVER_ADMIT_PREFIXES: tuple[str, ...] = ("network.",)

ALWAYS_ADMIT_TYPES: frozenset[str] = frozenset(
    {
        "peer.escalation",
        "summary.generated",
        "memory.consolidated",
        "approval.denied",
        "eval.regression_detected",
    }
)

# Routine at debug..notice; only a denied/risky decision or a failed mission is memorable.
SEVERITY_GATED_TYPES: frozenset[str] = frozenset({"keeper.decision", "mission.status_change"})
GATED_SEVERITIES: frozenset[str] = frozenset({"warn", "error"})

ESCALATED_STATE = "escalated"

MESSAGE_TYPE = "message"
# The type of an event sent without one.
DEFAULT_EVENT_TYPE = "note"
# What segmentation derives from conversations (``episodic.write.episodes``); named here
# so a reader of memories (recall) can tell them apart without loading the writer.
EPISODE_TYPE = "episode"
ENTRY_TYPE = "entry"
LEARNING_TYPE = "learning"
# Seed 004's preferences and profile facts (``episodic.write.profile``).
PROFILE_TYPE = "profile"
SPOKEN_ROLES: frozenset[str] = frozenset({"user", "assistant"})

BASE_IMPORTANCE = 0.5

# Added to BASE_IMPORTANCE by event type; types not listed add nothing.
TYPE_BONUS: Mapping[str, float] = {
    "peer.escalation": 0.20,
    "summary.generated": 0.15,
    "memory.consolidated": 0.20,
    "approval.denied": 0.15,
    "eval.regression_detected": 0.30,
    "keeper.decision": 0.10,
    "mission.status_change": 0.05,
}

# Added by severity; debug and info add nothing.
SEVERITY_BONUS: Mapping[str, float] = {
    "debug": 0.0,
    "info": 0.0,
    "notice": 0.05,
    "warn": 0.15,
    "error": 0.25,
}

# Operator-applied refs.priority: importance is at least this much (a floor, not a bonus).
PRIORITY_FLOOR: Mapping[str, float] = {
    "pin": 0.80,
    "high": 0.85,
    "permanent": 0.95,
}


def is_never_admitted(event_type: str) -> bool:
    """True for the types no override can admit."""
    return event_type in NEVER_ADMIT_TYPES or event_type.startswith(NEVER_ADMIT_PREFIXES)


# How a user keeps an event that admission refused (every rule but the never-admitted
# types yields to it).
KEEP_FIX = "set refs.episodic to keep it"


@dataclass(frozen=True, slots=True)
class Admission:
    """Admission's decision on one event: kept or not, by which rule (its name), why in
    words, and how to keep it when it was not (None when nothing can)."""

    admitted: bool
    rule: str
    reason: str
    fix: str | None = None


def admission(
    event_type: str,
    severity: str,
    payload: Mapping[str, Any],
    refs: Mapping[str, Any],
) -> Admission:
    """Whether an event becomes a memory, and by which rule (see the module docstring
    for the order)."""
    if is_never_admitted(event_type):
        return Admission(
            False,
            "never-admitted-type",
            f"{event_type} events are never kept as memories (their volume drowns recall)",
        )
    if refs.get("episodic") is True:
        return Admission(True, "refs.episodic", "the event set refs.episodic")
    if event_type in ALWAYS_ADMIT_TYPES:
        return Admission(True, "always-admitted-type", f"{event_type} events are always kept")
    if event_type in SEVERITY_GATED_TYPES:
        if severity in GATED_SEVERITIES:
            return Admission(
                True, "severity-gate", f"{event_type} events are kept at warn or error"
            )
        return Admission(
            False,
            "severity-gate",
            f"{severity}-level {event_type} events are kept only at warn or error",
            f"{KEEP_FIX}, or send it at warn",
        )
    if event_type == "peer.conversation":
        if payload.get("state") == ESCALATED_STATE:
            return Admission(True, "escalated-conversation", "an escalated peer conversation")
        return Admission(
            False,
            "escalated-conversation",
            "peer.conversation events are kept only when payload.state is escalated",
            KEEP_FIX,
        )
    if event_type == MESSAGE_TYPE:
        role = payload.get("role")
        if role in SPOKEN_ROLES:
            return Admission(True, "spoken-message", f"what the {role} said in a conversation")
        return Admission(
            False,
            "spoken-message",
            f"{role} messages stay with their conversation; only user and assistant "
            "messages are kept as memories",
            KEEP_FIX,
        )
    if event_type == DEFAULT_EVENT_TYPE:
        # Most often a caller who sent no type: say so rather than name a type they never
        # gave.
        return Admission(
            False,
            "unlisted-type",
            f"{DEFAULT_EVENT_TYPE} events (an event sent without a type is one) are not "
            "kept as memories",
            f"{KEEP_FIX}, or give it a type that is kept (e.g. summary.generated)",
        )
    return Admission(
        False,
        "unlisted-type",
        f"{event_type} is not a type kept as a memory",
        KEEP_FIX,
    )


def admit(
    event_type: str,
    severity: str,
    payload: Mapping[str, Any],
    refs: Mapping[str, Any],
) -> bool:
    """Whether an event becomes a memory (see the module docstring for the order)."""
    return admission(event_type, severity, payload, refs).admitted


def base_importance(event_type: str, severity: str, priority: str | None = None) -> float:
    """Starting importance of an admitted event.

    ``importance = clamp01(max(0.5 + TYPE_BONUS[type] + SEVERITY_BONUS[severity],
    PRIORITY_FLOOR[priority]))``; an unknown type, severity or priority contributes nothing.
    """
    score = BASE_IMPORTANCE + TYPE_BONUS.get(event_type, 0.0) + SEVERITY_BONUS.get(severity, 0.0)
    if priority is not None:
        score = max(score, PRIORITY_FLOOR.get(priority, 0.0))
    return min(1.0, max(0.0, score))


def importance_reason(event_type: str, severity: str, priority: str | None = None) -> str:
    """``base_importance`` in words: its parts and the floor that applied, if any."""
    parts = [f"base {BASE_IMPORTANCE:.2f}"]
    if TYPE_BONUS.get(event_type):
        parts.append(f"{event_type} +{TYPE_BONUS[event_type]:.2f}")
    if SEVERITY_BONUS.get(severity):
        parts.append(f"{severity} +{SEVERITY_BONUS[severity]:.2f}")
    said = " ".join(parts)
    score = base_importance(event_type, severity, priority)
    floor = PRIORITY_FLOOR.get(priority or "")
    if floor is None:
        return f"{said} = {score:.2f} (no refs.priority floor)"
    return f"{said}; refs.priority {priority} floors it at {floor:.2f}: {score:.2f}"
