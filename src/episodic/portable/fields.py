"""Reading frontmatter fields: each reader takes the parsed YAML mapping and a field name
and returns a typed value, or raises ``InvalidInput`` naming the field. Shared by the
plain layout (``episodic.portable``) and the TeaParty layout
(``episodic.portable.teaparty``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

import yaml

from episodic.errors import InvalidInput
from episodic.payloads import check_json


def load_frontmatter(text: str) -> Mapping[Any, Any]:
    """The key: value lines of a frontmatter block (between its '---' lines) as parsed
    YAML; ``InvalidInput`` on field "frontmatter" when they are not such lines."""
    try:
        head = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput("frontmatter", f"not valid YAML: {exc}") from None
    except ValueError as exc:
        # YAML that parses but holds no Python value: 2026-02-30, a 5000-digit integer.
        raise InvalidInput("frontmatter", f"unreadable YAML value: {exc}") from None
    except RecursionError:
        raise InvalidInput("frontmatter", "unreadable YAML: nested too deeply") from None
    if not isinstance(head, Mapping):
        raise InvalidInput("frontmatter", "expected key: value lines")
    return head


def holds_surrogate(value: object) -> bool:
    try:
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (TypeError, ValueError, RecursionError):
        return False  # not JSON at all: the field's own check names it
    return False


def required(head: Mapping[str, Any], name: str) -> str:
    value = text_field(head, name)
    if not value or not value.strip():
        raise InvalidInput(name, "required")
    return value


def text_field(head: Mapping[str, Any], name: str) -> str | None:
    value = head.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidInput(name, "expected text")
    return str(value)


def mapping_field(head: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = head.get(name, {})
    if not isinstance(value, Mapping):
        raise InvalidInput(name, "expected key: value pairs")
    try:
        out: dict[str, Any] = json.loads(json.dumps(value, default=_json_default))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(name, f"not representable as JSON: {exc}") from None
    check_json(name, out)  # YAML's .nan, .inf and deep nesting would break every read
    return out


def _json_default(value: object) -> str:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def number_field(
    head: Mapping[str, Any], name: str, default: float, *, low: float, high: float
) -> float:
    value = head.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InvalidInput(name, f"expected a number from {low:g} to {high:g}")
    return float(value)


def opt_number_field(head: Mapping[str, Any], name: str) -> float | None:
    value = head.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(name, "expected a number")
    return float(value)


def when_field(head: Mapping[str, Any], name: str) -> datetime | None:
    value = head.get(name)
    if value is None:
        return None
    if isinstance(value, datetime):
        stamp = value
    elif isinstance(value, date):
        stamp = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(
                name, "expected an ISO 8601 time, e.g. 2026-03-01T09:30:00Z"
            ) from None
    else:
        raise InvalidInput(name, "expected an ISO 8601 time")
    try:
        return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)
    except OverflowError:
        # 0001-01-01T00:00+01:00 is a valid ISO time whose UTC falls before year 1.
        raise InvalidInput(name, "out of range in UTC") from None
