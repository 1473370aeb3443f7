"""One indexing worker process for the multi-worker tests: sweeps the database at URL until
nothing is left, appending the ids of every batch it committed to LOG (one line per
memory, flushed per batch). EMBEDDER is ``local`` (the real MiniLM) or ``fake`` (the
deterministic hashing embedder: the claims, not the model, are what most runs test).

usage: python index_worker.py URL LOG BATCH [EMBEDDER]
"""

from __future__ import annotations

import sys
from pathlib import Path

from episodic.config import Settings
from episodic.embed import make_embedder
from episodic.embed.fake import FakeEmbedder
from episodic.store import open_store


def main() -> None:
    url, log_path, batch = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    kind = sys.argv[4] if len(sys.argv) > 4 else "local"
    embedder = (
        FakeEmbedder(dim=384) if kind == "fake" else make_embedder(Settings.from_env(embedder=kind))
    )
    assert embedder is not None
    store = open_store(url)
    idle = 0
    with log_path.open("a", encoding="utf-8") as log:
        log.write("started\n")
        log.flush()
        while idle < 3:
            done = store.index_pending(batch, embedder.model_id, embedder.dim, embedder.embed_batch)
            idle = 0 if done else idle + 1
            if done:
                log.write("".join(f"{p.memory_id}\n" for p, _ in done))
                log.flush()
    store.close()


if __name__ == "__main__":
    main()
