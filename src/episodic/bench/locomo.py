"""LoCoMo recall benchmark: every conversation in its own workspace, one turn per memory.

The questions are asked through ``Episodic.recall`` exactly as an agent would, at the
time the conversation ends; the answers and evidence are read only to score the ranking.
See ``/work/shared/data/README.md`` for the file's shape and the metric.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.bench.harness import BenchClock, bench_memory
from episodic.bench.metrics import (
    DEPTH,
    METRIC_KEYS,
    mean_scores,
    parse_evidence,
    percentile,
    score_ranking,
    to_sessions,
    update_order,
)
from episodic.bench.superseded import count_superseded
from episodic.config import Settings
from episodic.errors import EmbedderError, InvalidInput, UnknownPolicy
from episodic.model import Memory
from episodic.recall.policies import POLICIES, RecallPolicy
from episodic.scoring.passages import extra_spans
from episodic.service import Episodic
from episodic.write.messages import spoken_content

GRANULARITIES = ("turn", "session")
# How conversations go in: each turn as a journal event ("turn"), or as chat messages that
# segmentation turns into episodes, entries and keys ("conversation").
INGEST_MODES = ("turn", "conversation")
# What a conversation-mode recall ranks: the turns themselves and the entries drawn from
# them (each credited to the turn its evidence was quoted from). Episodes span many
# turns; a ranking of turns has no honest single slot for one.
CONVERSATION_RECALL_TYPES = ("message", "entry")
# The most turns a recall returns (K_MAX): at session level, the turns behind the sessions.
SESSION_TURN_DEPTH = 50
CATEGORY_NAMES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
TURN_TYPE = "conversation.turn"

_SESSION_KEY = re.compile(r"session_(\d+)")
_SESSION_DATE = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*",
    re.IGNORECASE,
)
# Parsed by hand rather than with strptime("%B"), whose month names follow the locale.
MONTHS = {
    name: number
    for number, full in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
    for name in (full, full[:3])
}


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: str  # "session_3"
    session_date: str  # as written in the file: "1:56 pm on 8 May, 2023"
    ts: datetime  # the session's time plus the turn's index in seconds
    image_caption: str | None = None

    @property
    def summary(self) -> str:
        """What the memory holds: who spoke, the words said, and a description of a shared
        image ("Caroline: I went to the support group [image: ...]"), as a chat message
        reads; without the speaker, the dense leg cannot tell whose words these are."""
        text = f"{self.speaker}: {self.text}"
        if self.image_caption:
            return f"{text} [image: {self.image_caption}]".strip()
        return text


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    category: int | str  # LoCoMo's category number, or BEAM's ability name
    evidence: tuple[str, ...]  # ids that name a turn of the conversation; may be empty
    raw_evidence: tuple[str, ...]  # as written in the file
    # A question about a fact that changed (BEAM's knowledge updates and contradictions):
    # the ids that state it first and the ids that state it again, changed.
    changed: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    session_of: Mapping[str, str] = field(default_factory=dict)  # dia_id -> session key
    source: str = "locomo"  # the data set, the first part of the workspace's name

    @property
    def workspace(self) -> str:
        return f"{self.source}-{self.sample_id}"

    @property
    def end(self) -> datetime:
        """When the conversation ends: the time of its last turn."""
        return max(t.ts for t in self.turns)


# Reads a data set's path into conversations: ``load_locomo``, or BEAM's reader.
Loader = Callable[[Path | str], list[Conversation]]


@dataclass(frozen=True, slots=True)
class QuestionRun:
    """One question asked under one policy: what came back, its scores and latency."""

    policy: str
    conversation: str
    question: Question
    hit_ids: tuple[str, ...]  # memory ids of every hit, best first
    turns: tuple[str, ...]  # dia_ids of the hits from this conversation, best first
    ranking: tuple[str, ...]  # what was scored: turns, or their sessions
    relevant: tuple[str, ...]
    scores: Mapping[str, float]
    latency_ms: float


def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as a UTC datetime (LoCoMo gives no time zone)."""
    m = _SESSION_DATE.fullmatch(text)
    month = MONTHS.get(m.group(5).lower()) if m else None
    if m is None or month is None:
        raise InvalidInput("data", f"cannot read the session date {text!r}")
    hour, minute = int(m.group(1)), int(m.group(2))
    if not 1 <= hour <= 12 or minute > 59:
        raise InvalidInput("data", f"cannot read the session date {text!r}")
    hour = hour % 12 + (12 if m.group(3).lower() == "p" else 0)
    try:
        return datetime(int(m.group(6)), month, int(m.group(4)), hour, minute, tzinfo=UTC)
    except ValueError:
        raise InvalidInput("data", f"no such date: {text!r}") from None


