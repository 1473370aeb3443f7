"""What ``Client`` and ``AsyncClient`` share: each API call as a ``Call`` (method, path,
body, and the function that turns the JSON answer into the type ``Episodic`` returns),
the error body mapped back onto ``episodic.errors``, and when a 503 is retried.

Only the sending differs between the two clients (httpx's own ``Client``/``AsyncClient``
split): everything a call means lives here once, so the two cannot drift apart."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from functools import partial
from typing import Any, Generic, Literal, TypedDict, TypeVar
from urllib.parse import quote

from episodic.errors import (
    EmbedderUnavailable,
    EpisodicError,
    Forbidden,
    InvalidInput,
    LLMError,
    ModelMismatch,
    NotFound,
    StoreBusy,
    StoreUnavailable,
    Unauthenticated,
    UnknownPolicy,
)
from episodic.model import Event, Hit, Memory, MemoryStatus, Scope
from episodic.recall.engine import RecallResult
from episodic.recall.trace import Dropped, Trace, TraceRow
from episodic.service.editing import Version
from episodic.service.writing import IngestReport, MessagesReport
from episodic.store.service import ForgetCounts
from episodic.store.upkeep import HealthSnapshot
from episodic.upkeep.health import HealthView
from episodic.write.events import LineError

T = TypeVar("T")

# The numbers of a health snapshot, as its JSON and its dataclass both name them.
HEALTH_PARTS = ("freshness", "coverage", "coherence", "efficiency", "reachability", "score")

# The most items the API takes in one request (``POST /v1/events``, ``/v1/messages``):
# a longer batch is sent in parts of this size.
MAX_BATCH = 1000

# A 503 (the database busy or unreachable, the embedder loading) is tried this many times
# in all, waiting what Retry-After says, or a doubling backoff when it says nothing.
DEFAULT_ATTEMPTS = 3
BACKOFF_S = 0.5
# A Retry-After longer than this is not waited for: the error is raised at once.
MAX_WAIT_S = 30.0


class ServerError(EpisodicError):
    """The server answered with an error no other class of ``episodic.errors`` names (an
    unexpected 500, a status it does not document), or could not be reached at all
    (``status`` 0)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status = status
        self.code = code
        super().__init__(f"HTTP {status} {code}: {message}" if status else message)


@dataclass(frozen=True, slots=True)
class ServerHealth:
    """``GET /healthz``: the server is up, in which recall mode, at which version."""

    status: str
    mode: str  # "vector" or "sparse-only"
    version: str
    schema_version: int


@dataclass(frozen=True, slots=True)
class Episode:
    """One episode as ``GET /v1/recent`` shows it (``Episodic.recent`` returns the whole
    ``Memory``; the API answers with the episode's own fields)."""

    id: str
    title: str
    summary: str
    start: str | None
    end: str | None
    surprise: float
    message_count: int
    key_moment: bool
    flashbulb: bool
    outcome: str | None
    keyphrases: tuple[str, ...]
    workspace: str
    conversation: str | None
    agent: str | None
    resource: str | None


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request, and how its JSON answer becomes the result."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    # An answer of this status is a result too (``parse`` reads its error body), not an
    # error: a health view not computed yet is None in process, a 404 over HTTP.
    absent: int | None = None


# -- the options each call takes, by the names ``Episodic`` gives them -----------------
class Where(TypedDict, total=False):
    """Whose memory: ``workspace`` defaults to the key's; a key bound to an agent or crew
    may name only its own."""

    workspace: str
    agent: str
    crew: str
    resource: str
    conversation: str


class BatchOptions(TypedDict, total=False):
    """What a batch's messages default to (each may say otherwise)."""

    workspace: str
    agent: str
    crew: str
    resource: str


class RecallOptions(Where, total=False):
    scope: Scope | Literal["own", "crew_shared"]
    k: int
    policy: str
    mark: bool
    explain: bool
    walk: Literal[0, 1]
    types: Sequence[str] | str
    detail: Literal["none", "auto", "full"]


class RenderOptions(RecallOptions, total=False):
    max_chars: int


class RecentOptions(Where, total=False):
    limit: int


class RememberOptions(Where, total=False):
    type: str
    importance: float
    source: str
    evidence: str
    payload: Mapping[str, Any]
    id: str


class MessageOptions(TypedDict, total=False):
    workspace: str
    role: Literal["user", "assistant", "tool", "system"]
    agent: str
    crew: str
    resource: str
    name: str
    ts: datetime | str
    id: str


class ForgetOptions(TypedDict, total=False):
    workspace: str
    agent: str
    resource: str
    conversation: str
    memory: str
    older_than_days: float
    all: bool


