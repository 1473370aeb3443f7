"""Dedupe of extracted entries (seed 004), as pure helpers the store's caller runs.

Two passes, after ``extract_entries`` has dropped repeats within its own batch:

1. ``drop_known_hashes``: an entry whose ``content_hash`` the scope already holds is a
   repeat; checking it costs nothing, so it runs before anything is embedded;
2. ``drop_similar``: an entry whose vector has cosine >= ``DEDUPE_COSINE`` with an earlier
   kept entry of the batch, or with any existing row of the scope, says the same thing in
   other words.

Both return what they kept and a ``Dropped`` record for everything else.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from episodic.blas import one_thread
from episodic.errors import InvalidInput
from episodic.write.cases import new_identifiers
from episodic.write.extract import KNOWN_HASH, SIMILAR, Dropped, Entry, content_hash

# Seed 004: dedupeSimilarityThreshold.
DEDUPE_COSINE = 0.86


def drop_known_hashes(
    entries: Sequence[Entry], known: Collection[str]
) -> tuple[list[Entry], list[Dropped]]:
    """``entries`` whose ``content_hash`` is not in ``known`` (nor repeated earlier in
    ``entries``), and the rest as ``known_hash`` drops."""
    seen = set(known)
    kept: list[Entry] = []
    dropped: list[Dropped] = []
    for entry in entries:
        digest = content_hash(entry.content)
        if digest in seen:
            dropped.append(Dropped(entry.content, KNOWN_HASH, f"sha256 {digest[:12]}"))
            continue
        seen.add(digest)
        kept.append(entry)
    return kept, dropped


def drop_similar(
    entries: Sequence[Entry],
    vectors: npt.NDArray[np.floating],
    existing: npt.NDArray[np.floating],
    threshold: float = DEDUPE_COSINE,
    existing_ids: Sequence[str] | None = None,
    existing_texts: Sequence[str] | None = None,
) -> tuple[list[int], list[Dropped]]:
    """The indices of ``entries`` to keep, in order, and a ``similar`` drop for each other.

    ``vectors`` holds one row per entry and ``existing`` the vectors already stored in the
    scope (zero rows allowed); rows are L2-normalised, so a dot product is the cosine. An
    entry is a duplicate when its cosine with an earlier *kept* entry of the batch, or with
    any existing row, is >= ``threshold``; the drop's detail names the closest match and
    the cosine (by its id when ``existing_ids`` names the rows of ``existing``). An entry
    about another case than its match (an identifier, number or name the match lacks:
    ``write.cases``) is no duplicate; ``existing_texts`` (one per existing row) lets the
    existing rows be checked too.
    """
    if not 0.0 < threshold <= 1.0:
        raise InvalidInput("threshold", f"must be in (0, 1], got {threshold}")
    batch = np.asarray(vectors, dtype=np.float32)
    if batch.ndim != 2 or batch.shape[0] != len(entries):
        raise InvalidInput(
            "vectors", f"expected one row per entry ({len(entries)}), got shape {batch.shape}"
        )
    stored = np.asarray(existing, dtype=np.float32)
    if stored.size == 0:
        stored = np.zeros((0, batch.shape[1]), dtype=np.float32)
    if stored.ndim != 2 or stored.shape[1] != batch.shape[1]:
        raise InvalidInput(
            "existing", f"expected rows of {batch.shape[1]} dimensions, got shape {stored.shape}"
        )
    # The best existing match of every entry at once: one (n, m) product, whatever m is.
    if existing_texts is not None and len(existing_texts) != stored.shape[0]:
        raise InvalidInput("existing_texts", "expected one text per existing row")
    if stored.shape[0] and batch.shape[0]:
        with one_thread():
            against_stored = batch @ stored.T
        if existing_texts is not None:
            # Only a pair close enough to be a duplicate needs its cases compared: below
            # the threshold the pair decides nothing either way.
            for i, j in zip(*np.nonzero(against_stored >= threshold), strict=True):
                if new_identifiers(entries[i].content, existing_texts[j]):
                    against_stored[i, j] = -np.inf
        best_row = against_stored.argmax(axis=1)
        best_stored = against_stored[np.arange(batch.shape[0]), best_row]
    else:
        best_row = np.zeros(batch.shape[0], dtype=np.int64)
        best_stored = np.full(batch.shape[0], -np.inf, dtype=np.float32)

    kept: list[int] = []
    dropped: list[Dropped] = []
    for i, entry in enumerate(entries):
        row = int(best_row[i])
        named = existing_ids is not None and row < len(existing_ids)
        match = f"memory {existing_ids[row]}" if named and existing_ids else f"existing row {row}"
        cosine = float(best_stored[i])
        if kept:
            against_kept = batch[kept] @ batch[i]
            close = [
                (float(against_kept[n]), j)
                for n, j in enumerate(kept)
                if against_kept[n] >= threshold
                and not new_identifiers(entry.content, entries[j].content)
            ]
            if close:
                best, j = max(close, key=lambda pair: (pair[0], -pair[1]))
                if best > cosine:
                    cosine, match = best, f"entry {j} of this batch"
        if cosine >= threshold:
            dropped.append(Dropped(entry.content, SIMILAR, f"cosine {cosine:.3f} with {match}"))
        else:
            kept.append(i)
    return kept, dropped
