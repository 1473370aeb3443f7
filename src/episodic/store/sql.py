"""The SQL text both backends render: the shared column lists, and pure builders that
return ``(sql, params)`` and touch no database, so the isolation rules can be tested on
their own. Each backend writes its own statements around them (``?`` for SQLite, ``%s``
for psycopg)."""

from __future__ import annotations

from typing import Any

from episodic.errors import Forbidden, InvalidInput
from episodic.model import Memory, Scope, ScopeFilter

# A lead's crew_shared view: its own entries plus crew entries that carry a type,
# severity or priority bonus (base importance above a routine info entry's 0.5).
CREW_SHARED_MIN_BASE_IMPORTANCE = 0.55

# Column prefixes callers may ask for; anything else would be spliced into SQL unchecked.
_ALIASES = frozenset({"", "m", "e"})

# -- the columns both backends read and write, in the order ``episodic.store.rows`` takes
# What every journal row and memory row begins with: who, when and what kind.
_HEAD_COLUMNS = (
    "id",
    "workspace_id",
    "crew_id",
    "agent_id",
    "resource_id",
    "conversation_id",
    "ts",
    "type",
    "severity",
)
EVENT_INSERT_COLUMNS = (*_HEAD_COLUMNS, "summary", "payload", "refs", "admitted", "created_at")
MEMORY_INSERT_COLUMNS = (
    *_HEAD_COLUMNS,
    "content",
    "payload",
    "base_importance",
    "importance",
    "reference_count",
    "last_referenced_at",
    "status",
    "created_at",
    "updated_at",
    "keys",
    "content_hash",
    "stability",
    "difficulty",
    "last_reviewed_at",
    "consolidated_at",
    "valid_from",
    "valid_to",
    "superseded_by",
)
# Read back: a row's columns (an event's without its bookkeeping, a memory's without
# updated_at), as ``event_from_row`` and ``memory_from_row`` take them.
EVENT_COLUMNS = ", ".join((*_HEAD_COLUMNS, "summary", "payload", "refs"))
MEMORY_COLUMNS = ", ".join(c for c in MEMORY_INSERT_COLUMNS if c != "updated_at")
# A restored event also says which episode took it (``restore``).
RESTORE_EVENT_COLUMNS = (*EVENT_INSERT_COLUMNS, "episode_id")
KEY_COLUMNS = "id, workspace_id, role, agent_id, crew_id, label, created_at, revoked_at"
# What a recall's review is recorded with (``rows.review_row``), and read back with.
REVIEW_INSERT_COLUMNS = (
    "workspace_id, agent_id, crew_id, conversation_id, query, memory_ids, cosines, recalled_at"
)
REVIEW_COLUMNS = f"id, {REVIEW_INSERT_COLUMNS}"
SNAPSHOT_COLUMNS = "snapshot_date, freshness, coverage, coherence, efficiency, reachability, score"


def update_memory_sql(mark: str) -> str:
    """``UPDATE memories`` of every column but the id and workspace, then ``WHERE id``:
    the parameters are ``memory_row(m, now)[2:]`` and the id (restore overwrites a memory
    field by field). ``mark`` is the driver's placeholder."""
    sets = ", ".join(f"{column} = {mark}" for column in MEMORY_INSERT_COLUMNS[2:])
    return f"UPDATE memories SET {sets} WHERE id = {mark}"


# An edit (``revise_memory``): the fields it may change, then the memory's key.
# Each workspace with its memories and (live) events: both backends' ``workspace_counts``.
WORKSPACE_COUNTS = """
SELECT workspace_id, sum(memories), sum(events) FROM (
    SELECT workspace_id, count(*) AS memories, 0 AS events FROM memories GROUP BY workspace_id
    UNION ALL
    SELECT workspace_id, 0, count(*) FROM events GROUP BY workspace_id
) AS counts GROUP BY workspace_id ORDER BY workspace_id
"""
REVISE_COLUMNS = ("content", "content_hash", "base_importance", "importance", "payload")
HISTORY_COLUMNS = "content, importance, payload, replaced_at, replaced_by"