def _body(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options as JSON: None left out (the server's default), dates as ISO 8601."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if value is None:
            continue
        if isinstance(value, datetime):
            value = value.isoformat()
        elif name == "types" and isinstance(value, str):
            value = [value]
        elif name == "types":
            value = list(value)
        out[name] = value
    return out


# -- the calls -------------------------------------------------------------------------
def ingest(items: Iterable[Mapping[str, Any]]) -> list[Call[IngestReport]]:
    """One call per ``MAX_BATCH`` events; ``merged_ingest`` joins their reports."""
    events = [dict(i) for i in items]
    return [
        Call("POST", "/v1/events", partial(_ingest_report, first=start + 1), json={"events": part})
        for start, part in _parts(events)
    ]


def add_message(content: str, conversation: str, options: MessageOptions) -> Call[Event]:
    body = {"content": content, "conversation": conversation, **_body(options)}
    return Call("POST", "/v1/messages", lambda raw: _message_event(raw, body), json=body)


def add_messages(
    messages: Sequence[Mapping[str, Any]], conversation: str | None, options: BatchOptions
) -> list[Call[MessagesReport]]:
    """One call per ``MAX_BATCH`` messages; ``merged_messages`` joins their reports."""
    common = _body({**options, "conversation": conversation})
    return [
        Call(
            "POST",
            "/v1/messages",
            partial(_messages_report, first=start),
            json={"messages": part, **common},
        )
        for start, part in _parts([_body(m) for m in messages])
    ]


def _parts(items: list[dict[str, Any]]) -> list[tuple[int, list[dict[str, Any]]]]:
    return [(start, items[start : start + MAX_BATCH]) for start in range(0, len(items), MAX_BATCH)]


def merged_ingest(reports: Sequence[IngestReport]) -> IngestReport:
    """The reports of a batch sent in parts, as one (an empty batch: all zeros)."""
    out = IngestReport()
    for r in reports:
        out.received += r.received
        out.stored += r.stored
        out.duplicates += r.duplicates
        out.admitted += r.admitted
        out.errors.extend(r.errors)
        out.deprecated_fields.extend(
            f for f in r.deprecated_fields if f not in out.deprecated_fields
        )
    return out


def merged_messages(reports: Sequence[MessagesReport]) -> MessagesReport:
    return MessagesReport(
        ingest=merged_ingest([r.ingest for r in reports]), ids=[i for r in reports for i in r.ids]
    )


def remember(content: str, options: RememberOptions) -> Call[Memory]:
    return Call("POST", "/v1/memories", memory_of, json={"content": content, **_body(options)})


def recall(query: str, options: RecallOptions) -> Call[RecallResult]:
    return Call("POST", "/v1/recall", _recall_result, json={"query": query, **_body(options)})


def render(query: str, options: RenderOptions) -> Call[str]:
    return Call(
        "POST", "/v1/render", lambda raw: str(raw["block"]), json={"query": query, **_body(options)}
    )


def recent(options: RecentOptions) -> Call[list[Episode]]:
    return Call("GET", "/v1/recent", _episodes, params=_body(options))


def forget(options: ForgetOptions) -> Call[ForgetCounts]:
    return Call("POST", "/v1/forget", lambda raw: ForgetCounts(**raw), json=_body(options))


def update(
    memory_id: str,
    content: str | None,
    importance: float | None,
    payload: Mapping[str, Any] | None,
) -> Call[Memory]:
    body = _body({"content": content, "importance": importance, "payload": payload})
    if not body:  # the server would say so too; this names the same field without a trip
        raise InvalidInput("content", "nothing to change: give content, importance or payload")
    return Call("PATCH", f"/v1/memories/{_segment(memory_id)}", memory_of, json=body)


def history(memory_id: str) -> Call[list[Version]]:
    path = f"/v1/memories/{_segment(memory_id)}/history"
    return Call("GET", path, lambda raw: [_version(v) for v in raw["versions"]])


def health() -> Call[ServerHealth]:
    return Call(
        "GET",
        "/healthz",
        lambda raw: ServerHealth(
            status=raw["status"],
            mode=raw["episodic"],
            version=raw["version"],
            schema_version=raw["schema_version"],
        ),
    )


def memory_health(workspace: str | None, crew: str | None, history: int) -> Call[HealthView | None]:
    params = _body({"workspace": workspace, "crew": crew, "history": history})
    return Call("GET", "/v1/health", _health_view, params=params, absent=404)


def _segment(memory_id: str) -> str:
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise InvalidInput("memory_id", "required: the id of the memory")
    return quote(memory_id, safe="")


# -- answers into the types ``Episodic`` returns -----------------------------------------
def _when(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _shown(raw: Mapping[str, Any]) -> Memory:
    """The fields both a memory's JSON and a hit's carry; the rest keep their defaults."""
    return Memory(
        id=raw["id"],
        workspace=raw["workspace"],
        ts=datetime.fromisoformat(raw["ts"]),
        type=raw["type"],
        content=raw["content"],
        severity=raw["severity"],
        payload=dict(raw["payload"]),
        crew=raw["crew"],
        agent=raw["agent"],
        resource=raw["resource"],
        conversation=raw["conversation"],
        importance=raw["importance"],
        reference_count=raw["reference_count"],
    )


def memory_of(raw: Mapping[str, Any]) -> Memory:
    """A ``Memory`` from its JSON (``memory_json``): every field the API shows."""
    return replace(
        _shown(raw),
        base_importance=raw["base_importance"],
        last_referenced_at=_when(raw["last_referenced_at"]),
        status=MemoryStatus(raw["status"]),
        source_event_ids=tuple(raw["source_event_ids"]),
        created_at=_when(raw["created_at"]),
        keys=raw["keys"],
    )


def _hit(raw: Mapping[str, Any]) -> Hit:
    """A ``Hit`` from its JSON: its memory has the fields a hit shows (base importance,
    status and keys are not part of a hit's JSON and keep their defaults)."""
    memory = _shown(raw)
    details = tuple(
        Event(
            id=d["id"],
            workspace=memory.workspace,
            ts=datetime.fromisoformat(d["ts"]),
            type="message",
            summary=d["content"],
            payload={k: d[k] for k in ("role", "name") if d[k] is not None},
            conversation=memory.conversation,
        )
        for d in raw["details"]
    )
    return Hit(
        memory=memory,
        score=raw["score"],
        age_seconds=raw["age_seconds"],
        cosine=raw["cosine"],
        via=raw["via"],
        details=details,
    )


def _recall_result(raw: Mapping[str, Any]) -> RecallResult:
    return RecallResult(
        hits=[_hit(h) for h in raw["hits"]],
        mode=raw["mode"],
        policy=raw["policy"],
        warnings=list(raw["warnings"]),
        trace=None if raw.get("trace") is None else _trace(raw["trace"]),
    )


def _trace(raw: Mapping[str, Any]) -> Trace:
    """The recall's ``Trace`` from its JSON (scores rounded to 6 places, as shown)."""
    return Trace(
        policy=raw["policy"],
        query=raw["query"],
        lexical_query=raw["lexical_query"],
        time_windows=list(raw["time_windows"]),
        stages={
            name: [
                TraceRow(r["id"], r["rank"], r["score"], dict(r.get("detail") or {})) for r in rows
            ]
            for name, rows in raw["stages"].items()
        },
        dropped=[
            Dropped(d["id"], d["stage"], d["reason"], d.get("detail") or "") for d in raw["dropped"]
        ],
    )


def _line_errors(raw: Sequence[Mapping[str, Any]], first: int) -> list[LineError]:
    return [LineError(e["index"] + first, e["field"], e["message"]) for e in raw]


def _ingest_report(raw: Mapping[str, Any], first: int) -> IngestReport:
    # The API numbers a request's items from 0; ``IngestReport`` numbers lines from 1.
    return IngestReport(
        received=raw["received"],
        stored=raw["stored"],
        duplicates=raw["duplicates"],
        admitted=raw["admitted"],
        errors=_line_errors(raw["errors"], first),
        deprecated_fields=list(raw["deprecated_fields"]),
    )


def _messages_report(raw: Mapping[str, Any], first: int) -> MessagesReport:
    # The API does not say how many memories a batch admitted: ``admitted`` stays 0.
    report = IngestReport(
        received=raw["received"],
        stored=raw["stored"],
        duplicates=raw["duplicates"],
        errors=_line_errors(raw["errors"], first),
    )
    return MessagesReport(ingest=report, ids=list(raw["ids"]))


def _message_event(raw: Mapping[str, Any], sent: Mapping[str, Any]) -> Event:
    """The stored message as an ``Event``: its id, workspace and time from the answer, the
    rest as sent (a key bound to an agent or crew fills those in on the server)."""
    payload = {"role": sent.get("role", "user")}
    if sent.get("name") is not None:
        payload["name"] = sent["name"]
    return Event(
        id=raw["id"],
        workspace=raw["workspace"],
        ts=datetime.fromisoformat(raw["ts"]),
        type="message",
        summary=sent["content"],
        payload=payload,
        crew=sent.get("crew"),
        agent=sent.get("agent"),
        resource=sent.get("resource"),
        conversation=raw["conversation"],
    )


def _episodes(raw: Mapping[str, Any]) -> list[Episode]:
    return [
        Episode(
            id=e["id"],
            title=e["title"],
            summary=e["summary"],
            start=e["start"],
            end=e["end"],
            surprise=e["surprise"],
            message_count=e["message_count"],
            key_moment=e["key_moment"],
            flashbulb=e["flashbulb"],
            outcome=e["outcome"],
            keyphrases=tuple(e["keyphrases"]),
            workspace=e["workspace"],
            conversation=e["conversation"],
            agent=e["agent"],
            resource=e["resource"],
        )
        for e in raw["episodes"]
    ]


def _health_view(raw: Mapping[str, Any]) -> HealthView | None:
    """The health view from its JSON; None when the server has no snapshot yet."""
    if "error" in raw:
        if raw["error"].get("code") != "not_found":
            raise error_of(404, raw)
        return None

    def snapshot(s: Mapping[str, Any]) -> HealthSnapshot:
        return HealthSnapshot(
            workspace_id=s["workspace"],
            crew_id=s["crew"],
            snapshot_date=date.fromisoformat(s["snapshot_date"]),
            **{name: s[name] for name in HEALTH_PARTS},
        )

    return HealthView(
        workspace_id=raw["workspace"],
        crew_id=raw["crew"],
        snapshot_date=raw["snapshot_date"],
        band=raw["band"],
        history=[snapshot(s) for s in raw["history"]],
        **{name: raw[name] for name in HEALTH_PARTS},
    )


def _version(raw: Mapping[str, Any]) -> Version:
    return Version(
        version=raw["version"],
        current=raw["current"],
        content=raw["content"],
        importance=raw["importance"],
        payload=dict(raw["payload"]),
        written_at=_when(raw["written_at"]),
        written_by=raw["written_by"],
        replaced_at=_when(raw["replaced_at"]),
        replaced_by=raw["replaced_by"],
    )


# -- errors ------------------------------------------------------------------------------
def error_of(status: int, body: Any) -> EpisodicError:
    """The exception the in-process API raises for what the server answered: the error
    body's ``code`` picks the class, its ``field`` and ``message`` fill it in."""
    detail = body.get("error") if isinstance(body, dict) else None
    if not isinstance(detail, dict):
        return ServerError(status, "error", f"unexpected answer: {str(body)[:200]}")
    code = str(detail.get("code") or "error")
    field = detail.get("field")
    message = str(detail.get("message") or "")
    if code in ("invalid_input", "bad_request", "payload_too_large") or status == 422:
        if code == "unknown_policy":
            return _unknown_policy(message)
        return InvalidInput(str(field or "body"), message)
    if code == "unauthenticated":
        return Unauthenticated(message)
    if code == "forbidden":
        return Forbidden(message)
    if code == "not_found":
        found = re.fullmatch(r"not found: (.*)", message, re.DOTALL)
        return NotFound(found.group(1) if found else message)
    simple: dict[str, type[EpisodicError]] = {
        "store_busy": StoreBusy,
        "store_unavailable": StoreUnavailable,
        "embedder_unavailable": EmbedderUnavailable,
        "llm_failed": LLMError,
    }
    if code == "model_mismatch":
        # The message says which models; the numbers behind it are not in the body.
        err = ModelMismatch.__new__(ModelMismatch)
        Exception.__init__(err, message)
        return err
    if code in simple:
        return simple[code](message)
    if code == "error" and status == 400:
        return EpisodicError(message)
    return ServerError(status, code, message)


def _unknown_policy(message: str) -> UnknownPolicy:
    named = re.search(r"policy '([^']*)'", message)
    err = UnknownPolicy(named.group(1) if named else "")
    err.args = (message,)
    return err


# -- retries -----------------------------------------------------------------------------
def retry_after(header: str | None, attempt: int, *, now: datetime | None = None) -> float:
    """Seconds to wait before attempt ``attempt + 1``: what ``Retry-After`` says (seconds
    or an HTTP date), else a doubling backoff from ``BACKOFF_S``."""
    if header:
        header = header.strip()
        if header.isdigit():
            return float(header)
        try:
            at = parsedate_to_datetime(header)
        except (TypeError, ValueError):
            at = None
        if at is not None:
            moment = now or datetime.now(UTC)
            return max(0.0, (at - moment).total_seconds())
    return float(BACKOFF_S * 2**attempt)


def should_retry(status: int, wait: float, attempt: int, attempts: int) -> bool:
    """A 503 is worth another try while attempts remain and the wait is reasonable."""
    return status == 503 and attempt + 1 < attempts and wait <= MAX_WAIT_S
