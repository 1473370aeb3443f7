"""Turning caller input (JSON objects, JSON lines) into validated ``Event`` values.

One JSON object per event. Every refusal is an ``InvalidInput`` naming the field, so a
caller can fix that one field; a bad line in a file never stops the good ones.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from episodic.config import Settings
from episodic.errors import InvalidInput
from episodic.model import PRIORITIES, Event, severity_choices, severity_of
from episodic.payloads import check_json
from episodic.policy import DEFAULT_EVENT_TYPE, MESSAGE_TYPE, admit
from episodic.write.messages import ROLES

ID_FIELDS = ("workspace", "crew", "agent", "resource", "conversation")
# The names the id fields had before the API settled on one name per concept (the same
# as every other request's): still read, with a deprecation notice, for one minor version.
OLD_ID_FIELDS = {f"{name}_id": name for name in ID_FIELDS}
KNOWN_FIELDS = frozenset(
    (*ID_FIELDS, *OLD_ID_FIELDS, "id", "ts", "type", "severity", "summary", "payload", "refs")
)
MAX_ID_CHARS = 256
# One scan finds both: control characters, and lone surrogates (not encodable as UTF-8).
_ID_UNSAFE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# The JSON escapes that may decode to one: "\ud800" to "\udfff", any case.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# Re-serialising parsed JSON can outgrow its source text (1e15 -> 1000000000000000.0).
_MAX_REENCODE_GROWTH = 5


@dataclass(frozen=True, slots=True)
class LineError:
    """One rejected line of a JSON-lines input (1-based line number)."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


def new_event_id() -> str:
    return f"evt_{uuid.uuid4().hex}"


