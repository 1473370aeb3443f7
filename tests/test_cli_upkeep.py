"""The upkeep commands as a script or cron would use them (sparse-only: no model)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from episodic.cli import app

runner = CliRunner()

EVENTS = [
    {
        "id": f"e{i}",
        "workspace": "acme",
        "agent": "deployer",
        "crew": "platform",
        "type": "peer.escalation",
        "summary": text,
        "ts": "2026-11-19T10:00:00Z",
        "payload": payload,
    }
    for i, (text, payload) in enumerate(
        [
            ("checkout pod OOM killed after the cache TTL change", {}),
            ("checkout pod OOM killed after the cache TTL change again", {}),
            ("design review: keep the API small", {"domain": "task", "phase": "design"}),
        ]
    )
]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    e = {"EPISODIC_DB": f"sqlite:///{tmp_path}/m.db"}
    assert runner.invoke(app, ["init"], env=e).exit_code == 0
    lines = "\n".join(json.dumps(x) for x in EVENTS) + "\n"
    assert runner.invoke(app, ["ingest", "-"], env=e, input=lines).exit_code == 0
    return e


def run(env: dict[str, str], *args: str, input: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env, input=input)
    return result.exit_code, result.stdout, result.stderr


def as_json(out: str) -> Any:
    return json.loads(out)


def test_every_upkeep_command_has_an_example_and_is_documented() -> None:
    group = typer.main.get_group(app)
    # The README and the docs pages it links to.
    root = Path(__file__).parents[1]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    readme = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    for name in ("consolidate", "memory", "upkeep"):
        sub = group.commands[name]
        assert sub.help and re.search(r"Example: .*episodic", sub.help), name
        commands = sub.commands  # type: ignore[attr-defined]
        assert commands, name
        for cmd_name, cmd in commands.items():
            assert cmd.help and re.search(r"Example: .*episodic", cmd.help), cmd_name
            assert f"episodic {name} {cmd_name}" in readme, f"the docs lack {name} {cmd_name}"


def test_decay_and_the_formula_check(env: dict[str, str]) -> None:
    code, out, _ = run(env, "upkeep", "decay", "--json")
    assert code == 0
    (job,) = as_json(out)
    assert (job["job"], job["status"], job["detail"]["formula"]) == ("decay", "ok", "crewship")
    assert job["detail"]["changed"] == 3
    code, _, err = run(env, "upkeep", "decay", "--formula", "linear")
    assert code == 2 and "formula: unknown decay formula 'linear'" in err


def test_consolidate_then_health(env: dict[str, str]) -> None:
    code, out, err = run(env, "memory", "health", "--workspace", "acme")
    assert code == 1 and "no health snapshot yet for acme" in err
    assert "episodic upkeep health --workspace acme" in err
    code, out, _ = run(env, "memory", "health", "--workspace", "acme", "--json")
    assert code == 1 and out.strip() == "null"
    code, out, _ = run(env, "consolidate", "run", "--workspace", "acme", "--json")
    assert code == 0
    (job,) = as_json(out)
    assert job["detail"]["clusters"] == 1 and job["detail"]["summaries"] == 1
    assert run(env, "upkeep", "health")[0] == 0
    code, out, _ = run(env, "memory", "health", "--workspace", "acme", "--json")
    body = as_json(out)
    assert code == 0 and body["band"] in ("red", "yellow", "green") and body["history"] == []
    code, out, _ = run(env, "memory", "health", "--workspace", "acme", "--crew", "platform")
    assert code == 0 and "acme crew platform" in out and "trend, 1 snapshot(s)" in out
    # Sparse-only: nothing embedded, so coverage is 0 and the band is red.
    assert "coverage 0.0" in out and "red" in out


def test_consolidate_run_refreshes_memory_health(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 000: `memory health` reads the latest snapshot, and triggering consolidation
    is how an operator gets a fresh score sooner than the daily job."""
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    env = {"EPISODIC_DB": db_url}
    assert run(env, "init")[0] == 0
    lines = "\n".join(json.dumps(x) for x in EVENTS) + "\n"
    assert run(env, "ingest", "-", input=lines)[0] == 0
    assert run(env, "memory", "health", "--workspace", "acme")[0] == 1
    before = datetime.now(UTC).date().isoformat()
    code, out, _ = run(env, "consolidate", "run", "--workspace", "acme")
    assert code == 0 and re.search(r"ok +consolidate on acme .*health status ok, score", out)
    code, out, _ = run(env, "memory", "health", "--workspace", "acme", "--json")
    body = as_json(out)
    assert code == 0 and body["snapshot_date"] in {before, datetime.now(UTC).date().isoformat()}
    code, out, _ = run(env, "memory", "health", "--workspace", "acme", "--crew", "platform")
    assert code == 0 and "acme crew platform" in out


def test_compact_retire_and_reviews(env: dict[str, str]) -> None:
    code, out, _ = run(env, "upkeep", "compact", "--workspace", "acme", "--json")
    assert code == 0 and as_json(out)[0]["detail"]["compacted"] == 1
    code, out, _ = run(
        env, "upkeep", "retire", "--workspace", "acme", "--phase", "design", "--json"
    )
    assert code == 0 and as_json(out)["retired"] == ["e2"]
    code, _, err = run(env, "upkeep", "retire", "--workspace", "acme", "--phase", " ")
    assert code == 2 and "phase:" in err
    assert run(env, "recall", "checkout cache", "--workspace", "acme")[0] == 0
    code, out, _ = run(
        env, "upkeep", "review", "-", "--workspace", "acme", "--json",
        input="Rolled back the cache TTL change: checkout no longer OOM killed.",
    )  # fmt: skip
    assert code == 0 and as_json(out)["reviews"] == 1
    code, out, _ = run(env, "upkeep", "reviews", "--json")
    assert code == 0 and as_json(out)[0]["status"] == "ok"


def test_the_scheduler_once(env: dict[str, str]) -> None:
    code, out, _ = run(env, "upkeep", "run-scheduler", "--once", "--json")
    jobs = {(j["job"], j["scope"]) for j in as_json(out)}
    assert code == 0 and {("decay", ""), ("reviews", ""), ("health", "acme")} <= jobs
    code, out, _ = run(env, "upkeep", "run-scheduler", "--once")
    assert code == 0 and "nothing to do" in out  # all done for today
    assert run(env, "upkeep", "run-scheduler", "--tick", "0")[0] == 2
