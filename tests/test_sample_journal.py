"""The bundled demo journal: ingestible, selective, and able to answer the demo queries."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic.config import Settings
from episodic.model import PRIORITIES, SEVERITIES
from episodic.policy import admit
from episodic.write.events import parse_event

ROOT = Path(__file__).resolve().parent.parent
JOURNAL = ROOT / "src" / "episodic" / "data" / "sample_journal.jsonl"
SCRIPT = ROOT / "scripts" / "make_sample_journal.py"
WORKSPACES = ("acme-shop", "orbit-labs")
LAST_DAY = datetime(2026, 11, 20, tzinfo=UTC)


def _load() -> list[dict[str, Any]]:
    with JOURNAL.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


ROWS = _load()


def _admitted(row: dict[str, Any]) -> bool:
    return admit(row["type"], row["severity"], row["payload"], row.get("refs", {}))


def test_size_and_unique_ids() -> None:
    assert 300 <= len(ROWS) <= 500
    ids = [row["id"] for row in ROWS]
    assert len(set(ids)) == len(ids)


def test_every_line_is_accepted_by_the_ingest_parser() -> None:
    now = LAST_DAY + timedelta(days=1)
    for row in ROWS:
        event = parse_event(row, settings=Settings(), now=now)
        assert event.id == row["id"]


def test_fields_are_valid() -> None:
    for row in ROWS:
        assert row["severity"] in SEVERITIES, row["id"]
        assert row["summary"].strip(), row["id"]
        assert isinstance(row["payload"], dict), row["id"]
        refs = row.get("refs", {})
        assert set(refs) <= {"episodic", "priority"}, row["id"]
        assert refs.get("priority", "pin") in PRIORITIES, row["id"]
        assert isinstance(refs.get("episodic", False), bool), row["id"]


def test_two_workspaces_each_with_crews_and_agents() -> None:
    assert {row["workspace"] for row in ROWS} == set(WORKSPACES)
    for ws in WORKSPACES:
        rows = [row for row in ROWS if row["workspace"] == ws]
        assert 1 <= len({row["crew"] for row in rows}) <= 2
        assert 3 <= len({row["agent"] for row in rows}) <= 5


def test_spans_about_sixty_days_ending_on_the_last_day() -> None:
    times = [datetime.fromisoformat(row["ts"]) for row in ROWS]
    assert max(times).date() == LAST_DAY.date()
    assert timedelta(days=55) <= max(times) - min(times) <= timedelta(days=61)


@pytest.mark.parametrize("workspace", WORKSPACES)
def test_each_workspace_has_memorable_events(workspace: str) -> None:
    admitted = [row for row in ROWS if row["workspace"] == workspace and _admitted(row)]
    assert len(admitted) >= 30


def test_admission_is_selective() -> None:
    refused = sum(not _admitted(row) for row in ROWS)
    assert refused / len(ROWS) >= 0.60


def test_shows_the_never_list_beating_the_override() -> None:
    tagged_noise = [
        row
        for row in ROWS
        if row.get("refs", {}).get("episodic") is True and row["type"] == "exec.output_chunk"
    ]
    assert tagged_noise and not any(_admitted(row) for row in tagged_noise)


def test_uses_every_priority_marker_on_admitted_events() -> None:
    used = Counter(
        row["refs"]["priority"]
        for row in ROWS
        if "priority" in row.get("refs", {}) and _admitted(row)
    )
    assert set(used) == set(PRIORITIES)


# Each theme: every group must have one of its words in the summary.
THEMES = [
    ("acme-shop", None, [("oom", "out of memory"), ("checkout",)], 3),
    ("acme-shop", "deployer", [("keeper",), ("denied",), ("production",)], 3),
    ("acme-shop", None, [("regression", "ndcg"), ("ranker", "ranking")], 2),
    ("orbit-labs", None, [("regression", "ndcg", "recall@50"), ("ranker", "ranking")], 3),
    ("orbit-labs", None, [("oom", "out of memory")], 3),
    ("orbit-labs", "deployer", [("keeper",), ("denied",), ("production",)], 2),
]


@pytest.mark.parametrize(("workspace", "agent", "groups", "at_least"), THEMES)
def test_demo_queries_have_admitted_answers(
    workspace: str, agent: str | None, groups: list[tuple[str, ...]], at_least: int
) -> None:
    matches = [
        row["id"]
        for row in ROWS
        if row["workspace"] == workspace
        and _admitted(row)
        and (agent is None or row["agent"] == agent)
        and all(any(word in row["summary"].lower() for word in group) for group in groups)
    ]
    assert len(matches) >= at_least, matches


def test_committed_file_matches_the_generator() -> None:
    spec = importlib.util.spec_from_file_location("make_sample_journal", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve string annotations through sys.modules.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    assert module.build() == ROWS, "re-run scripts/make_sample_journal.py and commit the file"