def parse_event(
    obj: Any,
    *,
    settings: Settings,
    now: datetime,
    source_bytes: int | None = None,
    may_hold_surrogates: bool = True,
    deprecated: set[str] | None = None,
) -> Event:
    """Validate one event object; raise ``InvalidInput`` naming the first bad field.

    ``source_bytes`` is the size of the JSON text the object was parsed from, if known: a
    payload inside it cannot be larger, which spares serialising it again to measure it.
    ``may_hold_surrogates`` False says the source was UTF-8 bytes without a
    ``\\ud800``-``\\udfff`` escape: no lone surrogate can be in it. Old field names
    the object used (``workspace_id`` ...) are added to ``deprecated``."""
    if not isinstance(obj, Mapping):
        raise InvalidInput("event", f"expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(obj.keys() - KNOWN_FIELDS)
    if unknown:
        raise InvalidInput(
            _field_name(unknown[0]),
            f"unknown field; known fields are {', '.join(sorted(KNOWN_FIELDS))}",
        )

    ids = _ids(obj, deprecated)
    workspace = ids["workspace"]
    if workspace is None:
        raise InvalidInput("workspace", "required (the workspace this event belongs to)")

    event_id = opt_id(obj, "id") or new_event_id()
    event_type = opt_id(obj, "type") or DEFAULT_EVENT_TYPE

    severity = obj.get("severity", "info")
    if severity is None:
        severity = "info"
    known = severity_of(severity) if isinstance(severity, str) else None
    if known is None:
        raise InvalidInput(
            "severity", f"unknown severity {severity!r}; use one of {severity_choices()}"
        )

    summary = obj.get("summary", "")
    if summary is None:
        summary = ""
    if not isinstance(summary, str):
        raise InvalidInput("summary", f"expected a string, got {type(summary).__name__}")
    _check_utf8("summary", summary)
    if "\x00" in summary:
        # PostgreSQL text cannot hold a NUL: refused here on every backend, so the same
        # journal ingests (and migrates) the same way, and one bad line never fails its batch.
        raise InvalidInput("summary", "cannot hold a NUL (0x00) character")
    if len(summary) > settings.max_text_chars:
        raise InvalidInput(
            "summary",
            f"{len(summary)} characters is over the cap of {settings.max_text_chars} "
            "(EPISODIC_MAX_TEXT_CHARS)",
        )

    payload = _opt_object(obj, "payload")
    refs = _opt_object(obj, "refs")
    # What JSON output cannot carry (too deep, NaN, ...) would break every read that
    # returns it; a lone surrogate cannot be stored as UTF-8 (PostgreSQL failed the batch).
    check_json("payload", payload, check_text=may_hold_surrogates)
    check_json("refs", refs, check_text=may_hold_surrogates)
    if (
        source_bytes is not None
        and source_bytes * _MAX_REENCODE_GROWTH <= settings.max_payload_bytes
    ):
        payload_bytes = 0
    else:
        try:
            payload_bytes = len(json.dumps(payload, ensure_ascii=False).encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidInput("payload", "contains text that is not valid UTF-8") from None
    if payload_bytes > settings.max_payload_bytes:
        raise InvalidInput(
            "payload",
            f"{payload_bytes} bytes is over the cap of {settings.max_payload_bytes} "
            "(EPISODIC_MAX_PAYLOAD_BYTES)",
        )
    _check_refs(refs)
    conversation = ids["conversation"]
    if event_type == MESSAGE_TYPE:
        _check_message(conversation, payload)
    check_says_something(event_type, severity.lower(), summary, payload, refs)

    return Event(
        id=event_id,
        workspace=workspace,
        ts=_parse_ts(obj.get("ts"), now),
        type=event_type,
        severity=known,
        summary=summary,
        payload=payload,
        refs=refs,
        crew=ids["crew"],
        agent=ids["agent"],
        resource=ids["resource"],
        conversation=conversation,
    )


def check_says_something(
    event_type: str,
    severity: str,
    summary: str,
    payload: Mapping[str, Any],
    refs: Mapping[str, Any],
) -> None:
    """An event admission would make a memory of needs a summary or a payload: with
    neither, the memory would read "peer.escalation: {}", junk that recall returns.
    (A chat message with no text is stored and never becomes a memory.)"""
    if event_type == MESSAGE_TYPE or summary.strip() or payload:
        return
    if admit(event_type, severity, payload, refs):
        raise InvalidInput(
            "summary",
            f"a {event_type} event becomes a memory: say what happened in its summary "
            "(or give a payload)",
        )


def read_jsonl(
    lines: Iterable[bytes | str],
    *,
    settings: Settings,
    now: datetime,
    deprecated: set[str] | None = None,
) -> Iterator[tuple[int, Event | LineError]]:
    """Parse JSON lines; yield (line number, event or error). Blank lines are skipped.

    Bytes are decoded per line so one line of bad UTF-8 costs only that line."""
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, LineError(number, "line", f"not valid UTF-8 ({exc.reason})")
                continue
        else:
            text = raw
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            yield (
                number,
                LineError(number, "json", f"malformed JSON: {exc.msg} at column {exc.colno}"),
            )
            continue
        except ValueError as exc:
            # Valid JSON Python refuses to hold: an integer of over 4300 digits.
            yield number, LineError(number, "json", f"unreadable JSON: {exc}")
            continue
        except RecursionError:
            yield number, LineError(number, "json", "unreadable JSON: nested too deeply")
            continue
        try:
            yield (
                number,
                parse_event(
                    obj,
                    settings=settings,
                    now=now,
                    source_bytes=len(raw) if isinstance(raw, bytes) else 4 * len(raw),
                    may_hold_surrogates=not isinstance(raw, bytes)
                    or _SURROGATE_ESCAPE.search(text) is not None,
                    deprecated=deprecated,
                ),
            )
        except InvalidInput as exc:
            yield number, LineError(number, exc.field, exc.message)


def _ids(obj: Mapping[str, Any], deprecated: set[str] | None) -> dict[str, str | None]:
    """The id fields under their current names, read from the old name where the object
    uses that (both given and different: refused, naming the old one)."""
    ids = {name: opt_id(obj, name) for name in ID_FIELDS}
    for old, name in OLD_ID_FIELDS.items():
        if old not in obj:
            continue
        value = opt_id(obj, old)
        if name in obj and value != ids[name]:
            raise InvalidInput(old, f"the old name of {name!r}, which says otherwise; give one")
        ids[name] = value
        if deprecated is not None:
            deprecated.add(old)
    return ids


def _field_name(key: str) -> str:
    """A key as an error names it: quoted when it is empty, padded or holds characters
    that would hide it or break the error's line."""
    return key if key and key.isprintable() and key.strip() == key else repr(key)


def opt_id(obj: Mapping[str, Any], name: str) -> str | None:
    """The id ``obj[name]``: stripped text of at most ``MAX_ID_CHARS`` characters with no
    control characters; None when absent or empty; ``InvalidInput`` naming ``name``
    otherwise."""
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(name, f"expected a string, got {type(value).__name__}")
    value = value.strip()
    if not value:
        return None
    if len(value) > MAX_ID_CHARS:
        raise InvalidInput(name, f"longer than {MAX_ID_CHARS} characters")
    bad = _ID_UNSAFE.search(value)
    if bad:
        if "\ud800" <= bad.group() <= "\udfff":
            raise InvalidInput(name, "contains text that is not valid UTF-8")
        raise InvalidInput(name, "contains control characters")
    return value


def _opt_object(obj: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = obj.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(name, f"expected a JSON object, got {type(value).__name__}")
    return dict(value)


def _check_message(conversation: str | None, payload: Mapping[str, Any]) -> None:
    """A chat message belongs to a conversation and says who spoke."""
    if conversation is None:
        raise InvalidInput(
            "conversation", "required for a message (the conversation it belongs to)"
        )
    role = payload.get("role")
    if role not in ROLES:
        raise InvalidInput(
            "payload.role",
            f"a message needs a role, one of {'|'.join(ROLES)}; got {role!r}",
        )
    name = payload.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidInput("payload.name", f"expected a string, got {type(name).__name__}")


def _check_refs(refs: Mapping[str, Any]) -> None:
    if "episodic" in refs and not isinstance(refs["episodic"], bool):
        raise InvalidInput("refs.episodic", "expected true or false")
    priority = refs.get("priority")
    if priority is not None and priority not in PRIORITIES:
        raise InvalidInput(
            "refs.priority", f"unknown priority {priority!r}; use one of {'|'.join(PRIORITIES)}"
        )


def _check_utf8(name: str, value: str) -> None:
    # Lone surrogates (from "\ud800" escapes or surrogateescape decoding) cannot be stored
    # as UTF-8; refuse them here rather than fail deep inside the database driver.
    if _SURROGATE.search(value):
        raise InvalidInput(name, "contains text that is not valid UTF-8")


def _parse_ts(value: Any, now: datetime) -> datetime:
    if value is None or value == "":
        return now
    if not isinstance(value, str):  # JSON has no time type: a journal line holds text
        raise InvalidInput("ts", f"expected an ISO 8601 string, got {type(value).__name__}")
    return parse_time("ts", value)


def parse_time(field: str, value: Any) -> datetime:
    """An ISO 8601 time (or a ``datetime``) in UTC; a naive one is taken as UTC.
    ``InvalidInput`` naming ``field`` when it is not one."""
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInput(field, f"not an ISO 8601 time: {value!r}") from None
    else:
        raise InvalidInput(field, f"expected an ISO 8601 string, got {type(value).__name__}")
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)  # naive times are taken as UTC
    try:
        return ts.astimezone(UTC)
    except OverflowError:
        # 0001-01-01T00:00+01:00 is a valid ISO time whose UTC falls before year 1.
        raise InvalidInput(field, f"out of range in UTC: {value!r}") from None