def load_locomo(path: Path | str) -> list[Conversation]:
    """Read a LoCoMo file (a JSON list of conversations); raise ``InvalidInput`` naming
    what is wrong with it."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput("data", f"no such file: {path}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput("data", f"{path} is not a readable JSON file: {exc}") from None
    if not isinstance(raw, list) or not raw:
        raise InvalidInput("data", f"{path}: expected a non-empty JSON list of conversations")
    conversations = [_conversation(item, n) for n, item in enumerate(raw)]
    ids = [c.sample_id for c in conversations]
    if len(set(ids)) != len(ids):
        raise InvalidInput("data", f"{path}: conversation ids repeat: {sorted(ids)}")
    return conversations


def _conversation(item: Any, n: int) -> Conversation:
    if not isinstance(item, Mapping):
        raise InvalidInput("data", f"conversation {n}: expected a JSON object")
    sample_id = str(item.get("sample_id") or f"conv-{n}")
    body = item.get("conversation")
    if not isinstance(body, Mapping):
        raise InvalidInput("data", f"{sample_id}: no 'conversation' object")
    # Sessions are counted by their turn lists: some files carry dates of sessions that
    # were never written.
    sessions = sorted(
        ((int(m.group(1)), key) for key in body if (m := _SESSION_KEY.fullmatch(key))),
    )
    turns: list[Turn] = []
    for _, key in sessions:
        lines = body[key]
        if not isinstance(lines, list):
            raise InvalidInput("data", f"{sample_id}.{key}: expected a list of turns")
        if not lines:
            continue
        written = body.get(f"{key}_date_time")
        if not isinstance(written, str):
            raise InvalidInput("data", f"{sample_id}.{key}: no {key}_date_time")
        start = parse_session_date(written)
        for index, line in enumerate(lines):
            turns.append(_turn(line, f"{sample_id}.{key}[{index}]", key, written, start, index))
    if not turns:
        raise InvalidInput("data", f"{sample_id}: no turns")
    session_of = {t.dia_id: t.session for t in turns}
    if len(session_of) != len(turns):
        raise InvalidInput("data", f"{sample_id}: dia_ids repeat")
    qa = item.get("qa", [])
    if not isinstance(qa, list):
        raise InvalidInput("data", f"{sample_id}.qa: expected a list")
    questions = tuple(_question(q, f"{sample_id}.qa[{i}]", session_of) for i, q in enumerate(qa))
    return Conversation(sample_id, tuple(turns), questions, session_of)


def _turn(line: Any, where: str, session: str, written: str, start: datetime, i: int) -> Turn:
    if not isinstance(line, Mapping):
        raise InvalidInput("data", f"{where}: expected a JSON object")
    dia_id, speaker, text = line.get("dia_id"), line.get("speaker"), line.get("text", "")
    if not isinstance(dia_id, str) or not dia_id:
        raise InvalidInput("data", f"{where}: no dia_id")
    if not isinstance(speaker, str) or not speaker:
        raise InvalidInput("data", f"{where}: no speaker")
    if not isinstance(text, str):
        raise InvalidInput("data", f"{where}: text is not a string")
    caption = line.get("blip_caption")
    return Turn(
        dia_id=dia_id,
        speaker=speaker,
        text=text,
        session=session,
        session_date=written,
        ts=start + timedelta(seconds=i),
        image_caption=caption if isinstance(caption, str) and caption.strip() else None,
    )


def _question(q: Any, where: str, session_of: Mapping[str, str]) -> Question:
    if not isinstance(q, Mapping):
        raise InvalidInput("data", f"{where}: expected a JSON object")
    text, category, evidence = q.get("question"), q.get("category"), q.get("evidence", [])
    if not isinstance(text, str):
        raise InvalidInput("data", f"{where}: no question text")
    if not isinstance(category, int) or isinstance(category, bool):
        raise InvalidInput("data", f"{where}: category is not an integer")
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise InvalidInput("data", f"{where}: evidence is not a list of strings")
    return Question(
        text=text.strip(),
        category=category,
        evidence=tuple(parse_evidence(evidence, session_of)),
        raw_evidence=tuple(evidence),
    )


def turn_event(conversation: Conversation, turn: Turn) -> dict[str, Any]:
    """The journal event one turn is ingested as."""
    return {
        "id": f"{conversation.sample_id}/{turn.dia_id}",
        "workspace": conversation.workspace,
        "type": TURN_TYPE,
        "refs": {"episodic": True},  # admission keeps only events marked worth remembering
        "summary": turn.summary,
        "ts": turn.ts.isoformat(),
        "agent": turn.speaker,
        "conversation": turn.session,
        "payload": {
            "dia_id": turn.dia_id,
            "speaker": turn.speaker,
            "session": turn.session,
            "session_date": turn.session_date,
        },
    }


# A placeholder for reading what a turn's message says, apart from any conversation.
_NO_CONVERSATION = Conversation("", (), ())


def message_event(conversation: Conversation, turn: Turn) -> dict[str, Any]:
    """The chat message one turn is ingested as in conversation mode. LoCoMo's speakers
    are both people, so both speak as users, by name; BEAM's are a user and an assistant,
    each in their role. The session is the conversation (a chat thread per sitting, as in
    turn mode)."""
    text = turn.text
    if turn.image_caption:
        text = f"{text} [image: {turn.image_caption}]".strip()
    who: dict[str, str] = (
        {"role": turn.speaker}
        if turn.speaker in ("user", "assistant")
        else {"role": "user", "name": turn.speaker}
    )
    return {
        "id": f"{conversation.sample_id}/{turn.dia_id}",
        "workspace": conversation.workspace,
        "type": "message",
        "summary": text,
        "ts": turn.ts.isoformat(),
        "conversation": turn.session,
        "payload": {**who, "dia_id": turn.dia_id},
    }


def stored_text(turn: Turn, ingest: str) -> str:
    """The text a turn's memory holds: its summary as a journal event, or as a chat
    message what the message path stores (the text after the speaker's name, a role
    alone naming no one)."""
    if ingest != "conversation":
        return turn.summary
    event = message_event(_NO_CONVERSATION, turn)
    name = event["payload"].get("name")
    return spoken_content(event["payload"]["role"], event["summary"], name)


def resolve_policies(choice: str | None, known: Sequence[str] = ()) -> list[str]:
    """``all`` (or nothing): every registered policy; else comma-separated names, each a
    registered policy or one of ``known`` (a benchmark's own variants)."""
    known = [*POLICIES, *known]
    if choice is None or choice.strip().lower() == "all":
        return known
    names = list(dict.fromkeys(n.strip() for n in choice.split(",") if n.strip()))
    if not names:
        raise InvalidInput("policy", "no policy named; use a name or 'all'")
    for name in names:
        if name not in known:
            raise UnknownPolicy(name, sorted(known))
    return names


@dataclass(slots=True)
class Prepared:
    """A benchmark database with every conversation ingested (and indexed), ready for
    any number of policies to be asked its questions."""

    mem: Episodic
    clock: BenchClock
    conversations: list[Conversation]
    asked: list[tuple[Conversation, Question]]
    embedder: str  # the model id, or "none"


def check_policies(policies: Sequence[str]) -> list[str]:
    """The named policies, each once, in order; an unknown or missing one is an error."""
    names = list(dict.fromkeys(policies))
    if not names:
        raise InvalidInput("policy", "no policy to run")
    for name in names:
        if name not in POLICIES:
            raise UnknownPolicy(name, sorted(POLICIES))
    return names


@contextmanager
def prepare_locomo(
    data_path: Path | str,
    settings: Settings,
    *,
    say: Callable[[str], None],
    ingest: str = "turn",
    db_url: str | None = None,
    load: Loader | None = None,
) -> Iterator[Prepared]:
    """Load the data (with ``load``, LoCoMo's reader by default), ingest every
    conversation into a fresh database and index it."""
    if ingest not in INGEST_MODES:
        raise InvalidInput("ingest", f"use one of {'|'.join(INGEST_MODES)}")
    conversations = (load or load_locomo)(data_path)
    asked = [(c, q) for c in conversations for q in c.questions if q.evidence and q.text]
    if not asked:
        raise InvalidInput("data", f"{data_path}: no question has evidence to score against")

    # What each turn is stored as (a journal event's summary, or a chat message's content),
    # and a long one's later passages: embedded ahead, and cached across runs.
    stored = [stored_text(t, ingest) for c in conversations for t in c.turns]
    texts = stored + [q.text for _, q in asked]
    texts += [text[s.start : s.stop] for text in stored for s in extra_spans(text)]
    with bench_memory(settings, texts, say, db_url=db_url) as (mem, clock, model):
        if ingest == "conversation":
            _ingest_messages(mem, clock, conversations)
        else:
            _ingest(mem, clock, conversations)
        if model is not None:
            indexed = mem.index_once()
            if indexed.failed or indexed.error:
                raise EmbedderError(f"indexing the turns failed: {indexed.error}")
        if ingest == "conversation":
            started = time.perf_counter()
            episodes = 0
            for conv in conversations:
                clock.now = conv.end
                episodes += mem.segment(flush=True, workspace=conv.workspace).episodes
            say(
                f"segmented into {episodes} episodes in {time.perf_counter() - started:.1f}s "
                f"(key expansion {'on' if settings.key_expansion else 'off'})"
            )
        # The keyword search plans its terms on document counts cached for a few seconds:
        # counted while the conversations were written, they would make the first
        # questions' answers depend on how long the writing took.
        mem.store.forget_term_counts()
        yield Prepared(mem, clock, conversations, asked, model or "none")


def run_locomo(
    data_path: Path | str,
    policies: Sequence[str],
    granularity: str,
    settings: Settings,
    *,
    observe: Callable[[QuestionRun], None] | None = None,
    progress: Callable[[str], None] | None = None,
    ingest: str = "turn",
    db_url: str | None = None,
    load: Loader | None = None,
) -> dict[str, Any]:
    """Run the benchmark; the result is what ``episodic bench locomo --json`` prints
    (``bench beam`` when ``load`` reads BEAM).

    ``db_url`` names an empty database to run in (e.g. PostgreSQL, to compare backends);
    by default a throwaway SQLite file.

    ``observe`` sees every question's outcome (tests use it to look inside); ``progress``
    receives one line per phase. ``ingest`` "conversation" feeds the turns in as chat
    messages and segments them into episodes before any question is asked. The report
    counts the memories superseded on ingest, by who decided (``superseded_by``)."""
    if granularity not in GRANULARITIES:
        raise InvalidInput("granularity", f"use one of {'|'.join(GRANULARITIES)}")
    names = check_policies(policies)
    say = progress or (lambda _message: None)
    with prepare_locomo(
        data_path, settings, say=say, ingest=ingest, db_url=db_url, load=load
    ) as run:
        conversations = run.conversations
        superseded = count_superseded(run.mem, [c.workspace for c in conversations])
        say(
            f"{sum(len(c.turns) for c in conversations)} turns in {len(conversations)} "
            f"workspaces; {len(run.asked)} questions x {len(names)} policies"
        )
        report: dict[str, Any] = {}
        for name in names:
            say(f"policy {name}")
            runs = run_policy(run, name, granularity, observe=observe, ingest=ingest)
            report[name] = summarise(runs)
    return {
        "granularity": granularity,
        "ingest": ingest,
        "key_expansion": settings.key_expansion,
        "questions": len(run.asked),
        "unscored": unscored_counts(conversations),
        "embedder": run.embedder,
        "superseded_by": superseded,
        "policies": report,
    }


def _ingest(mem: Episodic, clock: BenchClock, conversations: Sequence[Conversation]) -> None:
    for conv in conversations:
        clock.now = conv.end
        result = mem.ingest(turn_event(conv, t) for t in conv.turns)
        if result.errors:
            raise InvalidInput("data", f"{conv.sample_id}: turn rejected: {result.errors[0]}")
        if result.admitted != len(conv.turns):
            raise InvalidInput(
                "data",
                f"{conv.sample_id}: {result.admitted} of {len(conv.turns)} turns became memories",
            )


def _ingest_messages(
    mem: Episodic, clock: BenchClock, conversations: Sequence[Conversation]
) -> None:
    for conv in conversations:
        clock.now = conv.end
        result = mem.ingest(message_event(conv, t) for t in conv.turns)
        if result.errors:
            raise InvalidInput("data", f"{conv.sample_id}: message rejected: {result.errors[0]}")


def turn_of(memory: Memory, conv: Conversation) -> str | None:
    """The turn a memory stands for: a turn's own dia_id, or for an entry the turn its
    evidence was quoted from (its source message's id is "<sample>/<dia_id>")."""
    dia_id = memory.payload.get("dia_id")
    if isinstance(dia_id, str):
        return dia_id
    prefix = f"{conv.sample_id}/"
    for source in memory.source_event_ids:
        if source.startswith(prefix):
            return source[len(prefix) :]
    return None


def run_policy(
    run: Prepared,
    name: str,
    granularity: str,
    *,
    policy: RecallPolicy | None = None,
    observe: Callable[[QuestionRun], None] | None = None,
    ingest: str = "turn",
    types: Sequence[str] | None = None,
) -> list[QuestionRun]:
    """Ask every scored question under one policy: ``name``'s preset, or ``policy`` (a
    variant of a preset, reported as ``name``) when given. ``types`` narrows what is
    recalled (default: messages and entries after conversation ingest, else all)."""
    mem, clock, asked = run.mem, run.clock, run.asked
    chosen: str | RecallPolicy = name if policy is None else policy
    outcomes: list[QuestionRun] = []
    warmed: set[str] = set()
    # Sessions are ranked by their best turn: the turn list must be deep enough to name
    # DEPTH sessions, or a policy that returns several turns of one session would be cut
    # short of sessions it found.
    depth = SESSION_TURN_DEPTH if granularity == "session" else DEPTH
    if types is None and ingest == "conversation":
        types = CONVERSATION_RECALL_TYPES
    for conv, question in asked:
        clock.now = conv.end
        if conv.workspace not in warmed:
            # The first search of a workspace loads its vectors into memory; that one-off
            # cost is not what a recall costs, so an untimed recall pays it.
            mem.recall(
                question.text,
                workspace=conv.workspace,
                k=depth,
                policy=chosen,
                mark=False,
                types=types,
            )
            warmed.add(conv.workspace)
        started = time.perf_counter()
        result = mem.recall(
            question.text, workspace=conv.workspace, k=depth, policy=chosen, mark=False, types=types
        )
        latency_ms = (time.perf_counter() - started) * 1000.0
        # A hit from another workspace could carry a dia_id of this conversation's
        # (every conversation has a "D1:1"): it must never count as evidence.
        # One slot per hit: a hit that names no turn, or a turn an earlier hit already
        # named (an entry and the message it was drawn from), fills its slot with nothing.
        turns: list[str] = []
        named: set[str] = set()
        for i, hit in enumerate(result.hits):
            dia_id = turn_of(hit.memory, conv) if hit.memory.workspace == conv.workspace else None
            if dia_id is None or dia_id in named:
                turns.append(f"-{i}")  # never evidence: dia_ids start with "D"
            else:
                named.add(dia_id)
                turns.append(dia_id)
        if granularity == "session":
            ranking = to_sessions(turns, conv.session_of)
            relevant = to_sessions(question.evidence, conv.session_of)
        else:
            ranking, relevant = turns, list(question.evidence)
        outcome = QuestionRun(
            policy=name,
            conversation=conv.sample_id,
            question=question,
            hit_ids=tuple(h.id for h in result.hits),
            turns=tuple(turns),
            ranking=tuple(ranking),
            relevant=tuple(relevant),
            scores=score_ranking(ranking, relevant),
            latency_ms=latency_ms,
        )
        outcomes.append(outcome)
        if observe is not None:
            observe(outcome)
    return outcomes


def summarise(runs: Sequence[QuestionRun]) -> dict[str, Any]:
    """One policy's report over some of its questions: the mean of every metric, overall
    and per category, and the recall latency."""
    by_category: dict[int | str, list[Mapping[str, float]]] = {}
    for outcome in runs:
        by_category.setdefault(outcome.question.category, []).append(outcome.scores)
    latencies = [outcome.latency_ms for outcome in runs]
    return {
        "overall": _rounded(mean_scores([outcome.scores for outcome in runs])),
        "by_category": {
            str(category): _rounded(mean_scores(by_category[category]))
            for category in sorted(by_category, key=_category_order)
        },
        "latency_ms": {
            "p50": round(percentile(latencies, 50), 3),
            "p95": round(percentile(latencies, 95), 3),
        },
        **({"updates": updates} if (updates := update_report(runs)) else {}),
    }


def update_report(runs: Sequence[QuestionRun]) -> dict[str, dict[str, float]]:
    """Per category of questions about a changed fact: how often the later statement
    ranks above the earlier one (or is found when the earlier is not), and the recall@10
    of each."""
    by_category: dict[str, list[dict[str, float]]] = {}
    for outcome in runs:
        before, after = outcome.question.changed
        if before and after:
            row = update_order(outcome.turns, before, after)
            by_category.setdefault(str(outcome.question.category), []).append(row)
    return {
        category: {
            "questions": len(rows),
            **{key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]},
        }
        for category, rows in sorted(by_category.items())
    }


