"""Event format: what a caller may send, and the exact refusals for what it may not."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from episodic.config import Settings
from episodic.errors import InvalidInput
from episodic.write.events import LineError, parse_event, read_jsonl

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
SETTINGS = Settings(max_text_chars=100, max_payload_bytes=200)


def parse(obj: object) -> object:
    return parse_event(obj, settings=SETTINGS, now=NOW)


def test_full_event_round_trips_every_field() -> None:
    e = parse_event(
        {
            "id": "evt-1",
            "workspace_id": "ws",
            "crew_id": "c",
            "agent_id": "a",
            "resource_id": "r",
            "conversation_id": "conv",
            "ts": "2026-11-20T08:30:00+02:00",
            "type": "peer.escalation",
            "severity": "WARN",
            "summary": "disk full",
            "payload": {"host": "db1"},
            "refs": {"episodic": True, "priority": "pin"},
        },
        settings=SETTINGS,
        now=NOW,
    )
    assert (e.id, e.workspace_id, e.crew_id, e.agent_id, e.resource_id, e.conversation_id) == (
        "evt-1",
        "ws",
        "c",
        "a",
        "r",
        "conv",
    )
    assert e.ts == datetime(2026, 11, 20, 6, 30, tzinfo=UTC)
    assert (e.type, e.severity, e.summary) == ("peer.escalation", "warn", "disk full")
    assert e.payload == {"host": "db1"} and e.refs == {"episodic": True, "priority": "pin"}


def test_defaults_for_optional_fields() -> None:
    e = parse_event({"workspace_id": "ws"}, settings=SETTINGS, now=NOW)
    assert e.ts == NOW and e.severity == "info" and e.type == "note"
    assert e.id.startswith("evt_") and e.payload == {} and e.refs == {}


@pytest.mark.parametrize(
    ("obj", "field", "fragment"),
    [
        ([1, 2], "event", "expected a JSON object"),
        ({}, "workspace_id", "required"),
        ({"workspace_id": "  "}, "workspace_id", "required"),
        ({"workspace_id": 7}, "workspace_id", "expected a string"),
        ({"workspace_id": "ws", "severity": "loud"}, "severity", "unknown severity 'loud'"),
        ({"workspace_id": "ws", "summary": "x" * 101}, "summary", "over the cap of 100"),
        ({"workspace_id": "ws", "summary": 5}, "summary", "expected a string"),
        ({"workspace_id": "ws", "summary": "bad \ud800 text"}, "summary", "not valid UTF-8"),
        ({"workspace_id": "ws", "payload": {"x": "y" * 300}}, "payload", "over the cap of 200"),
        ({"workspace_id": "ws", "payload": [1]}, "payload", "expected a JSON object"),
        ({"workspace_id": "ws", "ts": "last tuesday"}, "ts", "not an ISO 8601 time"),
        ({"workspace_id": "ws", "ts": 1700000000}, "ts", "expected an ISO 8601 string"),
        ({"workspace_id": "ws", "refs": {"episodic": "yes"}}, "refs.episodic", "true or false"),
        (
            {"workspace_id": "ws", "refs": {"priority": "urgent"}},
            "refs.priority",
            "unknown priority",
        ),
        ({"workspace_id": "ws", "sumary": "typo"}, "sumary", "unknown field"),
        ({"workspace_id": "ws", "agent_id": "a\nb"}, "agent_id", "control characters"),
    ],
)
def test_bad_input_names_the_field(obj: object, field: str, fragment: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse(obj)
    assert info.value.field == field
    assert fragment in info.value.message


def test_jsonl_reports_bad_lines_by_number_and_keeps_the_rest() -> None:
    lines = [
        json.dumps({"workspace_id": "ws", "summary": "one"}).encode(),
        b"{not json",
        b"",
        json.dumps({"workspace_id": "ws", "severity": "fatal"}).encode(),
        b'{"workspace_id": "ws", "summary": "caf\xe9"}',  # latin-1 byte, not UTF-8
        json.dumps({"workspace_id": "ws", "summary": "two"}).encode(),
        json.dumps({"workspace_id": "ws", "payload": {"blob": "z" * 250}}).encode(),
    ]
    results = list(read_jsonl(lines, settings=SETTINGS, now=NOW))
    errors = [r for _, r in results if isinstance(r, LineError)]
    good = [r for _, r in results if not isinstance(r, LineError)]
    assert [getattr(e, "summary", None) for e in good] == ["one", "two"]
    assert [(e.line, e.field) for e in errors] == [
        (2, "json"),
        (4, "severity"),
        (5, "line"),
        (7, "payload"),
    ]
    assert "malformed JSON" in str(errors[0]) and str(errors[0]).startswith("line 2:")
    assert "not valid UTF-8" in errors[2].message
