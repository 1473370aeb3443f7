"""FakeEmbedder behaves enough like a model for recall tests, and check_matrix guards all."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from episodic.embed import Embedder, FakeEmbedder, check_matrix
from episodic.errors import BadEmbedding, EmbedderUnavailable, InvalidInput


def test_vectors_are_deterministic_unit_float32() -> None:
    texts = ["Checkout OOM after cache change", "", "!!!", "ok"]
    a = FakeEmbedder().embed_batch(texts)
    b = FakeEmbedder().embed_batch(texts)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (4, 64) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)


def test_shared_words_mean_similar_vectors() -> None:
    q, near, far = FakeEmbedder().embed_batch(
        ["checkout service OOM", "the checkout service was OOM killed", "weekly sync moved"]
    )
    assert float(q @ near) > 0.5
    assert float(q @ near) > float(q @ far) + 0.3


def test_case_and_punctuation_do_not_matter() -> None:
    a, b = FakeEmbedder().embed_batch(["Deploy FAILED!", "deploy failed"])
    np.testing.assert_allclose(a, b)


def test_counts_calls_and_texts() -> None:
    fake = FakeEmbedder()
    fake.embed_batch(["a", "b"])
    fake.embed_batch(["c"])
    assert (fake.calls, fake.texts_embedded) == (2, 3)


def test_fail_switch_simulates_an_outage() -> None:
    fake = FakeEmbedder(fail=True)
    with pytest.raises(EmbedderUnavailable):
        fake.embed_batch(["x"])
    assert fake.texts_embedded == 0
    fake.fail = False
    assert fake.embed_batch(["x"]).shape == (1, 64)


def test_dimension_is_part_of_the_model_id() -> None:
    assert FakeEmbedder(dim=32).model_id != FakeEmbedder(dim=64).model_id
    assert FakeEmbedder(dim=32).embed_batch(["x"]).shape == (1, 32)
    assert isinstance(FakeEmbedder(), Embedder)
    with pytest.raises(InvalidInput):
        FakeEmbedder(dim=0)


def test_check_matrix_normalises_and_converts() -> None:
    out = check_matrix([[3.0, 4.0], [0.0, 2.0]], 2, 2)
    assert out.dtype == np.float32 and out.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 1.0]], atol=1e-7)
    assert check_matrix(np.zeros((0, 5)), 0, 5).shape == (0, 5)


@pytest.mark.parametrize(
    ("matrix", "n", "dim", "match"),
    [
        ([[1.0, 0.0]], 2, 2, "1 vectors for 2 texts"),
        ([[1.0, 0.0, 0.0]], 1, 2, "3-d vectors, expected 2-d"),
        ([1.0, 0.0], 1, 2, "1-d array"),
        ([[1.0, np.nan]], 1, 2, "NaN"),
        ([[np.inf, 1.0]], 1, 2, "NaN/inf"),
        ([[0.0, 0.0]], 1, 2, "all-zero"),
        ([["a", "b"]], 1, 2, "not a matrix"),
    ],
)
def test_check_matrix_rejects_garbage(matrix: Any, n: int, dim: int, match: str) -> None:
    with pytest.raises(BadEmbedding, match=match):
        check_matrix(matrix, n, dim, source="test")


def test_check_matrix_survives_huge_components() -> None:
    # Squaring 1e30 in float32 overflows; the norm must still come out right.
    out = check_matrix(np.array([[1e30, 1e30]], dtype=np.float32), 1, 2)
    np.testing.assert_allclose(out, [[2**-0.5, 2**-0.5]], atol=1e-6)
