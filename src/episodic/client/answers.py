"""The server's answers as the types ``Episodic`` returns: JSON into ``Memory``, ``Hit``,
``RecallResult``, ``IngestReport`` ..., the small types for what has no in-process twin
(``ServerHealth``, ``Episode``), and an error body into the exception of
``episodic.errors`` the in-process API raises for the same thing."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

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
from episodic.layer import LayerState, Recalled
from episodic.model import Event, Hit, Memory, MemoryStatus
from episodic.recall.result import RecallResult
from episodic.recall.trace import Dropped, Trace, TraceRow

# The answers of the other calls are the service's own types; each loads with the first
# answer of its kind, so a process that only recalls (a hook before every turn) does not
# load the service, the store or numpy.
if TYPE_CHECKING:
    from episodic.service.decisions import Decision
    from episodic.service.editing import Version
    from episodic.service.writing import IngestReport, MessagesReport
    from episodic.store.supersession import Supersession
    from episodic.store.upkeep import HealthSnapshot
    from episodic.upkeep.health import HealthView
    from episodic.write.events import LineError
    from episodic.write.journal import NotAdmitted

# The numbers of a health snapshot, as its JSON and its dataclass both name them.
HEALTH_PARTS = ("freshness", "coverage", "coherence", "efficiency", "reachability", "score")


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


def merged_ingest(reports: Sequence[IngestReport]) -> IngestReport:
    from episodic.policy import Admission
    from episodic.write.journal import NOT_ADMITTED_LISTED, count_by_reason

    """The reports of a batch sent in parts, as one (an empty batch: all zeros)."""
    from episodic.service.writing import IngestReport

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
        out.not_admitted.extend(r.not_admitted[: NOT_ADMITTED_LISTED - len(out.not_admitted)])
        for c in r.not_admitted_by_reason:
            count_by_reason(
                out.not_admitted_by_reason, Admission(False, c.rule, c.reason, c.fix), c.count
            )
    return out


def merged_messages(reports: Sequence[MessagesReport]) -> MessagesReport:
    from episodic.service.writing import MessagesReport

    return MessagesReport(
        ingest=merged_ingest([r.ingest for r in reports]), ids=[i for r in reports for i in r.ids]
    )


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
        status=MemoryStatus(raw["status"]),
        **_validity(raw),
    )


def _validity(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``valid_from``, ``valid_to`` and ``superseded_by`` as ``Memory`` holds them: the
    JSON always names a start, which a memory that became true at its ``ts`` stores as
    None."""
    since = datetime.fromisoformat(raw["valid_from"])
    return {
        "valid_from": None if since == datetime.fromisoformat(raw["ts"]) else since,
        "valid_to": _when(raw["valid_to"]),
        "superseded_by": raw["superseded_by"],
    }


def memory_of(raw: Mapping[str, Any]) -> Memory:
    """A ``Memory`` from its JSON (``memory_json``): every field the API shows."""
    return replace(
        _shown(raw),
        base_importance=raw["base_importance"],
        last_referenced_at=_when(raw["last_referenced_at"]),
        source_event_ids=tuple(raw["source_event_ids"]),
        created_at=_when(raw["created_at"]),
        keys=raw["keys"],
    )


def _hit(raw: Mapping[str, Any]) -> Hit:
    """A ``Hit`` from its JSON: its memory has the fields a hit shows (base importance
    and keys are not part of a hit's JSON and keep their defaults)."""
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
        passage=_passage(raw.get("passage")),
        newer=raw.get("newer"),
    )


def _passage(raw: Any) -> tuple[int, int] | None:
    """A hit's matched passage: ``{"start", "stop"}``, or none (a server before passages
    sends no such field)."""
    if not isinstance(raw, Mapping):
        return None
    return int(raw["start"]), int(raw["stop"])


def recall_result(raw: Mapping[str, Any]) -> RecallResult:
    return RecallResult(
        hits=[_hit(h) for h in raw["hits"]],
        mode=raw["mode"],
        policy=raw["policy"],
        warnings=list(raw["warnings"]),
        trace=None if raw.get("trace") is None else _trace(raw["trace"]),
        institutional=[_hit(h) for h in raw.get("institutional", [])],
    )


def render_result(raw: Mapping[str, Any]) -> tuple[str, RecallResult]:
    """``/v1/render``'s answer as ``Episodic.render_explained`` returns it: the block, and
    the recall's mode, policy, warnings and trace. The hits themselves are in the block:
    the answer names only their ids, so the result's ``hits`` is empty."""
    trace = None if raw.get("trace") is None else _trace(raw["trace"])
    result = RecallResult([], raw["mode"], raw["policy"], warnings=list(raw["warnings"]))
    return str(raw["block"]), replace(result, trace=trace)


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
    from episodic.write.events import LineError

    return [LineError(e["index"] + first, e["field"], e["message"]) for e in raw]


