"""The service's journal search: keyword search of every event, admitted as a memory or
not, live or archived (seed 000's ``GET /api/v1/journal?q=``). Recall finds memories;
this finds what admission left in the journal only (output chunks, info-level
decisions), inside one workspace and the scope a caller may see."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from episodic.errors import InvalidInput
from episodic.model import Scope, ScopeFilter
from episodic.service.context import Context
from episodic.service.recalling import parse_scope
from episodic.store.journal import DEFAULT_JOURNAL_HITS, MAX_JOURNAL_HITS, JournalHit
from episodic.write.events import parse_time


class Journal:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def search_journal(
        self,
        query: str,
        *,
        workspace: str,
        types: Sequence[str] | str | None = None,
        since: datetime | str | None = None,
        k: int = DEFAULT_JOURNAL_HITS,
        agent: str | None = None,
        crew: str | None = None,
        scope: Scope | str | None = None,
    ) -> list[JournalHit]:
        """The journal events of ``workspace`` whose summary or payload hold the words of
        ``query``, best BM25 first (ties newest first), archived ones included (marked
        ``archived``). ``types``: only events of these types (exact); ``since``: only
        events at or after this time (ISO 8601 or a datetime; naive is UTC); ``k``: at
        most this many, 1 to 100. ``agent`` and ``crew`` narrow to that agent's or crew's
        events; with ``scope`` "own" only the agent's, with "crew_shared" the agent's and
        every event of the crew. ``InvalidInput`` names the field at fault."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query", "required: the words to look for in the journal")
        if not isinstance(workspace, str) or not workspace.strip():
            raise InvalidInput("workspace", "required: the journal is searched per workspace")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_JOURNAL_HITS:
            raise InvalidInput(
                "k", f"must be a whole number from 1 to {MAX_JOURNAL_HITS}, got {k!r}"
            )
        wanted = (types,) if isinstance(types, str) else types
        if wanted is not None:
            wanted = tuple(wanted)
            if not wanted or not all(isinstance(t, str) and t.strip() for t in wanted):
                raise InvalidInput("type", "give event types by name, e.g. exec.output_chunk")
        for name, value in (("agent", agent), ("crew", crew)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInput(name, "must not be empty when given")
        chosen = parse_scope(scope)
        if chosen is Scope.OWN and not agent:
            raise InvalidInput("agent", "scope 'own' needs an agent")
        if chosen is Scope.CREW_SHARED and not crew:
            raise InvalidInput("crew", "scope 'crew_shared' needs a crew")
        after = None if since is None else parse_time("since", since)
        flt = ScopeFilter(
            workspace_id=workspace,
            scope=chosen,
            agent_id=agent,
            crew_id=crew,
            types=wanted,
        )
        return self.ctx.store.search_journal(flt, query, since=after, limit=k)
