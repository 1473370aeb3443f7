"""A workspace with long memories, built one way for the tests that read them
(``test_passages``, ``test_text_passages``, ``test_rank_rows``): notes, each admitted as a
memory (``refs.episodic``), ingested into workspace ``w`` of a store on either backend,
with the fake embedder (and then every one embedded) or with none (the keyword leg
alone)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from episodic import Episodic, Settings
from episodic.embed.base import Embedder
from episodic.store import open_store
from episodic.store.base import Store

WS = "w"


def note(memory_id: str, text: str, ts: datetime | str, *, type: str = "note") -> dict[str, Any]:
    """An event that becomes the memory ``memory_id`` with ``text``, at ``ts``."""
    return {
        "id": memory_id,
        "workspace": WS,
        "type": type,
        "refs": {"episodic": True},
        "summary": text,
        "ts": ts if isinstance(ts, str) else ts.isoformat(),
    }


def long_workspace(
    store: str | Store,
    notes: Sequence[dict[str, Any]],
    *,
    embedder: Embedder | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Episodic:
    """The memory at ``store`` (a URL or an open store) holding ``notes``; with
    ``embedder``, every note is embedded before it is handed over."""
    settings = Settings() if embedder is not None else Settings(embedder="none")
    m = Episodic(
        store=open_store(store) if isinstance(store, str) else store,
        embedder=embedder,
        settings=settings,
        **({} if clock is None else {"clock": clock}),
    )
    m.ingest(list(notes))
    if embedder is not None:
        assert m.index_once().embedded == len(notes)
    return m
