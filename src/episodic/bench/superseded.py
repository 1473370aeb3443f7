"""How many memories a benchmark's ingest superseded, by who decided.

A benchmark whose data states no change a memory should be hidden for (LoCoMo) counts
every one as a false supersession."""

from __future__ import annotations

from collections.abc import Sequence

from episodic.model import MemoryStatus, ScopeFilter
from episodic.service import Episodic

# The most superseded memories of one workspace ``count_superseded`` reads.
SUPERSEDED_LIMIT = 100_000


def count_superseded(mem: Episodic, workspaces: Sequence[str]) -> dict[str, int]:
    """How many memories of ``workspaces`` were superseded, by who decided (``offline:<rule>``,
    ``llm:<model>``, ``explicit:corrective`` ...). LoCoMo's conversations state no change
    a memory should be hidden for, so on it every one is a false supersession."""
    found: dict[str, int] = {}
    for workspace in workspaces:
        flt = ScopeFilter(workspace_id=workspace)
        gone = mem.store.list_memories(flt, SUPERSEDED_LIMIT, statuses=[MemoryStatus.SUPERSEDED])
        links = mem.store.supersessions(workspace, [m.id for m in gone]) if gone else []
        deciders = {link.old_id: link.decided_by for link in links}
        for m in gone:
            by = deciders.get(m.id, "unknown")
            found[by] = found.get(by, 0) + 1
    return dict(sorted(found.items()))