def revise_memory_sql(mark: str) -> str:
    """``UPDATE memories`` of ``REVISE_COLUMNS`` and ``updated_at``, then ``WHERE``
    workspace and id; ``mark`` is the driver's placeholder."""
    sets = ", ".join(f"{column} = {mark}" for column in (*REVISE_COLUMNS, "updated_at"))
    return f"UPDATE memories SET {sets} WHERE workspace_id = {mark} AND id = {mark}"


def history_insert_sql(mark: str) -> str:
    """``INSERT INTO memory_history``: the memory's id and workspace, then
    ``HISTORY_COLUMNS``."""
    marks = ", ".join([mark] * 7)
    return (
        f"INSERT INTO memory_history (memory_id, workspace_id, {HISTORY_COLUMNS}) VALUES ({marks})"
    )


def normalise_scope(flt: ScopeFilter) -> Scope | None:
    """The filter's scope as a ``Scope``, checking what that scope requires (seed 000:
    own needs an agent, crew_shared a crew). ``ScopeFilter`` is a plain dataclass, so a
    caller may hand in a bare string or an empty workspace; both are refused here."""
    if not flt.workspace_id or not flt.workspace_id.strip():
        raise InvalidInput("workspace", "required: every read runs inside one workspace")
    if flt.scope is None:
        return None
    try:
        scope = Scope(flt.scope)
    except ValueError:
        raise InvalidInput(
            "scope", f"unknown scope {flt.scope!r}; use own or crew_shared"
        ) from None
    if scope is Scope.OWN and not flt.agent_id:
        raise InvalidInput("agent", "scope 'own' needs an agent (--agent)")
    if scope is Scope.CREW_SHARED and not flt.crew_id:
        raise InvalidInput("crew", "scope 'crew_shared' needs a crew (--crew)")
    return scope


def scope_where(
    flt: ScopeFilter, *, alias: str = "", mark: str = "?", journal: bool = False
) -> tuple[str, list[Any]]:
    """The WHERE fragment that limits ``memories`` rows to what ``flt`` may see.

    Always ``workspace_id = ?``. Scope own adds ``agent_id = ?``; crew_shared adds the
    agent's own rows or the crew's rows whose base importance reaches
    ``CREW_SHARED_MIN_BASE_IMPORTANCE`` (just the crew part without an agent). With no
    scope each of agent/crew that is given narrows. resource_id and conversation_id narrow
    under any scope. An empty id counts as not given. ``alias`` qualifies the columns
    (``"m"`` gives ``m.agent_id``). ``mark`` is the driver's placeholder (``%s`` for
    psycopg).

    ``journal`` limits journal rows (``events``, ``events_archive``) instead: they carry
    no importance, so crew_shared sees every row of the crew."""
    if mark not in ("?", "%s"):
        raise ValueError(f"unsupported placeholder {mark!r}")
    if alias not in _ALIASES:
        raise ValueError(f"unsupported table alias {alias!r}")
    col = f"{alias}." if alias else ""
    scope = normalise_scope(flt)

    clauses = [f"{col}workspace_id = {mark}"]
    params: list[Any] = [flt.workspace_id]
    if scope is Scope.OWN:
        clauses.append(f"{col}agent_id = {mark}")
        params.append(flt.agent_id)
    elif scope is Scope.CREW_SHARED:
        crew_part = f"({col}crew_id = {mark} AND {col}base_importance >= {mark})"
        crew_params: list[Any] = [flt.crew_id, CREW_SHARED_MIN_BASE_IMPORTANCE]
        if journal:
            crew_part, crew_params = f"{col}crew_id = {mark}", [flt.crew_id]
        if flt.agent_id:
            clauses.append(f"({col}agent_id = {mark} OR {crew_part})")
            params += [flt.agent_id, *crew_params]
        else:
            clauses.append(crew_part)
            params += crew_params
    else:
        for name in ("agent_id", "crew_id"):
            value = getattr(flt, name)
            if value:
                clauses.append(f"{col}{name} = {mark}")
                params.append(value)
    for name in ("resource_id", "conversation_id"):
        value = getattr(flt, name)
        if value:
            clauses.append(f"{col}{name} = {mark}")
            params.append(value)
    if flt.types is not None:
        # An empty tuple asks for no type at all: it matches nothing, never everything.
        marks = ", ".join([mark] * len(flt.types)) or "NULL"
        clauses.append(f"{col}type IN ({marks})")
        params.extend(flt.types)
    if flt.exclude_types and not journal:
        clauses.append(f"{col}type NOT IN ({', '.join([mark] * len(flt.exclude_types))})")
        params.extend(flt.exclude_types)
    if flt.learning_types is not None and not journal:
        # The payload is JSON text on both backends; only a learning filter reads it.
        kind = (
            # An old row's payload may not be JSON: it has no learning type.
            f"(CASE WHEN json_valid({col}payload) "
            f"THEN json_extract({col}payload, '$.learning_type') END)"
            if mark == "?"
            else f"(episodic_jsonb({col}payload) ->> 'learning_type')"
        )
        marks = ", ".join([mark] * len(flt.learning_types)) or "NULL"
        clauses.append(f"{kind} IN ({marks})")
        params.extend(flt.learning_types)
    return " AND ".join(clauses), params


