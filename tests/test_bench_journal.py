"""`episodic bench journal`: the runner on a tiny set of our own, and the shipped set.

The tiny set (``tests/fixtures/journal_tiny``) has three days, a few filler events no
admission keeps, and five hand-written ones; its queries are built so BM25's ranking is
known: one rare word per query, one query judging an event admission refuses, one
judging three events of which two share its words, and one about a value that changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.bench.journal import (
    REPORTED,
    VARIANTS,
    QueryRun,
    live_journal,
    resolve,
    run_journal,
    stale_first,
)
from episodic.bench.journal_data import generate, load_set
from episodic.cli import app
from episodic.config import Settings
from episodic.errors import InvalidInput, UnknownPolicy
from episodic.model import ScopeFilter
from episodic.recall.policies import DEFAULT, POLICIES
from episodic.service import Episodic
from episodic.store import open_store

TINY = Path(__file__).parent / "fixtures" / "journal_tiny"
SHIPPED = Path(__file__).parent.parent / "benchmarks" / "journal_recall"
runner = CliRunner()


@pytest.fixture
def sparse_env(tmp_path: Path) -> dict[str, str]:
    return {"EPISODIC_EMBEDDER": "none", "EPISODIC_CACHE_DIR": str(tmp_path / "cache")}


@pytest.fixture
def sparse(sparse_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    for name, value in sparse_env.items():
        monkeypatch.setenv(name, value)
    yield Settings.from_env()


def test_runner_scores_a_known_ranking(sparse: Settings) -> None:
    runs: list[QueryRun] = []
    report = run_journal(TINY, ["bm25"], sparse, observe=runs.append)
    rankings = {run.query.id: run.ranking for run in runs}
    # One rare word each: found first. "zebra" is only in a tool call, never a memory.
    assert rankings["t1"] == ("quokka",) and rankings["t2"] == ("outage",)
    assert rankings["t3"] == ()
    # t4 judges three events; its words match two of them, at ranks 1 and 2.
    assert set(rankings["t4"]) == {"quokka", "outage"}
    t4 = next(run.scores for run in runs if run.query.id == "t4")
    ndcg_t4 = (1 + 1 / 1.584962500721156) / (1 + 1 / 1.584962500721156 + 1 / 2)
    assert t4["recall@5"] == pytest.approx(2 / 3)
    assert t4["ndcg@10"] == pytest.approx(ndcg_t4)
    # t5: the furnace's temperature changed; the shorter, older entry ranks first.
    assert rankings["t5"] == ("furnace-old", "furnace-new")
    bm25 = report["policies"]["bm25"]
    r5 = (1 + 1 + 0 + 2 / 3 + 1) / 5
    assert bm25["recall@5"] == bm25["recall@10"] == pytest.approx(round(r5, 4))
    ndcg = (1 + 1 + 0 + ndcg_t4 + 1 / 1.584962500721156) / 5
    assert bm25["ndcg@10"] == pytest.approx(round(ndcg, 4))
    assert bm25["stale_first"] == 1.0  # of the one query with a superseded answer
    assert bm25["by_kind"]["current"]["recall@5"] == 0.5  # t3 (never admitted) and t5
    assert bm25["by_kind"]["lesson"]["ndcg@10"] == 1.0
    # the judged tool call was never admitted, and the report says so
    assert report["judged_inactive"] == ["ignored"]
    assert (report["events"], report["memories"], report["queries"]) == (16, 4, 5)


def test_the_run_lives_like_a_runtime(sparse: Settings) -> None:
    """Recalls made during the days mark what they return, and the nightly decay lowers
    the importance of what has aged since."""
    data = load_set(TINY)
    with live_journal(data, sparse, say=lambda _line: None) as lived:
        (old,) = lived.mem.memories(ScopeFilter("tiny"), ["furnace-old"])
        (sticker,) = lived.mem.memories(ScopeFilter("tiny"), ["quokka"])
    assert old.reference_count >= 1  # the day-1 recall "furnace temperature" found it
    # no recall found the day-0 note: its importance decayed since
    assert sticker.reference_count == 0 and sticker.importance < sticker.base_importance


def test_command_json_shape(sparse_env: dict[str, str]) -> None:
    result = runner.invoke(
        app,
        ["bench", "journal", "--data", str(TINY), "--json", "--policy", "default,default-no-prior"],
        env=sparse_env,
    )
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    assert {"events", "queries", "days", "embedder", "policies"} <= set(report)
    assert (report["days"], report["queries"], report["embedder"]) == (3, 5, "none")
    assert list(report["policies"]) == ["default", "default-no-prior"]
    for scores in report["policies"].values():
        assert all(0.0 <= scores[key] <= 1.0 for key in (*REPORTED, "stale_first"))
        assert set(scores["latency_ms"]) == {"p50", "p95"}


def test_command_table(sparse_env: dict[str, str]) -> None:
    result = runner.invoke(
        app, ["bench", "journal", "--data", str(TINY), "--policy", "bm25"], env=sparse_env
    )
    assert result.exit_code == 0, result.output
    assert "ndcg@10" in result.stdout and "bm25" in result.stdout


def test_command_missing_data_folder(sparse_env: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = runner.invoke(app, ["bench", "journal", "--data", str(missing)], env=sparse_env)
    assert result.exit_code == 2
    assert "data" in result.stderr and "no such folder" in result.stderr


def test_broken_query_file_names_data(tmp_path: Path) -> None:
    for name in ("journal.json", "storylines.json"):
        (tmp_path / name).write_text((TINY / name).read_text())
    (tmp_path / "queries.json").write_text('[{"id": "x", "query": "q", "relevant": ["nope"]}]')
    with pytest.raises(InvalidInput) as caught:
        load_set(tmp_path)
    assert caught.value.field == "data" and "nope" in str(caught.value)


def test_broken_story_time_names_data(tmp_path: Path) -> None:
    for name in ("journal.json", "queries.json"):
        (tmp_path / name).write_text((TINY / name).read_text())
    stories = json.loads((TINY / "storylines.json").read_text())
    stories["events"][0]["at"] = "25:00"
    (tmp_path / "storylines.json").write_text(json.dumps(stories))
    with pytest.raises(InvalidInput) as caught:
        load_set(tmp_path)
    assert caught.value.field == "data" and "events[0].at" in str(caught.value)


def test_stale_first() -> None:
    assert stale_first(["x", "old", "new"], ["new"], ["old"])
    assert not stale_first(["new", "old"], ["new"], ["old"])
    assert stale_first(["old"], ["new"], ["old"])  # found the old answer, not the new
    assert not stale_first(["x"], ["new"], ["old"])  # found neither: a miss, not stale


def test_policies_and_the_no_prior_variant() -> None:
    assert resolve("all") == [*POLICIES, "default-no-prior"]
    assert resolve("default-no-prior,bm25") == ["default-no-prior", "bm25"]
    variant = VARIANTS["default-no-prior"]
    assert variant.importance_weight == 0.0 and DEFAULT.importance_weight > 0.0
    assert variant.legs == DEFAULT.legs and variant.factors == DEFAULT.factors
    with pytest.raises(UnknownPolicy):
        resolve("default,nonsense")


def test_the_shipped_set(tmp_path: Path) -> None:
    data = load_set(SHIPPED)
    days = generate(data)
    again = generate(load_set(SHIPPED))
    ids = [e["id"] for day in days for e in day.events]
    assert ids == [e["id"] for day in again for e in day.events]  # deterministic
    assert [d.events for d in days] == [d.events for d in again]
    assert len(ids) == len(set(ids)) >= 5000
    dates = {date.fromisoformat(e["ts"][:10]) for day in days for e in day.events}
    assert len(days) == data.days == 90 and len(dates) == 90
    assert len(data.queries) >= 150
    assert all(q.relevant for q in data.queries)
    assert len({q.agent for q in data.queries} - {None}) >= 4
    assert len(set(data.agents.values())) >= 3  # several crews in one workspace
    # every judged id is an event of the journal that admission makes a memory
    judged = sorted({r for q in data.queries for r in q.relevant})
    events = [e for day in days for e in day.events if e["id"] in set(judged)]
    assert sorted(e["id"] for e in events) == judged
    with Episodic(store=open_store(f"sqlite:///{tmp_path / 'j.db'}"), embedder=None) as mem:
        assert not mem.ingest(events).errors
        found = mem.memories(ScopeFilter(data.workspace), judged)
    assert sorted(m.id for m in found) == judged
