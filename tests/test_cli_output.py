"""What the command line prints, read as a person at an 80-column terminal reads it: every
id a later command takes is shown whole (recall, keys list, memory list); help texts are
whole sentences; counts take the right form of the word; ``warning`` is a severity."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
NARROW = {"COLUMNS": "80", "EPISODIC_EMBEDDER": "none"}


def run(*args: str, input: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=NARROW, input=input)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/m.db"
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        for i in range(3):
            mem.remember(
                f"checkout OOM number {i}: the cache kept whole cart snapshots per entry and "
                "the entry cap was multiplied by five, so the pods ran out of memory at night",
                workspace="acme",
                agent="deployer",
                id=f"note-with-a-rather-long-identifier-{i}",
            )
    return url


def test_recall_shows_each_hits_id_whole_and_its_text_unsqueezed(db: str) -> None:
    code, out, _ = run("--db", db, "recall", "checkout OOM cache", "-w", "acme")
    assert code == 0
    lines = out.splitlines()
    for i in range(3):
        assert any(f"note-with-a-rather-long-identifier-{i}" in line for line in lines), out
    # The text runs at the terminal's width, not in a column of ~20 characters.
    assert any("the cache kept whole cart snapshots per entry" in line for line in lines), out
    # The id works as `memory history` takes it.
    hit_id = re.search(r"note-with-a-rather-long-identifier-\d", out)
    assert hit_id is not None
    assert run("--db", db, "memory", "history", hit_id.group(0), "-w", "acme")[0] == 0


def test_memory_list_shows_ids_whole_at_80_columns(db: str) -> None:
    code, out, _ = run("--db", db, "memory", "list", "-w", "acme")
    assert code == 0
    for i in range(3):
        assert f"note-with-a-rather-long-identifier-{i}" in out, out
    # The text runs at the terminal's width, not in a column a few letters wide.
    lines = out.splitlines()
    assert any("the cache kept whole cart snapshots per entry" in line for line in lines), out
    assert sum("checkout OOM number" in line for line in lines) == 3, out


def test_memory_list_keeps_a_generated_id_whole_and_the_text_readable(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/g.db"
    text = "deploys to checkout need the VPN and a heap profile under load for any cache change"
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        made = mem.remember(text, workspace="acme", agent="deployer")
    code, out, _ = run("--db", url, "memory", "list", "-w", "acme")
    assert code == 0
    assert made.id in out and text in out, out
    assert run("--db", url, "memory", "history", made.id, "-w", "acme")[0] == 0


def test_journal_shows_times_agents_and_summaries_whole_at_80_columns(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/j.db"
    summary = "Pairing on checkout-api flakiness after lunch? The retries hide a real timeout"
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        mem.ingest(
            [
                {
                    "id": "evt-acme-0125-with-a-long-tail",
                    "ts": "2026-10-24T09:02:53Z",
                    "type": "peer.conversation",
                    "severity": "info",
                    "workspace": "acme",
                    "agent": "deployer-of-checkout",
                    "summary": summary,
                }
            ]
        )
    code, out, _ = run("--db", url, "journal", "checkout flakiness", "-w", "acme")
    assert code == 0, out
    lines = out.splitlines()
    heading = next(line for line in lines if "evt-acme-0125-with-a-long-tail" in line)
    for whole in ("2026-10-24T09:02:53+00:00", "peer.conversation", "deployer-of-checkout"):
        assert whole in heading, out
    assert any(summary in line for line in lines), out


def test_keys_list_shows_ids_whole_at_80_columns_and_revoke_takes_them(db: str) -> None:
    for label in ("the deploy bot of the checkout team", "the on-call assistant"):
        code, _, err = run(
            "--db", db, "keys", "create", "-w", "acme", "--role", "agent", "--agent", "deployer",
            "--label", label,
        )  # fmt: skip
        assert code == 0, err
    ids = [k["id"] for k in json.loads(run("--db", db, "keys", "list", "--json")[1])]
    code, out, _ = run("--db", db, "keys", "list")
    assert code == 0
    shown = re.findall(r"k_[0-9a-f]+", out)
    assert shown == ids, out  # whole, not k_e9f63…
    assert run("--db", db, "keys", "revoke", shown[0])[0] == 0
    assert "revoked" in run("--db", db, "keys", "list")[1].splitlines()[0]


def test_counts_take_the_right_form_of_the_word(db: str, tmp_path: Path) -> None:
    one = json.dumps({"workspace": "acme", "type": "approval.denied", "summary": "one thing"})
    code, out, _ = run("--db", db, "ingest", "-", input=one + "\n")
    assert code == 0 and "stored 1 event (1 admitted as memory" in out
    code, out, _ = run("--db", db, "recall", "checkout OOM number 1", "-w", "acme", "-k", "1")
    assert code == 0 and out.startswith("1 memory (") and "1 memories" not in out
    code, out, _ = run(
        "--db", db, "forget", "-w", "acme", "--memory", "note-with-a-rather-long-identifier-0"
    )
    assert code == 0 and "forgot 1 memory and 1 event" in out


def test_the_severity_warning_is_taken_as_warn(db: str) -> None:
    check = {"workspace": "acme", "type": "deploy.check"}
    events = [
        {**check, "severity": "warning", "summary": "canary rollout paused"},
        {**check, "severity": "WARNING", "summary": "canary rollout slowed"},
        {**check, "severity": "warnnig", "summary": "canary rollout stopped"},
    ]
    lines = "".join(json.dumps(e) + "\n" for e in events)
    code, out, _ = run("--db", db, "ingest", "-", "--json", input=lines)
    report = json.loads(out)
    assert code == 1 and report["stored"] == 2
    (bad,) = report["errors"]
    assert bad["field"] == "severity" and "warning for warn" in bad["message"]
    journal = json.loads(run("--db", db, "journal", "canary rollout", "-w", "acme", "--json")[1])
    assert {hit["severity"] for hit in journal} == {"warn"}


def helps(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(where, text) for the help of ``command``, its options and its subcommands."""
    found = [(" ".join(path) or "episodic", command.help or "")]
    for param in command.params:
        if getattr(param, "help", None):
            found.append((f"{' '.join(path)} {param.name}", param.help))
    for name, sub in getattr(command, "commands", {}).items():
        found += helps(sub, (*path, name))
    return found


