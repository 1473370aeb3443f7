"""End to end with the real bundled MiniLM model: demo, semantic recall, no torch."""

from __future__ import annotations

import importlib.metadata as md
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic import Episodic
from episodic.cli import app
from episodic.embed.local import MiniLMEmbedder
from episodic.store import open_store

pytestmark = pytest.mark.model
NOW = datetime(2026, 11, 21, tzinfo=UTC)


def test_demo_ingests_indexes_and_renders_three_blocks(tmp_path: Path) -> None:
    # --db on the command line: the demo's own file otherwise (the user's data folder).
    demo = ["--db", f"sqlite:///{tmp_path}/demo.db", "demo"]
    env = {"EPISODIC_EMBEDDER": "local"}
    result = CliRunner().invoke(app, demo, env=env)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert re.search(r"admitted as memories", out)
    embedded = int(re.search(r"(\d+) memories embedded \(vector\)", out).group(1))  # type: ignore[union-attr]
    assert embedded > 50
    assert out.count("<recalled-memory>") == 3 and out.count("</recalled-memory>") == 3
    blocks = out.split("<recalled-memory>")[1:]
    assert re.search(r"checkout", blocks[0], re.I) and re.search(r"OOM|memory", blocks[0])
    assert re.search(r"keeper|denied|approval", blocks[1], re.I)
    assert re.search(r"ranking|regression|NDCG", blocks[2], re.I)
    # a second run finds everything already there and still renders
    again = CliRunner().invoke(app, demo, env=env)
    assert again.exit_code == 0 and "0 memories embedded" in again.stdout


def test_dense_leg_finds_a_paraphrase_with_no_shared_words() -> None:
    mem = Episodic(
        store=open_store("sqlite:///:memory:"), embedder=MiniLMEmbedder(), clock=lambda: NOW
    )
    mem.ingest(
        [
            {
                "id": "a",
                "workspace": "w",
                "type": "approval.denied",
                "summary": "keeper refused to ship the release to production without sign-off",
            },
            {
                "id": "b",
                "workspace": "w",
                "type": "peer.escalation",
                "summary": "the bakery order for the team lunch arrived late",
            },
            {
                "id": "c",
                "workspace": "w",
                "type": "peer.escalation",
                "summary": "GPU node ran out of memory while training",
            },
        ]
    )
    assert mem.index_once().embedded == 3
    result = mem.recall("deployment was blocked because nobody approved it", workspace="w", k=1)
    assert result.mode == "vector" and [h.id for h in result.hits] == ["a"]
    assert result.hits[0].bm25_rank is None  # found by meaning alone
    mem.close()


def test_no_torch_installed_or_imported() -> None:
    names = {(d.metadata["Name"] or "").lower() for d in md.distributions()}
    assert not {n for n in names if n == "torch" or n.startswith("nvidia-")}
    code = (
        "import sys; from episodic.embed.local import MiniLMEmbedder; "
        "MiniLMEmbedder().embed_batch(['hello']); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