def live_where(flt: ScopeFilter, *, alias: str = "", mark: str = "?") -> tuple[str, list[Any]]:
    """``scope_where`` for the recall legs: also only memories that are live, i.e.
    active, and superseded too when ``flt.superseded`` asks for them (a recall ``as_of``
    a past time, or one that shows what was replaced)."""
    where, params = scope_where(flt, alias=alias, mark=mark)
    col = f"{alias}." if alias else ""
    statuses = "'active', 'superseded'" if flt.superseded else "'active'"
    return f"{col}status IN ({statuses}) AND {where}", params


def scope_allows(flt: ScopeFilter, m: Memory) -> bool:
    """Whether ``flt`` can see memory ``m`` (any status): ``scope_where`` as a Python
    predicate, for checks on one memory already fetched (an API caller's get/retire)."""
    scope = normalise_scope(flt)
    if m.workspace != flt.workspace_id:
        return False
    if scope is Scope.OWN:
        ok = bool(m.agent == flt.agent_id)
    elif scope is Scope.CREW_SHARED:
        crew_part = m.crew == flt.crew_id and m.base_importance >= (CREW_SHARED_MIN_BASE_IMPORTANCE)
        ok = bool(crew_part or (flt.agent_id and m.agent == flt.agent_id))
    else:
        ok = all(
            not getattr(flt, name + "_id") or getattr(m, name) == getattr(flt, name + "_id")
            for name in ("agent", "crew")
        )
    for name in ("resource", "conversation"):
        value = getattr(flt, name + "_id")
        if value and getattr(m, name) != value:
            ok = False
    if flt.types is not None and m.type not in flt.types:
        ok = False
    if m.type in flt.exclude_types:
        ok = False
    if flt.learning_types is not None and m.payload.get("learning_type") not in flt.learning_types:
        ok = False
    return ok


def session_owner(
    by_agent: str | None, by_crew: str | None, *, mark: str = "?"
) -> tuple[str, str, list[Any]]:
    """How a session's recorded recalls (``memory_reviews``) are told apart when its end
    is on behalf of an agent (else a crew): ``(own, foreign, params)``, where ``own``
    narrows to that agent's (crew's) recalls and ``foreign`` matches a recall made as
    another one or as none. Both are ``""`` for an end on behalf of anyone (an admin's,
    or a caller bound to neither); ``params`` go after each of them.

    >>> session_owner("deployer", "ops")
    (' AND agent_id = ?', ' AND (agent_id IS NULL OR agent_id <> ?)', ['deployer'])
    >>> session_owner(None, "ops", mark="%s")[0]
    ' AND crew_id = %s'
    >>> session_owner(None, None)
    ('', '', [])
    """
    column, value = ("agent_id", by_agent) if by_agent is not None else ("crew_id", by_crew)
    if value is None:
        return "", "", []
    own = f" AND {column} = {mark}"
    return own, f" AND ({column} IS NULL OR {column} <> {mark})", [value]


def not_session_owner(session: str, by_agent: str | None) -> Forbidden:
    """The refusal of an end on behalf of one agent (crew) of a session another one's
    recalls belong to. The other is not named: the caller may not know of it."""
    who = "agent" if by_agent is not None else "crew"
    return Forbidden(
        f"session {session!r} holds recalls made by another {who} (or by none): only the "
        f"{who} that made them, or an admin key, may end it"
    )
