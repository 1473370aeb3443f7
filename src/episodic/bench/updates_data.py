"""The updates benchmark's scenarios: reading ``scenarios.jsonl`` into checked values.

One JSON object a line (``benchmarks/updates/make_scenarios.py`` writes them): an id, a
kind (``update``: the fact changes; ``control``: only look-alikes of a change), a form
(``conversation``: chat messages; ``journal``: events), the question, the value that
answers it at the end (``current``), the values that answered it before (``stale``,
oldest first) and the writes in time order. Each write is a chat ``message``
(``id, ts, role, content, conversation``) or a journal ``event`` (the shape
``Episodic.ingest`` takes, without a workspace: each scenario gets its own), with a
``fact`` label the runner does not read. A bad line is refused with its line number and
the field at fault.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from episodic.errors import InvalidInput

KINDS = ("update", "control")
FORMS = ("conversation", "journal")
MESSAGE_KEYS = ("id", "ts", "role", "content", "conversation")


@dataclass(frozen=True, slots=True)
class Write:
    """One thing said or logged: a chat message or a journal event (never both)."""

    ts: datetime
    fact: str
    message: Mapping[str, Any] | None = None
    event: Mapping[str, Any] | None = None

    @property
    def text(self) -> str:
        if self.message is not None:
            return str(self.message["content"])
        assert self.event is not None
        return str(self.event.get("summary", ""))


@dataclass(frozen=True, slots=True)
class Scenario:
    id: str
    kind: str
    form: str
    question: str
    current: str
    stale: tuple[str, ...]
    writes: tuple[Write, ...]

    @property
    def values(self) -> tuple[str, ...]:
        """Every value the fact had, oldest first; the last is the current one."""
        return (*self.stale, self.current)


def load_scenarios(path: Path | str, limit: int | None = None) -> list[Scenario]:
    """The scenarios of a JSON-lines file, in file order; ``limit`` keeps the first N of
    each kind, so a short run still has controls."""
    path = Path(path)
    if limit is not None and limit < 1:
        raise InvalidInput("limit", f"must be at least 1, got {limit}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("scenarios", f"cannot read {path}: {exc}") from None
    scenarios: list[Scenario] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput("scenarios", f"{path}:{number}: not JSON: {exc}") from None
        scenarios.append(_scenario(obj, f"{path}:{number}"))
    ids = [s.id for s in scenarios]
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise InvalidInput("id", f"{path}: scenario ids used twice: {', '.join(twice)}")
    if not scenarios:
        raise InvalidInput("scenarios", f"{path} holds no scenario")
    if limit is None:
        return scenarios
    return [s for kind in KINDS for s in [x for x in scenarios if x.kind == kind][:limit]]


def _text(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(key, f"{where}: expected a non-empty string")
    return value


def _choice(obj: Mapping[str, Any], key: str, allowed: Sequence[str], where: str) -> str:
    value = _text(obj, key, where)
    if value not in allowed:
        raise InvalidInput(key, f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return value


def _ts(obj: Mapping[str, Any], where: str) -> datetime:
    text = _text(obj, "ts", where)
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput("ts", f"{where}: not an ISO 8601 time: {text!r}") from None
    if ts.tzinfo is None:
        raise InvalidInput("ts", f"{where}: needs a time zone: {text!r}")
    return ts


def _scenario(obj: Any, where: str) -> Scenario:
    if not isinstance(obj, Mapping):
        raise InvalidInput("scenarios", f"{where}: expected a JSON object")
    sid = _text(obj, "id", where)
    where = f"{where} ({sid})"
    form = _choice(obj, "form", FORMS, where)
    stale = obj.get("stale")
    if not isinstance(stale, list) or not all(isinstance(v, str) and v for v in stale):
        raise InvalidInput("stale", f"{where}: expected a list of non-empty strings")
    raw = obj.get("writes")
    if not isinstance(raw, list) or not raw:
        raise InvalidInput("writes", f"{where}: expected a non-empty list")
    writes = tuple(_write(w, form, f"{where} write {i}") for i, w in enumerate(raw, start=1))
    scenario = Scenario(
        id=sid,
        kind=_choice(obj, "kind", KINDS, where),
        form=form,
        question=_text(obj, "question", where),
        current=_text(obj, "current", where),
        stale=tuple(stale),
        writes=tuple(sorted(writes, key=lambda w: w.ts)),
    )
    if scenario.kind == "control" and scenario.stale:
        raise InvalidInput("stale", f"{where}: a control has no stale value")
    if not any(scenario.current.lower() in w.text.lower() for w in writes):
        raise InvalidInput("current", f"{where}: no write says {scenario.current!r}")
    return scenario


def _write(obj: Any, form: str, where: str) -> Write:
    if not isinstance(obj, Mapping):
        raise InvalidInput("writes", f"{where}: expected a JSON object")
    fact = obj.get("fact", "")
    key = "message" if form == "conversation" else "event"
    body = obj.get(key)
    if not isinstance(body, Mapping):
        raise InvalidInput(key, f"{where}: a {form} scenario's write needs a {key} object")
    if key == "message":
        extra = sorted(set(body) - set(MESSAGE_KEYS))
        if extra:
            raise InvalidInput(extra[0], f"{where}: a message has only {', '.join(MESSAGE_KEYS)}")
        for name in ("id", "content", "role", "conversation"):
            _text(body, name, where)
    else:
        _text(body, "id", where)
        if "workspace" in body:
            raise InvalidInput("workspace", f"{where}: the runner gives each scenario its own")
    return Write(ts=_ts(body, where), fact=str(fact), **{key: dict(body)})
