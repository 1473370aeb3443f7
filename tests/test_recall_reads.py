"""What a recall reads, and how cheaply: the ranking's reads share one snapshot on both
backends, and SQLite's keyword leg reads only the rowids that can belong to the
workspace, finding every match there (its first and last memory, a long last memory by a
later passage) as before."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.model import ScopeFilter
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.store import open_store

TS = datetime(2025, 3, 1, tzinfo=UTC).isoformat()
FILLER = "The deployment checklist was compared with the runbook line by line today. "


def _note(memory_id: str, workspace: str, text: str) -> dict[str, object]:
    return {
        "id": memory_id,
        "workspace": workspace,
        "type": "note",
        "refs": {"episodic": True},
        "summary": text,
        "ts": TS,
    }


def _interleaved(m: Episodic) -> None:
    """Workspaces a and b written turn about, so that their seqs interleave; a's last
    memory is a long one whose only mention of the query's word is past its first
    passage."""
    notes: list[dict[str, object]] = []
    for i in range(6):
        notes.append(_note(f"a{i}", "a", f"The heron count {i} was logged."))
        notes.append(_note(f"b{i}", "b", f"The heron census {i} was filed."))
    notes.append(_note("a-long", "a", FILLER * 40 + "A heron nested by the weir."))
    m.ingest(notes)


def test_the_keyword_leg_finds_every_match_of_the_workspace_and_none_of_another(
    tmp_path: Path,
) -> None:
    m = Episodic(
        store=open_store(f"sqlite:///{tmp_path / 'm.db'}"),
        embedder=None,
        settings=Settings(embedder="none"),
    )
    try:
        _interleaved(m)
        found = [c.memory_id for c in m.store.search_sparse(ScopeFilter("a"), "heron weir", 50)]
        assert sorted(found) == ["a-long", *(f"a{i}" for i in range(6))]
        # The long memory's passage rows number past its own seq: the last memory of the
        # workspace is found by a later passage too.
        rows = m.store.search_sparse_passages(ScopeFilter("a"), "heron weir", 50)
        assert [r[0] for r in rows] == ["a-long"] and rows[0][2] > PASSAGE_CHARS
        assert not m.store.search_sparse_passages(ScopeFilter("b"), "weir", 50)
        hits = m.recall("heron weir", workspace="a", mark=False, k=3).hits
        assert hits[0].id == "a-long" and "weir" in hits[0].shown
        found_b = [c.memory_id for c in m.store.search_sparse(ScopeFilter("b"), "heron weir", 50)]
        assert sorted(found_b) == [f"b{i}" for i in range(6)]
        assert not m.store.search_sparse(ScopeFilter("nobody"), "heron weir", 50)
    finally:
        m.close()


def test_reads_inside_reading_see_one_snapshot(db_url: str) -> None:
    m = Episodic(store=open_store(db_url), embedder=None, settings=Settings(embedder="none"))
    try:
        m.ingest([_note("n1", "w", "The heron count was logged.")])
        store = m.store

        def importance() -> float:
            return store.get_memories("w", ["n1"])[0].importance

        before = importance()
        with store.reading():
            assert importance() == before
            # A write committed by another thread in the middle of the block...
            writer = threading.Thread(target=lambda: m.update("n1", workspace="w", importance=0.99))
            writer.start()
            writer.join()
            # ...is not seen inside it: the block reads one snapshot.
            assert importance() == before
        assert importance() == 0.99
    finally:
        m.close()


def test_a_recall_ranks_in_one_read_transaction(tmp_path: Path) -> None:
    statements: list[tuple[int, str]] = []

    def trace(sql: str, params: Sequence[Any]) -> None:
        statements.append((threading.get_ident(), sql))

    store = open_store(f"sqlite:///{tmp_path / 'm.db'}", tracer=trace)
    m = Episodic(store=store, embedder=FakeEmbedder(dim=32), settings=Settings())
    try:
        m.ingest(
            [
                {
                    "id": f"t{i}",
                    "workspace": "w",
                    "type": "note",
                    "conversation": "c1",
                    "refs": {"episodic": True},
                    "summary": f"Turn {i}: the heron was counted {i} times.",
                    "ts": f"2025-03-01T10:{i:02d}:00+00:00",
                }
                for i in range(12)
            ]
        )
        m.index_once()
        m.recall("heron counted", workspace="w", mark=False)
        statements.clear()
        m.recall("how often was the heron counted", workspace="w", mark=False)
        main = threading.get_ident()
        mine = [sql for thread, sql in statements if thread == main]
        ranking = [i for i, sql in enumerate(mine) if "memory_sources" in sql or "UNION ALL" in sql]
        assert len(ranking) >= 2, mine  # rows and the turns around the hits
        between = mine[ranking[0] : ranking[-1] + 1]
        assert not [sql for sql in between if sql in ("BEGIN", "COMMIT")], between
    finally:
        m.close()
