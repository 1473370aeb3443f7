"""BEAM read into the LoCoMo harness's shape: one user talking with an assistant.

A BEAM folder holds one sub-folder per conversation, each with ``chat.json`` (batches of
sessions of messages ``{role, id, content}``; a batch's first user message carries its
``time_anchor`` like "March-15-2024") and ``probing_questions.json`` (ability name to
questions, each naming its evidence messages in ``source_chat_ids``: a list, a list of
lists, or an object of lists). Questions without evidence (abstention) cannot be scored
by retrieval: they are kept with no evidence, so the harness leaves them out and counts
them. See ``/work/shared/data/README.md`` for the shape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.bench.locomo import MONTHS, Conversation, Question, Turn
from episodic.errors import InvalidInput

CHAT_FILE = "chat.json"
QUESTIONS_FILE = "probing_questions.json"
WORKSPACE_PREFIX = "beam"
# Time between sessions of one batch: each is a sitting of its own, in order.
SESSION_GAP = timedelta(hours=1)

# User messages end with the generator's index marker ("... ->-> 1,12"): not the user's
# words, so it is stripped before the text is stored or embedded.
_INDEX_MARKER = re.compile(r"\s*->->\s*\d+\s*(?:,\s*\d+\s*)*$")
_ANCHOR = re.compile(r"([A-Za-z]+)-(\d{1,2})-(\d{4})")


def strip_index_marker(text: str) -> str:
    """``text`` without a trailing "->-> 1,1" index marker."""
    return _INDEX_MARKER.sub("", text)


def parse_anchor(text: str, where: str) -> datetime:
    """``"March-15-2024"`` as midnight UTC of that day."""
    m = _ANCHOR.fullmatch(text.strip())
    month = MONTHS.get(m.group(1).lower()) if m else None
    if m is None or month is None:
        raise InvalidInput("data", f"{where}: cannot read the time anchor {text!r}")
    try:
        return datetime(int(m.group(3)), month, int(m.group(2)), tzinfo=UTC)
    except ValueError:
        raise InvalidInput("data", f"{where}: no such date: {text!r}") from None


def evidence_ids(raw: Any) -> list[str]:
    """Every message id ``source_chat_ids`` names, in order, each once: it may be a list,
    a list of lists, or an object of lists (the statements a question compares)."""
    found: dict[str, None] = {}

    def walk(value: Any) -> Iterator[str]:
        if isinstance(value, Mapping):
            for item in value.values():
                yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)
        elif isinstance(value, int) and not isinstance(value, bool):
            yield str(value)
        elif isinstance(value, str) and value.strip().isdigit():
            yield value.strip()

    for item in walk(raw):
        found.setdefault(item, None)
    return list(found)


# The two statements of a fact that changed, as a knowledge update's source_chat_ids name
# them. (A contradiction's two statements are not in time order, nor always two messages.)
CHANGED_KEYS = (("original_info", "updated_info"),)


def _changed(raw: Any, session_of: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The message ids stating a changed fact first and then again, changed; empty when
    the question names no such pair."""
    if not isinstance(raw, Mapping):
        return (), ()
    for before, after in CHANGED_KEYS:
        if before in raw and after in raw:
            first = tuple(e for e in evidence_ids(raw[before]) if e in session_of)
            then = tuple(e for e in evidence_ids(raw[after]) if e in session_of)
            if first and then:
                return first, then
    return (), ()


def load_beam(path: Path | str) -> list[Conversation]:
    """Read a BEAM folder (one sub-folder per conversation); raise ``InvalidInput``
    naming what is wrong with it. Conversations come in the order of their folder names
    (numbers numerically)."""
    root = Path(path)
    if not root.is_dir():
        raise InvalidInput("data", f"{root}: a BEAM folder (one sub-folder per conversation)")
    folders = sorted(
        (p for p in root.iterdir() if (p / CHAT_FILE).is_file()),
        key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name),
    )
    if not folders:
        raise InvalidInput("data", f"{root}: no sub-folder holds a {CHAT_FILE}")
    return [_conversation(folder) for folder in folders]


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput("data", f"{path} is not a readable JSON file: {exc}") from None


