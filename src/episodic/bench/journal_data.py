"""The journal-shaped recall set: its files, and the journal generated from them.

A set is a folder of three JSON files:

- ``journal.json``: the workspace, its agents and their crews, the number of simulated
  days, the seed, and the routine filler agents write (templates with slots, a weight
  each, per-day counts) and the routine recalls a runtime makes;
- ``storylines.json``: the hand-written events that carry the facts (each with a stable
  id, a day and a time) and the recalls agents make along the way;
- ``queries.json``: the questions asked at the end, each with the ids that answer it
  (and, for a fact that changed, the ids that answered it before).

The journal is generated from these with a seeded RNG, so the same folder always gives
the same events with the same ids; nothing generated needs to be kept in git.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from episodic.errors import InvalidInput

CONFIG_FILE = "journal.json"
STORYLINES_FILE = "storylines.json"
QUERIES_FILE = "queries.json"
# Agents write between these hours (UTC); the runtime ingests a day after the last one.
WORKDAY_START_H = 8
WORKDAY_END_H = 20
_CLOCK = re.compile(r"([01]\d|2[0-3]):[0-5]\d")


@dataclass(frozen=True, slots=True)
class Template:
    """A kind of routine entry: its type and severity, a text with ``{slot}`` names from
    the vocabulary (``{agent}`` is the writer), and how often it is written."""

    type: str
    text: str
    weight: float
    severity: str = "info"
    refs: Mapping[str, Any] = field(default_factory=dict)
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    relevant: tuple[str, ...]
    kind: str
    agent: str | None = None
    # Entries that answered the query once and no longer do (a value since changed, a
    # decision since reversed): ranking one above the current answer is the stale error.
    superseded: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Recall:
    """A recall a runtime makes during the run (marked: it feeds references)."""

    day: int
    text: str
    agent: str


@dataclass(frozen=True, slots=True)
class JournalSet:
    path: Path
    workspace: str
    start: date
    days: int
    seed: int
    agents: Mapping[str, str]  # agent -> crew
    vocab: Mapping[str, tuple[str, ...]]
    filler: tuple[Template, ...]
    filler_per_day: tuple[int, int]
    recall_templates: tuple[str, ...]
    recalls_per_day: int
    stories: tuple[Mapping[str, Any], ...]  # hand-written events, as in the file
    story_recalls: tuple[Recall, ...]
    queries: tuple[Query, ...]


@dataclass(frozen=True, slots=True)
class Day:
    """One simulated day: the events written in it (ingest shape, by time) and the
    recalls made at its end."""

    number: int
    end: datetime
    events: tuple[dict[str, Any], ...]
    recalls: tuple[Recall, ...]


def _read(path: Path) -> Any:
    if not path.is_file():
        raise InvalidInput("data", f"no such file: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput("data", f"{path} is not a readable JSON file: {exc}") from None


def _need(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, Mapping) or key not in obj:
        raise InvalidInput("data", f"{where}: missing {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InvalidInput("data", f"{where}.{key}: wrong type {type(value).__name__}")
    return value


def load_set(folder: Path | str) -> JournalSet:
    """Read and check a set's three files; ``InvalidInput`` naming ``data`` otherwise."""
    path = Path(folder)
    if not path.is_dir():
        raise InvalidInput("data", f"no such folder: {path}")
    config = _read(path / CONFIG_FILE)
    where = CONFIG_FILE
    agents = _need(config, "agents", dict, where)
    if not agents or not all(isinstance(c, str) and c for c in agents.values()):
        raise InvalidInput("data", f"{where}.agents: expected agent names mapped to crews")
    vocab = {k: tuple(v) for k, v in _need(config, "vocab", dict, where).items()}
    if not all(words and all(isinstance(w, str) for w in words) for words in vocab.values()):
        raise InvalidInput("data", f"{where}.vocab: expected non-empty lists of words")
    filler = tuple(
        Template(
            type=_need(t, "type", str, f"{where}.filler[{i}]"),
            text=_need(t, "text", str, f"{where}.filler[{i}]"),
            weight=float(_need(t, "weight", (int, float), f"{where}.filler[{i}]")),
            severity=t.get("severity", "info"),
            refs=t.get("refs", {}),
            payload=t.get("payload", {}),
        )
        for i, t in enumerate(_need(config, "filler", list, where))
    )
    per_day = _need(config, "filler_per_day", list, where)
    if len(per_day) != 2 or not all(isinstance(n, int) for n in per_day):
        raise InvalidInput("data", f"{where}.filler_per_day: expected [fewest, most]")
    low, high = per_day
    try:
        start = date.fromisoformat(_need(config, "start", str, where))
    except ValueError:
        raise InvalidInput("data", f"{where}.start: not a date (YYYY-MM-DD)") from None
    stories_file = _read(path / STORYLINES_FILE)
    stories = tuple(_need(stories_file, "events", list, STORYLINES_FILE))
    story_recalls = tuple(
        Recall(
            day=_need(r, "day", int, f"{STORYLINES_FILE}.recalls[{i}]"),
            text=_need(r, "query", str, f"{STORYLINES_FILE}.recalls[{i}]"),
            agent=_need(r, "agent", str, f"{STORYLINES_FILE}.recalls[{i}]"),
        )
        for i, r in enumerate(stories_file.get("recalls", []))
    )
    raw_queries = _read(path / QUERIES_FILE)
    if not isinstance(raw_queries, list) or not raw_queries:
        raise InvalidInput("data", f"{QUERIES_FILE}: expected a non-empty list of queries")
    queries = tuple(_query(q, f"{QUERIES_FILE}[{i}]") for i, q in enumerate(raw_queries))
    result = JournalSet(
        path=path,
        workspace=_need(config, "workspace", str, where),
        start=start,
        days=_need(config, "days", int, where),
        seed=_need(config, "seed", int, where),
        agents=agents,
        vocab=vocab,
        filler=filler,
        filler_per_day=(int(low), int(high)),
        recall_templates=tuple(config.get("recall_templates", [])),
        recalls_per_day=int(config.get("recalls_per_day", 0)),
        stories=stories,
        story_recalls=story_recalls,
        queries=queries,
    )
    _check(result)
    return result


