"""SqliteStore: a long memory's passages in the keyword index ``passages_fts``
(migration 17), written with the memory, wherever its text is written.

Triggers drop a memory's passage rows when the memory is deleted or its text changes;
the text's writer then calls ``write_text_passages`` for the new text. A memory no
longer than one passage has none: its own row in ``memories_fts`` is the whole of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from episodic.scoring.passages import PASSAGE_CHARS
from episodic.store.migrations import index_text_passages
from episodic.store.rows import unique
from episodic.store.sqlite.connection import SqliteBase, chunks, placeholders


def write_text_passages(store: SqliteBase, ids: Sequence[str]) -> int:
    """(Re)write the passage rows of the long memories among ``ids``, inside the
    caller's write; returns how many rows were written."""
    written = 0
    for chunk in chunks(unique(ids)):
        rows = store._execute(
            f"SELECT seq, content FROM memories WHERE id IN ({placeholders(len(chunk))}) "
            f"AND length(content) > {PASSAGE_CHARS}",
            chunk,
        ).fetchall()
        written += index_text_passages(store._conn, rows)
    return written