def _conversation(folder: Path) -> Conversation:
    sample_id = folder.name
    batches = _read(folder / CHAT_FILE)
    if not isinstance(batches, list) or not batches:
        raise InvalidInput("data", f"{folder / CHAT_FILE}: expected a non-empty list of batches")
    turns: list[Turn] = []
    day: datetime | None = None
    for b, batch in enumerate(batches, start=1):
        where = f"{sample_id}: batch {b}"
        sessions = batch.get("turns") if isinstance(batch, Mapping) else None
        if not isinstance(sessions, list):
            raise InvalidInput("data", f"{where}: expected an object with a 'turns' list")
        day = _batch_day(batch, sessions, where, day)
        for s, messages in enumerate(sessions, start=1):
            if not isinstance(messages, list):
                raise InvalidInput("data", f"{where}, session {s}: expected a list of messages")
            start = day + (s - 1) * SESSION_GAP
            session = f"batch_{b}.session_{s}"
            written = start.date().isoformat()
            for i, message in enumerate(messages):
                turns.append(
                    _turn(message, f"{where}, session {s}[{i}]", session, written, start, i)
                )
    if not turns:
        raise InvalidInput("data", f"{sample_id}: no messages")
    session_of = {t.dia_id: t.session for t in turns}
    if len(session_of) != len(turns):
        raise InvalidInput("data", f"{sample_id}: message ids repeat")
    questions = _questions(folder, session_of)
    return Conversation(sample_id, tuple(turns), questions, session_of, WORKSPACE_PREFIX)


def _batch_day(
    batch: Mapping[str, Any], sessions: list[Any], where: str, previous: datetime | None
) -> datetime:
    """The batch's day: its own ``time_anchor``, or its first message's; a batch with
    none follows the one before by a day."""
    anchor = batch.get("time_anchor")
    if not isinstance(anchor, str):
        first = next((m for s in sessions if isinstance(s, list) for m in s), None)
        anchor = first.get("time_anchor") if isinstance(first, Mapping) else None
    if isinstance(anchor, str):
        return parse_anchor(anchor, where)
    if previous is None:
        raise InvalidInput("data", f"{where}: no time_anchor on the batch or its first message")
    return previous + timedelta(days=1)


def _turn(message: Any, where: str, session: str, written: str, start: datetime, i: int) -> Turn:
    if not isinstance(message, Mapping):
        raise InvalidInput("data", f"{where}: expected a JSON object")
    role, number, content = message.get("role"), message.get("id"), message.get("content")
    if role not in ("user", "assistant"):
        raise InvalidInput("data", f"{where}: role must be user or assistant, got {role!r}")
    if not isinstance(number, int) or isinstance(number, bool):
        raise InvalidInput("data", f"{where}: no integer id")
    if not isinstance(content, str):
        raise InvalidInput("data", f"{where}: content is not a string")
    text = strip_index_marker(content) if role == "user" else content
    return Turn(
        dia_id=str(number),
        speaker=role,
        text=text,
        session=session,
        session_date=written,
        ts=start + timedelta(seconds=i),
    )


def _questions(folder: Path, session_of: Mapping[str, str]) -> tuple[Question, ...]:
    path = folder / QUESTIONS_FILE
    raw = _read(path)
    if not isinstance(raw, Mapping):
        raise InvalidInput("data", f"{path}: expected an object of abilities")
    questions: list[Question] = []
    for ability in sorted(raw):
        items = raw[ability]
        if not isinstance(items, list):
            raise InvalidInput("data", f"{path}: {ability} is not a list of questions")
        for n, item in enumerate(items):
            text = item.get("question") if isinstance(item, Mapping) else None
            if not isinstance(text, str):
                raise InvalidInput("data", f"{path}: {ability}[{n}] has no question text")
            named = evidence_ids(item.get("source_chat_ids"))
            questions.append(
                Question(
                    text=text.strip(),
                    category=str(ability),
                    # Ids that name no message are dropped, never guessed at.
                    evidence=tuple(e for e in named if e in session_of),
                    raw_evidence=tuple(named),
                    changed=_changed(item.get("source_chat_ids"), session_of),
                )
            )
    return tuple(questions)