def _query(q: Any, where: str) -> Query:
    relevant = _need(q, "relevant", list, where)
    if not relevant or not all(isinstance(r, str) for r in relevant):
        raise InvalidInput("data", f"{where}.relevant: expected a non-empty list of event ids")
    agent = q.get("agent")
    superseded = q.get("superseded", [])
    if not isinstance(superseded, list) or not all(isinstance(r, str) for r in superseded):
        raise InvalidInput("data", f"{where}.superseded: expected a list of event ids")
    return Query(
        id=_need(q, "id", str, where),
        text=_need(q, "query", str, where),
        relevant=tuple(relevant),
        kind=q.get("kind", "other"),
        agent=agent if isinstance(agent, str) else None,
        superseded=tuple(superseded),
    )


def _check(s: JournalSet) -> None:
    """Cross-file checks: every agent known, every judged id a story event, ids unique."""
    ids: set[str] = set()
    for i, event in enumerate(s.stories):
        where = f"{STORYLINES_FILE}.events[{i}]"
        event_id = _need(event, "id", str, where)
        if event_id in ids:
            raise InvalidInput("data", f"{where}: id {event_id!r} repeats")
        ids.add(event_id)
        day = _need(event, "day", int, where)
        if not 0 <= day < s.days:
            raise InvalidInput("data", f"{where}.day: outside 0..{s.days - 1}")
        if _need(event, "agent", str, where) not in s.agents:
            raise InvalidInput("data", f"{where}.agent: unknown agent {event['agent']!r}")
        if not _CLOCK.fullmatch(event.get("at", "12:00")):
            raise InvalidInput("data", f"{where}.at: expected a time of day, HH:MM")
        _need(event, "type", str, where)
        _need(event, "summary", str, where)
    for recall in s.story_recalls:
        if recall.agent not in s.agents:
            raise InvalidInput("data", f"{STORYLINES_FILE}.recalls: unknown agent {recall.agent!r}")
    seen: set[str] = set()
    for q in s.queries:
        if q.id in seen:
            raise InvalidInput("data", f"{QUERIES_FILE}: query id {q.id!r} repeats")
        seen.add(q.id)
        missing = [r for r in (*q.relevant, *q.superseded) if r not in ids]
        if missing:
            raise InvalidInput("data", f"{QUERIES_FILE} {q.id}: no story event {missing[0]!r}")
        if q.agent is not None and q.agent not in s.agents:
            raise InvalidInput("data", f"{QUERIES_FILE} {q.id}: unknown agent {q.agent!r}")