def test_every_help_text_is_whole_sentences() -> None:
    texts = helps(typer.main.get_command(app))
    assert len(texts) > 150  # every command, group and option
    for where, text in texts:
        for paragraph in text.split("\n\n"):
            lines = paragraph.split("\n")
            for line in lines[1:]:
                # A line break inside a paragraph only ever starts an example.
                assert line.startswith("Example:"), (where, paragraph)
    # The break the decay help had in the middle of a sentence is gone.
    decay = dict(texts)["upkeep decay"]
    assert "from base importance, age and references" in decay


@pytest.mark.parametrize(
    "command",
    [
        ["recall", "checkout OOM", "-w", "acme"],
        ["render", "checkout OOM", "-w", "acme"],
        ["index", "--once"],
    ],
    ids=lambda c: c[0],
)
def test_a_sparse_only_command_says_why_once(db: str, command: list[str]) -> None:
    # An embedder configured but down: the mode line says why and how to fix it; the
    # recall's (or the sweep's) own shorter warning would say it a second time.
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "COLUMNS": "200",
        "EPISODIC_EMBEDDER": "ollama",
        "EPISODIC_OLLAMA_URL": "http://127.0.0.1:9",
    }
    env.pop("EPISODIC_LOG_FORMAT", None)
    done = subprocess.run(
        [sys.executable, "-m", "episodic.cli", "--db", db, *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot reach Ollama") == 1, done.stderr
    assert done.stderr.count("sparse-only") == 1, done.stderr
    assert "Run `episodic doctor` for how to fix it" in done.stderr


def test_a_sparse_only_command_whose_log_goes_elsewhere_still_says_why(db: str) -> None:
    # In-process (an application, or here a test runner that takes the logs), the mode
    # line is written to a log handler, not to the command's stderr: the short warning
    # must still be printed, by every command, not only the first of the process.
    env = {
        "COLUMNS": "200",
        "EPISODIC_EMBEDDER": "ollama",
        "EPISODIC_OLLAMA_URL": "http://127.0.0.1:9",
        "EPISODIC_EMBED_TIMEOUT": "2",
    }
    for _ in range(2):
        result = runner.invoke(app, ["--db", db, "recall", "checkout OOM", "-w", "acme"], env=env)
        assert result.exit_code == 0, result.stderr
        assert "sparse-only" in result.stderr, result.stderr


def test_an_empty_render_says_so_at_a_terminal_and_prints_nothing_to_a_hook(db: str) -> None:
    import pty

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "EPISODIC_EMBEDDER": "none"}
    command = [sys.executable, "-m", "episodic.cli", "--db", db, "render", "zebra", "-w", "acme"]
    hook = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert hook.returncode == 0 and hook.stdout == ""
    assert "nothing recalled" not in hook.stderr
    leader, follower = pty.openpty()
    try:
        person = subprocess.run(
            command, env=env, stdout=subprocess.PIPE, stderr=follower, timeout=120
        )
        said = os.read(leader, 4096).decode()
    finally:
        os.close(follower)
        os.close(leader)
    assert person.returncode == 0 and person.stdout == b""
    assert "nothing recalled" in said and "--explain" in said


def test_a_long_memory_is_listed_and_recalled_by_a_part_and_shown_whole_on_asking(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/long.db"
    filler = "Tuning notes on pooling, autovacuum and indexes for the orders database. " * 80
    answer = filler + "Neon cold starts: keep one compute warm for the checkout service."
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        mem.remember(answer, workspace="acme", id="long-answer")
    code, out, _ = run("--db", url, "memory", "list", "-w", "acme")
    assert code == 0
    # A page of listings stays readable: the text is cut, and says how to get it whole.
    assert len(out) < 1000, out
    assert f"({len(answer):,} characters; whole: episodic memory show long-answer -w acme)" in out
    code, out, _ = run("--db", url, "recall", "neon cold starts", "-w", "acme")
    assert code == 0
    # The hit shows the passage that matched, not the answer's first characters.
    assert "keep one compute warm" in out, out
    assert f"{len(answer):,} characters" in out and len(out) < 2500, out
    assert "keep one compute warm for the checkout service. (" in out, out
    code, out, _ = run("--db", url, "memory", "show", "long-answer", "-w", "acme")
    assert code == 0 and answer in out.replace("\n", "")


def test_recall_prints_a_tiny_score_in_two_digits_not_as_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from datetime import UTC, datetime

    from episodic.cli.recalling import print_hits
    from episodic.model import Hit, Memory
    from episodic.recall.result import RecallResult

    m = Memory(
        id="evt_long",
        workspace="w",
        ts=datetime(2026, 11, 1, tzinfo=UTC),
        type="note",
        content="the deploy failed on a stale Redis password",
    )
    print_hits(RecallResult([Hit(memory=m, score=0.0003, age_seconds=60)], "vector", "default"))
    out = capsys.readouterr().out
    assert "score 3.0e-04 ·" in out and "score 0.000" not in out
