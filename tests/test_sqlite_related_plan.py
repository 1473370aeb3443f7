"""SQLite's `related` (the `similar` edges recall reads for newest-first and the walk) is
driven by the edges of the asked ids, never by a walk over the workspace's memories: the
planner, left alone, chose the latter, which cost ~40 ms a recall at 1.5k memories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from episodic.model import ScopeFilter
from episodic.store import open_store


def test_related_searches_the_edges_of_the_asked_ids_first(tmp_path: Path) -> None:
    seen: list[tuple[str, Any]] = []
    store: Any = open_store(
        f"sqlite:///{tmp_path / 'plan.db'}", tracer=lambda sql, params: seen.append((sql, params))
    )
    try:
        store.related(ScopeFilter("ws"), [f"m{i}" for i in range(20)], "similar")
        sql, params = next(s for s in seen if "FROM memory_relations" in s[0])
        plan = [row[3] for row in store._writer.execute("EXPLAIN QUERY PLAN " + sql, params)]
    finally:
        store.close()
    searches = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
    # Each half of the UNION starts from the edges, by the asked ids (src, then dst).
    assert searches[0].startswith("SEARCH r USING INDEX"), plan
    assert "(src=?)" in searches[0], plan
    second = next(i for i, step in enumerate(searches) if "memory_relations_dst" in step)
    assert second > 0 and all(not s.startswith("SCAN") for s in searches), plan
    assert not any("memories_workspace" in step for step in searches), plan
