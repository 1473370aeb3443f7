"""A persistent embedding cache for benchmark runs.

Each benchmark run builds a throwaway database, so the store's own embedding cache starts
empty every time; this file outlives the run, and a second run over the same data skips
the embedder entirely. Keys are (model id, sha256 of the text), as everywhere else.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np

from episodic.embed.base import Vector
from episodic.errors import StoreError

LE_FLOAT32 = np.dtype("<f4")
# SQLite's default limit on host parameters is 999 on older builds.
_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, content_hash)
) WITHOUT ROWID
"""


class SqliteEmbeddingCache:
    """``EmbeddingCache`` over one SQLite file (created with its folder when missing)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the embedding cache {self.path}: {exc}") from exc

    def cache_get(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        keys = list(dict.fromkeys(content_hashes))
        found: dict[str, Vector] = {}
        try:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    "SELECT content_hash, dim, vector FROM vectors "
                    f"WHERE model = ? AND content_hash IN ({marks})",
                    (model_id, *chunk),
                )
                for content_hash, dim, blob in rows:
                    vector = np.frombuffer(blob, LE_FLOAT32).astype(np.float32)
                    # A truncated row is a miss, so the caller re-embeds instead of failing.
                    if vector.shape == (dim,):
                        found[content_hash] = vector
        except sqlite3.Error as exc:
            raise StoreError(f"embedding cache {self.path}: {exc}") from exc
        return found

    def cache_put(self, model_id: str, items: Mapping[str, Vector]) -> None:
        rows = []
        for content_hash, vector in items.items():
            arr = np.asarray(vector, dtype=LE_FLOAT32).reshape(-1)
            rows.append((model_id, content_hash, int(arr.size), arr.tobytes()))
        if not rows:
            return
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (model, content_hash, dim, vector) "
                    "VALUES (?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.Error as exc:
            raise StoreError(f"embedding cache {self.path}: {exc}") from exc

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT count(*) FROM vectors").fetchone()
        return int(count)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqliteEmbeddingCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
