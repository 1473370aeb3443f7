"""Workspace isolation as a property, CI-sized: the state machine of
tests/isolation_machine.py on both backends, derandomized so CI is not flaky (the same
examples every run). tests/stress/test_isolation.py explores thousands of random steps.

Also the regression the machine found first: ids are unique across the store, so a write
whose id another workspace held was silently skipped as a "duplicate" of that other
workspace's data; it is now refused, naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import raw_rows
from episodic import Episodic
from episodic.config import Settings
from episodic.embed.fake import FakeEmbedder
from episodic.errors import IdTaken
from episodic.model import ScopeFilter
from episodic.store import open_store
from isolation_machine import postgres_backend, run, sqlite_backend

# Per backend: examples x steps. PostgreSQL steps cost ~5x SQLite's.
SIZES = {"sqlite": (12, 30), "postgres": (8, 30)}


@pytest.mark.parametrize("name", ["sqlite", "postgres"])
def test_no_operation_crosses_a_workspace(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if name == "sqlite":
        backend = sqlite_backend(tmp_path)
    else:
        server: Any = request.getfixturevalue("pg_server")
        backend = postgres_backend(server.get_uri())
    examples, steps = SIZES[name]
    run(backend, examples=examples, steps=steps, derandomize=True)


def _event(ws: str, summary: str, event_id: str = "shared-1") -> dict[str, Any]:
    return {
        "id": event_id,
        "workspace": ws,
        "type": "decision",
        "summary": summary,
        "refs": {"episodic": True},
    }


def test_an_id_another_workspace_holds_is_refused_not_skipped(db_url: str) -> None:
    with Episodic(store=open_store(db_url), embedder=FakeEmbedder(64), settings=Settings()) as ep:
        assert ep.ingest([_event("a", "alpha rollout plan")]).stored == 1

        report = ep.ingest([_event("b", "beta rollout plan"), _event("b", "beta other", "own-1")])
        assert (report.stored, report.duplicates) == (1, 0)
        assert [(e.line, e.field) for e in report.errors] == [(1, "id")]
        assert "another workspace" in report.errors[0].message
        assert "'a'" not in report.errors[0].message  # never names the holder

        with pytest.raises(IdTaken) as single:
            ep.add_event(_event("b", "beta rollout plan"))
        assert single.value.field == "id"
        with pytest.raises(IdTaken):
            ep.add_message("beta says hi", workspace="b", conversation="c1", id="shared-1")
        with pytest.raises(IdTaken):
            ep.remember("beta note", workspace="b", id="shared-1")

        # a's row is untouched; b's own re-ingest is still an ordinary duplicate.
        assert raw_rows(
            db_url, "SELECT workspace_id, content FROM memories WHERE id = 'shared-1'"
        ) == [("a", "alpha rollout plan")]
        again = ep.ingest([_event("a", "alpha rollout plan")])
        assert (again.stored, again.duplicates, again.errors) == (0, 1, [])
        assert [h.memory.content for h in ep.recall("beta", workspace="b").hits] == ["beta other"]

        # One batch with the same id for two workspaces: the first holds it.
        both = ep.ingest([_event("c", "gamma plan", "pair-1"), _event("d", "delta plan", "pair-1")])
        assert both.stored == 1 and [(e.line, e.field) for e in both.errors] == [(2, "id")]

        # Found by the stress run: an event of e the journal kept without a memory, then a
        # batch where f sends that id (refused) before e repeats it (a plain duplicate).
        quiet = {"id": "quiet-1", "workspace": "e", "type": "exec.output_chunk"}
        assert ep.ingest([quiet]).admitted == 0
        mixed = ep.ingest([_event("f", "phi plan", "quiet-1"), quiet])
        assert [(e.line, e.field) for e in mixed.errors] == [(1, "id")]
        assert (mixed.stored, mixed.duplicates) == (0, 1)
        assert raw_rows(db_url, "SELECT id FROM memories WHERE id = 'quiet-1'") == []

        # Once a forgets it, the id is free for b.
        ep.forget(workspace="a", memory="shared-1")
        assert ep.ingest([_event("b", "beta rollout plan")]).stored == 1


def test_a_consolidated_rule_goes_with_the_evidence_it_quotes(db_url: str) -> None:
    """Found by the machine: forgetting an agent left the rule consolidation had drawn from
    its memories, quoting their text, in every recall and export."""
    with Episodic(
        store=open_store(db_url), embedder=FakeEmbedder(64), settings=Settings(), llm=None
    ) as ep:
        text = "The postgres replica lag alarm fired during the nightly billing backup window"
        for n, agent in enumerate(("alice", "bob", "bob")):
            ep.remember(f"{text} note{n}{agent}", workspace="w", agent=agent)
        ep.remember(f"{text} note0alice", workspace="other", agent="alice")
        ep.index_once()
        [first] = ep.consolidate(workspace="w")
        [rule] = first.detail["derived"]
        assert "note0alice" in ep.memory(ScopeFilter("w"), rule).content

        ep.forget(workspace="w", agent="alice")
        left = raw_rows(db_url, "SELECT id, content FROM memories WHERE workspace_id = 'w'")
        assert rule not in {i for i, _ in left}
        assert not [c for _, c in left if "note0alice" in c]
        # The other workspace's identical memory is untouched.
        assert len(raw_rows(db_url, "SELECT id FROM memories WHERE workspace_id = 'other'")) == 1
        # bob's two notes are unconsolidated again: a new rule, without alice's words.
        [second] = ep.consolidate(workspace="w")
        [again] = second.detail["derived"]
        assert "note0alice" not in ep.memory(ScopeFilter("w"), again).content
