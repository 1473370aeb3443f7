"""Dedupe of extracted entries: known hashes, then cosine >= 0.86 against the batch and the
scope's existing rows."""

from __future__ import annotations

import numpy as np
import pytest

from episodic.errors import InvalidInput
from episodic.write.dedupe import DEDUPE_COSINE, drop_known_hashes, drop_similar
from episodic.write.extract import KNOWN_HASH, SIMILAR, Dropped, Entry, content_hash


def e(content: str) -> Entry:
    return Entry(content, "user_assertion", content, "m1", "offline")


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def at_cosine(c: float) -> np.ndarray:
    """A unit vector whose cosine with [1, 0] is ``c``."""
    return np.asarray([c, np.sqrt(1 - c * c)], dtype=np.float32)


A, B, C = e("Replica B lags 40 minutes."), e("The export times out."), e("Kyoto offsite in March.")


# -- hashes --------------------------------------------------------------------------------
def test_known_hashes_are_dropped_and_order_kept() -> None:
    known = {content_hash("  replica b lags 40   MINUTES. ")}  # stored in another form

    kept, dropped = drop_known_hashes([A, B, C], known)

    assert kept == [B, C]
    assert dropped == [Dropped(A.content, KNOWN_HASH, f"sha256 {content_hash(A.content)[:12]}")]


def test_repeats_within_the_batch_are_dropped_too() -> None:
    kept, dropped = drop_known_hashes([A, B, e(A.content.upper())], ())
    assert kept == [A, B]
    assert [d.reason for d in dropped] == [KNOWN_HASH]


def test_nothing_known_keeps_everything() -> None:
    assert drop_known_hashes([A, B], []) == ([A, B], [])
    assert drop_known_hashes([], {content_hash(A.content)}) == ([], [])


# -- cosine --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cosine", "duplicate"),
    [(1.0, True), (0.95, True), (0.87, True), (0.85, False), (0.5, False), (-1.0, False)],
)
def test_against_existing_rows_at_the_seed_threshold(cosine: float, duplicate: bool) -> None:
    existing = np.stack([unit(0, 0, 1), unit(1, 0, 0)])
    vector = np.append(at_cosine(cosine), np.float32(0))[None, :]  # orthogonal to row 0
    kept, dropped = drop_similar([A], vector, existing)

    assert (kept, bool(dropped)) == ([] if duplicate else [0], duplicate)
    if duplicate:
        assert dropped == [Dropped(A.content, SIMILAR, f"cosine {cosine:.3f} with existing row 1")]


def test_the_threshold_itself_is_a_duplicate() -> None:
    # 0.875 and its companion 0.484... are exact in float32, so the boundary is exact too.
    vector = at_cosine(0.875)[None, :]
    assert drop_similar([A], vector, unit(1, 0)[None, :], threshold=0.875)[0] == []
    assert drop_similar([A], vector, unit(1, 0)[None, :], threshold=0.876)[0] == [0]
    assert DEDUPE_COSINE == 0.86


def test_within_the_batch_only_kept_entries_count() -> None:
    # B is a near-copy of A (dropped); C is close to B but not to A: kept, because the
    # dropped B no longer stands for anything.
    theta = np.arccos(0.9)  # b at theta from a, c at theta from b: 2 theta from a
    a, b, c = (np.asarray([np.cos(k * theta), np.sin(k * theta)], np.float32) for k in (0, 1, 2))
    assert float(b @ c) == pytest.approx(0.9, abs=1e-6)
    assert float(a @ c) == pytest.approx(0.62, abs=1e-6)

    kept, dropped = drop_similar([A, B, C], np.stack([a, b, c]), np.zeros((0, 2), np.float32))

    assert kept == [0, 2]
    assert dropped == [Dropped(B.content, SIMILAR, "cosine 0.900 with entry 0 of this batch")]


def test_the_closest_match_is_named() -> None:
    existing = np.stack([at_cosine(0.88), at_cosine(0.99)])  # both over the threshold
    batch = np.stack([unit(1, 0), at_cosine(0.999)])

    kept, dropped = drop_similar([A, B], batch, existing)

    assert kept == []
    assert dropped[0].detail == "cosine 0.990 with existing row 1"
    # B is closer to an existing row (1.000) than to anything kept in the batch (none).
    assert dropped[1].detail.endswith("with existing row 1")


@pytest.mark.parametrize("empty", [np.zeros((0, 2), np.float32), np.zeros(0, np.float32)])
def test_an_empty_scope_only_dedupes_the_batch(empty: np.ndarray) -> None:
    batch = np.stack([unit(1, 0), unit(1, 0), unit(0, 1)])
    kept, dropped = drop_similar([A, B, C], batch, empty)
    assert kept == [0, 2]
    assert dropped == [Dropped(B.content, SIMILAR, "cosine 1.000 with entry 0 of this batch")]


def test_no_entries() -> None:
    assert drop_similar([], np.zeros((0, 2), np.float32), np.stack([unit(1, 0)])) == ([], [])


def test_shapes_and_threshold_are_checked() -> None:
    batch = np.stack([unit(1, 0)])
    with pytest.raises(InvalidInput, match="one row per entry"):
        drop_similar([A, B], batch, np.zeros((0, 2), np.float32))
    with pytest.raises(InvalidInput, match="existing"):
        drop_similar([A], batch, np.zeros((3, 5), np.float32))
    for threshold in (0.0, 1.5, -0.2):
        with pytest.raises(InvalidInput, match="threshold"):
            drop_similar([A], batch, batch, threshold=threshold)