def _rounded(scores: Mapping[str, float]) -> dict[str, float]:
    return {key: round(scores[key], 4) for key in METRIC_KEYS}


def _category_order(category: int | str) -> tuple[int, str]:
    """Categories in order: LoCoMo's by number, BEAM's abilities by name."""
    text = str(category)
    return (int(text), "") if text.isdigit() else (0, text)


def category_counts(conversations: Iterable[Conversation]) -> dict[str, int]:
    """How many scored questions (those with evidence) each category has."""
    counts: dict[str, int] = {}
    for conv in conversations:
        for q in conv.questions:
            if q.evidence and q.text:
                counts[str(q.category)] = counts.get(str(q.category), 0) + 1
    return dict(sorted(counts.items(), key=lambda item: _category_order(item[0])))


def unscored_counts(conversations: Iterable[Conversation]) -> dict[str, int]:
    """How many questions each category has that are left out, having no evidence to
    score a ranking against (BEAM's abstention questions, LoCoMo's few without ids)."""
    counts: dict[str, int] = {}
    for conv in conversations:
        for q in conv.questions:
            if not (q.evidence and q.text):
                counts[str(q.category)] = counts.get(str(q.category), 0) + 1
    return dict(sorted(counts.items(), key=lambda item: _category_order(item[0])))