def _fill(text: str, vocab: Mapping[str, Sequence[str]], rng: random.Random, agent: str) -> str:
    """The template with each ``{slot}`` replaced by a seeded choice from its list."""
    values: dict[str, str] = {"agent": agent}
    for _, slot, _, _ in string.Formatter().parse(text):
        if slot and slot not in values:
            if slot not in vocab:
                raise InvalidInput("data", f"{CONFIG_FILE}: template slot {{{slot}}} has no vocab")
            values[slot] = rng.choice(vocab[slot])
    return text.format(**values)


def _at(s: JournalSet, day: int, hhmm: str) -> datetime:
    hour, minute = (int(part) for part in hhmm.split(":"))
    return datetime.combine(s.start + timedelta(days=day), time(hour, minute), tzinfo=UTC)


def _event(s: JournalSet, event_id: str, ts: datetime, agent: str, **fields: Any) -> dict[str, Any]:
    event = {
        "id": event_id,
        "workspace": s.workspace,
        "ts": ts.isoformat(),
        "agent": agent,
        "crew": s.agents[agent],
    }
    event.update({k: v for k, v in fields.items() if v})
    return event


def generate(s: JournalSet) -> list[Day]:
    """The whole journal, day by day. Deterministic: the same set gives the same events
    (ids, times, texts) and recalls on every run."""
    rng = random.Random(s.seed)
    agents = sorted(s.agents)
    weights = [t.weight for t in s.filler]
    stories_by_day: dict[int, list[Mapping[str, Any]]] = {}
    for story in s.stories:
        stories_by_day.setdefault(story["day"], []).append(story)
    days: list[Day] = []
    for number in range(s.days):
        events: list[dict[str, Any]] = []
        for n in range(rng.randint(*s.filler_per_day)):
            template = rng.choices(s.filler, weights)[0]
            agent = rng.choice(agents)
            minute = rng.randrange(WORKDAY_START_H * 60, WORKDAY_END_H * 60)
            ts = _at(s, number, f"{minute // 60}:{minute % 60}") + timedelta(
                seconds=rng.randrange(60)
            )
            events.append(
                _event(
                    s,
                    f"f{number:02d}-{n:03d}",
                    ts,
                    agent,
                    type=template.type,
                    severity=template.severity,
                    summary=_fill(template.text, s.vocab, rng, agent),
                    refs=dict(template.refs),
                    payload=dict(template.payload),
                )
            )
        for story in stories_by_day.get(number, []):
            events.append(
                _event(
                    s,
                    story["id"],
                    _at(s, number, story.get("at", "12:00")),
                    story["agent"],
                    type=story["type"],
                    severity=story.get("severity", "info"),
                    summary=story["summary"],
                    refs=dict(story.get("refs", {})),
                    payload=dict(story.get("payload", {})),
                )
            )
        events.sort(key=lambda e: (e["ts"], e["id"]))
        recalls = [r for r in s.story_recalls if r.day == number]
        for _ in range(s.recalls_per_day if s.recall_templates else 0):
            agent = rng.choice(agents)
            text = _fill(rng.choice(s.recall_templates), s.vocab, rng, agent)
            recalls.append(Recall(number, text, agent))
        end = _at(s, number, f"{WORKDAY_END_H}:00")
        days.append(Day(number, end, tuple(events), tuple(recalls)))
    return days
