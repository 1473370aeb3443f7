"""CachedEmbedder: identical text is embedded once per model, however often it recurs."""

from __future__ import annotations

import numpy as np
import pytest

from episodic.embed import (
    CachedEmbedder,
    DictCache,
    Embedder,
    EmbeddingCache,
    FakeEmbedder,
    content_hash,
)
from episodic.errors import EmbedderUnavailable


def test_content_hash_is_sha256_of_utf8() -> None:
    # Known digests, so a change of encoding or algorithm cannot slip through.
    assert content_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert content_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    # UTF-8 bytes c3 a9, not Latin-1 e9 (whose digest would start de2e331d).
    assert content_hash("é") == "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"


def test_second_request_for_the_same_texts_never_reaches_the_model() -> None:
    inner = FakeEmbedder()
    emb = CachedEmbedder(inner, DictCache())
    first = emb.embed_batch(["deploy failed", "user prefers dark mode"])
    second = emb.embed_batch(["user prefers dark mode", "deploy failed"])
    assert inner.calls == 1 and inner.texts_embedded == 2
    np.testing.assert_array_equal(second, first[::-1])


def test_only_unseen_texts_are_embedded() -> None:
    inner = FakeEmbedder()
    emb = CachedEmbedder(inner, DictCache())
    emb.embed_batch(["a b c"])
    out = emb.embed_batch(["a b c", "d e f", "g h"])
    assert inner.texts_embedded == 3  # 1 + the 2 new ones
    np.testing.assert_allclose(out, FakeEmbedder().embed_batch(["a b c", "d e f", "g h"]))


def test_duplicates_within_a_batch_are_embedded_once() -> None:
    inner = FakeEmbedder()
    emb = CachedEmbedder(inner, DictCache())
    out = emb.embed_batch(["same", "other", "same", "same"])
    assert inner.texts_embedded == 2
    assert out.shape == (4, inner.dim)
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[0], out[3])
    assert not np.allclose(out[0], out[1])


def test_cache_is_keyed_by_model() -> None:
    cache = DictCache()
    small, large = FakeEmbedder(dim=16), FakeEmbedder(dim=32)
    CachedEmbedder(small, cache).embed_batch(["shared text"])
    out = CachedEmbedder(large, cache).embed_batch(["shared text"])
    assert large.calls == 1 and out.shape == (1, 32)
    assert len(cache) == 2
    # And each model still hits its own entry afterwards.
    CachedEmbedder(small, cache).embed_batch(["shared text"])
    assert small.calls == 1


def test_failure_caches_nothing_and_the_next_call_retries() -> None:
    inner = FakeEmbedder(fail=True)
    cache = DictCache()
    emb = CachedEmbedder(inner, cache)
    with pytest.raises(EmbedderUnavailable):
        emb.embed_batch(["during the outage"])
    assert len(cache) == 0
    inner.fail = False
    assert emb.embed_batch(["during the outage"]).shape == (1, inner.dim)
    assert inner.texts_embedded == 1


def test_fully_cached_batch_works_while_the_model_is_down() -> None:
    inner = FakeEmbedder()
    emb = CachedEmbedder(inner, DictCache())
    before = emb.embed_batch(["remembered"])
    inner.fail = True
    np.testing.assert_array_equal(emb.embed_batch(["remembered"]), before)


def test_cached_rows_of_the_wrong_size_are_re_embedded() -> None:
    inner = FakeEmbedder(dim=8)
    cache = DictCache()
    cache.cache_put(inner.model_id, {content_hash("old"): np.ones(4, dtype=np.float32)})
    out = CachedEmbedder(inner, cache).embed_batch(["old", "new"])
    assert out.shape == (2, 8) and inner.texts_embedded == 2
    assert cache.cache_get(inner.model_id, [content_hash("old")])[content_hash("old")].shape == (8,)


def test_callers_cannot_corrupt_the_cache_through_results() -> None:
    emb = CachedEmbedder(FakeEmbedder(), DictCache())
    out = emb.embed_batch(["mutable"])
    expected = out.copy()
    out[:] = 0.0
    np.testing.assert_array_equal(emb.embed_batch(["mutable"]), expected)


def test_protocols_and_empty_batch() -> None:
    cache = DictCache()
    emb = CachedEmbedder(FakeEmbedder(dim=12), cache)
    assert isinstance(cache, EmbeddingCache) and isinstance(emb, Embedder)
    assert emb.model_id == "fake-bow-12" and emb.dim == 12
    assert emb.embed_batch([]).shape == (0, 12)
