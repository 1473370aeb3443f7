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
            "workspace": "ws",
            "crew": "c",
            "agent": "a",
            "resource": "r",
            "conversation": "conv",
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
    assert (e.id, e.workspace, e.crew, e.agent, e.resource, e.conversation) == (
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
    e = parse_event({"workspace": "ws"}, settings=SETTINGS, now=NOW)
    assert e.ts == NOW and e.severity == "info" and e.type == "note"
    assert e.id.startswith("evt_") and e.payload == {} and e.refs == {}


@pytest.mark.parametrize(
    ("obj", "field", "fragment"),
    [
        ([1, 2], "event", "expected a JSON object"),
        ({}, "workspace", "required"),
        ({"workspace": "  "}, "workspace", "required"),
        ({"workspace": 7}, "workspace", "expected a string"),
        ({"workspace": "ws", "severity": "loud"}, "severity", "unknown severity 'loud'"),
        ({"workspace": "ws", "summary": "x" * 101}, "summary", "over the cap of 100"),
        ({"workspace": "ws", "summary": 5}, "summary", "expected a string"),
        ({"workspace": "ws", "summary": "bad \ud800 text"}, "summary", "not valid UTF-8"),
        ({"workspace": "ws", "payload": {"x": "y" * 300}}, "payload", "over the cap of 200"),
        ({"workspace": "ws", "payload": [1]}, "payload", "expected a JSON object"),
        ({"workspace": "ws", "ts": "last tuesday"}, "ts", "not an ISO 8601 time"),
        ({"workspace": "ws", "ts": 1700000000}, "ts", "expected an ISO 8601 string"),
        ({"workspace": "ws", "refs": {"episodic": "yes"}}, "refs.episodic", "true or false"),
        (
            {"workspace": "ws", "refs": {"priority": "urgent"}},
            "refs.priority",
            "unknown priority",
        ),
        ({"workspace": "ws", "sumary": "typo"}, "sumary", "unknown field"),
        ({"workspace": "ws", "agent": "a\nb"}, "agent", "control characters"),
    ],
)
def test_bad_input_names_the_field(obj: object, field: str, fragment: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse(obj)
    assert info.value.field == field
    assert fragment in info.value.message


def test_jsonl_reports_bad_lines_by_number_and_keeps_the_rest() -> None:
    lines = [
        json.dumps({"workspace": "ws", "summary": "one"}).encode(),
        b"{not json",
        b"",
        json.dumps({"workspace": "ws", "severity": "fatal"}).encode(),
        b'{"workspace": "ws", "summary": "caf\xe9"}',  # latin-1 byte, not UTF-8
        json.dumps({"workspace": "ws", "summary": "two"}).encode(),
        json.dumps({"workspace": "ws", "payload": {"blob": "z" * 250}}).encode(),
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
