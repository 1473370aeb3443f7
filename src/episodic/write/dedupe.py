# TEMPORARY STUB (replaced by the helper's module at merge)
from typing import Any

DEDUPE_COSINE = 0.86


def drop_known_hashes(entries: Any, known: Any) -> Any:
    from episodic.write.extract import content_hash

    return [e for e in entries if content_hash(e.content) not in known], []


def drop_similar(
    entries: Any, vectors: Any, existing: Any, threshold: float = DEDUPE_COSINE
) -> Any:
    return list(range(len(entries))), []