def _not_admitted(raw: Mapping[str, Any], first: int) -> list[NotAdmitted]:
    from episodic.write.journal import NotAdmitted

    # A server older than this client says nothing of what it did not admit.
    return [
        NotAdmitted(
            n["index"] + first,
            n["id"],
            n["type"],
            n["severity"],
            n["rule"],
            n["reason"],
            n.get("fix"),
        )
        for n in raw.get("not_admitted", ())
    ]


def ingest_report(raw: Mapping[str, Any], first: int) -> IngestReport:
    from episodic.service.writing import IngestReport
    from episodic.write.journal import NotAdmittedCount

    # The API numbers a request's items from 0; ``IngestReport`` numbers lines from 1.
    return IngestReport(
        received=raw["received"],
        stored=raw["stored"],
        duplicates=raw["duplicates"],
        admitted=raw["admitted"],
        errors=_line_errors(raw["errors"], first),
        deprecated_fields=list(raw["deprecated_fields"]),
        not_admitted=_not_admitted(raw, first),
        not_admitted_by_reason=[
            NotAdmittedCount(c["rule"], c["reason"], c.get("fix"), c["count"])
            for c in raw.get("not_admitted_by_reason", ())
        ],
    )


def messages_report(raw: Mapping[str, Any], first: int) -> MessagesReport:
    from episodic.service.writing import IngestReport, MessagesReport

    # The API does not say how many memories a batch admitted: ``admitted`` stays 0.
    report = IngestReport(
        received=raw["received"],
        stored=raw["stored"],
        duplicates=raw["duplicates"],
        errors=_line_errors(raw["errors"], first),
        not_admitted=_not_admitted(raw, first),
    )
    return MessagesReport(ingest=report, ids=list(raw["ids"]))


def message_event(raw: Mapping[str, Any], sent: Mapping[str, Any]) -> Event:
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


def episodes(raw: Mapping[str, Any]) -> list[Episode]:
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


def layer_state(raw: Mapping[str, Any]) -> LayerState:
    return LayerState(
        workspace=raw["workspace"],
        agent=raw["agent"],
        resource=raw["resource"],
        mode=raw["mode"],
        episodes=raw["episodes"],
        last_episode_at=_when(raw["last_episode_at"]),
        runs=raw["runs"],
    )


def recalled(raw: Mapping[str, Any]) -> Recalled:
    return Recalled(
        text=raw["text"],
        episodes=[memory_of(m) for m in raw["episodes"]],
        tokens=raw["tokens"],
        budget_tokens=raw["budget_tokens"],
    )


def health_view(raw: Mapping[str, Any]) -> HealthView | None:
    """The health view from its JSON; None when the server has no snapshot yet."""
    from episodic.store.upkeep import HealthSnapshot
    from episodic.upkeep.health import HealthView

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


def supersession(raw: Mapping[str, Any]) -> Supersession:
    from episodic.store.supersession import Supersession

    return Supersession(
        old_id=raw["old"],
        new_id=raw["new"],
        decided_by=raw["decided_by"],
        reason=raw["reason"],
        decided_at=datetime.fromisoformat(raw["decided_at"]),
        reverted_at=_when(raw.get("reverted_at")),
        reverted_by=raw.get("reverted_by"),
    )


def decision(raw: Mapping[str, Any]) -> Decision:
    from episodic.service.decisions import Decision

    return Decision(
        kind=raw["kind"],
        decided_by=raw["decided_by"],
        reason=raw["reason"],
        other=raw.get("other"),
        at=_when(raw.get("at")),
        reverted_at=_when(raw.get("reverted_at")),
        reverted_by=raw.get("reverted_by"),
    )


def version(raw: Mapping[str, Any]) -> Version:
    from episodic.service.editing import Version

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
def error_of(status: int, body: Any, request_id: str | None = None) -> EpisodicError:
    """The exception the in-process API raises for what the server answered: the error
    body's ``code`` picks the class, its ``field`` and ``message`` fill it in, and its
    ``request_id`` (the server's ``X-Request-ID``, the key to its log line) is kept on it."""
    error = _error_of(status, body)
    detail = body.get("error") if isinstance(body, dict) else None
    sent = detail.get("request_id") if isinstance(detail, dict) else None
    error.request_id = str(sent) if sent else request_id
    return error


def _error_of(status: int, body: Any) -> EpisodicError:
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
