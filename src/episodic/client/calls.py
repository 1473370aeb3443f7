"""What ``Client`` and ``AsyncClient`` share: each API call as a ``Call`` (method, path,
body, and the function of ``answers`` that turns the JSON answer into the type
``Episodic`` returns), the options each call takes by ``Episodic``'s names, and when a
503 is retried.

Only the sending differs between the two clients (httpx's own ``Client``/``AsyncClient``
split): everything a call means lives here once, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, Literal, TypedDict, TypeVar
from urllib.parse import quote

from episodic.client import answers
from episodic.client.answers import Episode, ServerHealth, memory_of
from episodic.errors import InvalidInput
from episodic.layer import LayerState, Recalled
from episodic.model import Event, Memory, Scope
from episodic.recall.result import RecallResult
from episodic.service.pages import MemoryPage

# Only for annotations: each answer's type loads with the first answer of its kind
# (``answers``), so a process that only recalls does not load the service or the store.
if TYPE_CHECKING:
    from episodic.service.decisions import Decision
    from episodic.service.editing import Version
    from episodic.service.writing import IndexOne, IngestReport, MessagesReport, SessionEnd
    from episodic.store.service import ForgetCounts
    from episodic.store.supersession import Supersession
    from episodic.upkeep.health import HealthView

T = TypeVar("T")


# The most items the API takes in one request (``POST /v1/events``, ``/v1/messages``):
# a longer batch is sent in parts of this size.
MAX_BATCH = 1000

# A 503 (the database busy or unreachable, the embedder loading) is tried this many times
# in all, waiting what Retry-After says, or a doubling backoff when it says nothing.
DEFAULT_ATTEMPTS = 3
BACKOFF_S = 0.5
# A Retry-After longer than this is not waited for: the error is raised at once.
MAX_WAIT_S = 30.0


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
    as_of: datetime | str
    include_superseded: bool
    learning_type: Sequence[str] | str
    session: str


class RenderOptions(RecallOptions, total=False):
    max_chars: int


class RecentOptions(Where, total=False):
    limit: int


class ListOptions(Where, total=False):
    scope: Scope | Literal["own", "crew_shared"]
    types: Sequence[str] | str
    status: Literal["active", "retired", "compacted", "superseded"]
    limit: int
    cursor: str
    q: str


class RememberOptions(Where, total=False):
    type: str
    importance: float
    source: str
    evidence: str
    payload: Mapping[str, Any]
    id: str
    replaces: str


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
        elif name in ("types", "learning_type") and not isinstance(value, str):
            value = list(value)
        out[name] = value
    return out


# -- the calls -------------------------------------------------------------------------
def ingest(items: Iterable[Mapping[str, Any]]) -> list[Call[IngestReport]]:
    """One call per ``MAX_BATCH`` events; ``merged_ingest`` joins their reports."""
    events = [dict(i) for i in items]
    return [
        Call(
            "POST",
            "/v1/events",
            partial(answers.ingest_report, first=start + 1),
            json={"events": part},
        )
        for start, part in _parts(events)
    ]


def add_message(content: str, conversation: str, options: MessageOptions) -> Call[Event]:
    body = {"content": content, "conversation": conversation, **_body(options)}
    return Call("POST", "/v1/messages", lambda raw: answers.message_event(raw, body), json=body)


def add_messages(
    messages: Sequence[Mapping[str, Any]], conversation: str | None, options: BatchOptions
) -> list[Call[MessagesReport]]:
    """One call per ``MAX_BATCH`` messages; ``merged_messages`` joins their reports."""
    common = _body({**options, "conversation": conversation})
    return [
        Call(
            "POST",
            "/v1/messages",
            partial(answers.messages_report, first=start),
            json={"messages": part, **common},
        )
        for start, part in _parts([_body(m) for m in messages])
    ]


def _parts(items: list[dict[str, Any]]) -> list[tuple[int, list[dict[str, Any]]]]:
    return [(start, items[start : start + MAX_BATCH]) for start in range(0, len(items), MAX_BATCH)]


def remember(content: str, options: RememberOptions) -> Call[Memory]:
    return Call("POST", "/v1/memories", memory_of, json={"content": content, **_body(options)})


def recall(query: str, options: RecallOptions) -> Call[RecallResult]:
    return Call(
        "POST", "/v1/recall", answers.recall_result, json={"query": query, **_body(options)}
    )


def render(query: str, options: RenderOptions) -> Call[str]:
    return Call(
        "POST", "/v1/render", lambda raw: str(raw["block"]), json={"query": query, **_body(options)}
    )


def render_explained(query: str, options: RenderOptions) -> Call[tuple[str, RecallResult]]:
    return Call(
        "POST", "/v1/render", answers.render_result, json={"query": query, **_body(options)}
    )


def recent(options: RecentOptions) -> Call[list[Episode]]:
    return Call("GET", "/v1/recent", answers.episodes, params=_body(options))


def list_memories(options: ListOptions) -> Call[MemoryPage]:
    params = _body(options)
    if "types" in params:  # the query string names it as ``?type=a&type=b``
        params["type"] = params.pop("types")
    return Call(
        "GET",
        "/v1/memories",
        lambda raw: MemoryPage([memory_of(m) for m in raw["items"]], raw["next_cursor"]),
        params=params,
    )


def memory(memory_id: str) -> Call[Memory]:
    return Call("GET", f"/v1/memories/{_segment(memory_id)}", memory_of)


def retire(memory_id: str) -> Call[Memory]:
    return Call("POST", f"/v1/memories/{_segment(memory_id)}/retire", memory_of)


def index_one(memory_id: str) -> Call[IndexOne]:
    return Call("POST", f"/v1/memories/{_segment(memory_id)}/index", _index_one)


def forget(options: ForgetOptions) -> Call[ForgetCounts]:
    return Call("POST", "/v1/forget", _forget_counts, json=_body(options))


def _forget_counts(raw: Mapping[str, Any]) -> ForgetCounts:
    from episodic.store.service import ForgetCounts

    return ForgetCounts(**raw)


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


def supersede(old_id: str, new: str, reason: str | None) -> Call[Memory]:
    path = f"/v1/memories/{_segment(old_id, 'old_id')}/supersede"
    return Call("POST", path, memory_of, json=_body({"new": new, "reason": reason}))


def decisions(memory_id: str) -> Call[list[Decision]]:
    path = f"/v1/memories/{_segment(memory_id)}/decisions"
    return Call("GET", path, lambda raw: [answers.decision(d) for d in raw["decisions"]])


def restore(memory_id: str) -> Call[Memory]:
    return Call("POST", f"/v1/memories/{_segment(memory_id)}/restore", memory_of)


def supersessions(memory_id: str) -> Call[list[Supersession]]:
    path = f"/v1/memories/{_segment(memory_id)}/supersessions"
    return Call("GET", path, lambda raw: [answers.supersession(s) for s in raw["supersessions"]])


def history(memory_id: str) -> Call[list[Version]]:
    path = f"/v1/memories/{_segment(memory_id)}/history"
    return Call("GET", path, lambda raw: [answers.version(v) for v in raw["versions"]])


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
    return Call("GET", "/v1/health", answers.health_view, params=params, absent=404)


# -- the agent-loop layer (seed 002) --------------------------------------------------------
class LayerOptions(TypedDict, total=False):
    """Whose layer, as ``MemoryLayer`` is created: the key decides the rest."""

    workspace: str
    agent: str
    crew: str
    resource: str


def layer_init(where: LayerOptions) -> Call[LayerState]:
    return Call("GET", "/v1/layer/init", answers.layer_state, params=_body(where))


def layer_recall(
    where: LayerOptions,
    session: str,
    budget_tokens: int,
    query: str | None,
    order: str | None,
    policy: str | None,
) -> Call[Recalled]:
    body = _body(
        {
            **where,
            "session": session,
            "budget_tokens": budget_tokens,
            "query": query,
            "order": order,
            "policy": policy,
        }
    )
    return Call("POST", "/v1/layer/recall", answers.recalled, json=body)


def layer_complete(
    where: LayerOptions,
    session: str,
    transcript: Sequence[Mapping[str, Any]],
    conversation: str | None,
    outcome: str | None,
) -> Call[tuple[list[Memory], list[str]]]:
    if isinstance(transcript, str | bytes) or not isinstance(transcript, Sequence):
        raise InvalidInput("transcript", "expected a list of {role, content} objects")
    body = _body(
        {
            **where,
            "session": session,
            "transcript": [dict(item) for item in transcript],
            "conversation": conversation,
            "outcome": outcome,
        }
    )
    return Call(
        "POST",
        "/v1/layer/complete",
        lambda raw: ([memory_of(m) for m in raw["episodes"]], list(raw["reinforced"])),
        json=body,
    )


def end_session(session: str, workspace: str | None, outcome: str | None) -> Call[SessionEnd]:
    path = f"/v1/sessions/{_segment(session, 'session')}/end"
    body = _body({"workspace": workspace, "outcome": outcome})
    return Call(
        "POST",
        path,
        _session_end,
        json=body,
    )


def _segment(memory_id: str, field: str = "memory_id") -> str:
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise InvalidInput(field, "required: the id of the memory")
    return quote(memory_id, safe="")


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


def _index_one(raw: Mapping[str, Any]) -> IndexOne:
    from episodic.service.writing import IndexOne

    return IndexOne(**raw)


def _session_end(raw: Mapping[str, Any]) -> SessionEnd:
    from episodic.service.writing import SessionEnd

    return SessionEnd(raw["session"], raw["episodes"], list(raw["reinforced"]))
