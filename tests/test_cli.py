"""The `episodic` command as a script would use it (sparse-only: no model needed here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from episodic.cli import app

runner = CliRunner()

EVENTS = [
    {
        "id": "e1",
        "workspace": "acme",
        "agent": "deployer",
        "type": "peer.escalation",
        "severity": "warn",
        "summary": "checkout OOM after cache TTL change",
        "payload": {"service": "checkout"},
        "ts": "2026-11-19T10:00:00Z",
    },
    {
        "id": "e2",
        "workspace": "acme",
        "agent": "deployer",
        "type": "approval.denied",
        "summary": "keeper denied production deploy",
        "ts": "2026-11-18T10:00:00Z",
    },
    {
        "id": "e3",
        "workspace": "orbit",
        "agent": "trainer",
        "type": "eval.regression_detected",
        "summary": "ranking model NDCG dropped after feature removal",
    },
]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    env = {"EPISODIC_DB": f"sqlite:///{tmp_path}/m.db"}
    assert runner.invoke(app, ["init"], env=env).exit_code == 0
    return env


def run(env: dict[str, str], *args: str, input: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env, input=input)
    return result.exit_code, result.stdout, result.stderr


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ingest_recall_render_round_trip(env: dict[str, str], tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "j.jsonl", [json.dumps(e) for e in EVENTS])
    code, out, _ = run(env, "ingest", str(f))
    assert code == 0 and "stored 3 events (3 admitted as memories, 0 already present)" in out

    code, out, _ = run(env, "recall", "checkout OOM", "--workspace", "acme", "--json")
    assert code == 0
    hits = json.loads(out)
    assert hits[0]["id"] == "e1"
    for key in (
        "id",
        "score",
        "content",
        "type",
        "agent",
        "workspace",
        "payload",
        "age_seconds",
    ):
        assert key in hits[0]
    assert hits[0]["payload"] == {"service": "checkout"}
    assert all(h["workspace"] == "acme" for h in hits)

    code, out, _ = run(
        env, "render", "keeper denied deploy", "--workspace", "acme", "--max-chars", "600"
    )
    assert code == 0 and out.startswith("<recalled-memory>") and len(out.rstrip("\n")) <= 600


def test_ingest_from_stdin(env: dict[str, str]) -> None:
    code, out, _ = run(env, "ingest", "-", input=json.dumps(EVENTS[2]) + "\n")
    assert code == 0 and "stored 1 event " in out


def test_bad_lines_reported_by_number_rest_stored_exit_1(
    env: dict[str, str], tmp_path: Path
) -> None:
    f = write_jsonl(
        tmp_path / "j.jsonl",
        [
            json.dumps(EVENTS[0]),
            "{oops",
            json.dumps({"summary": "no ws"}),
            json.dumps({"workspace": "acme", "severity": "fatal"}),
            json.dumps(EVENTS[1]),
        ],
    )
    code, out, err = run(env, "ingest", str(f))
    assert code == 1
    assert "stored 2 events" in out
    assert "line 2: json: malformed JSON" in err
    assert "line 3: workspace: required" in err
    assert "line 4: severity: unknown severity 'fatal'" in err
    code, out, _ = run(env, "recall", "keeper", "--workspace", "acme", "--json")
    assert [h["id"] for h in json.loads(out)] == ["e2"]


def test_errors_name_the_field_and_exit_2(env: dict[str, str]) -> None:
    code, _, err = run(env, "recall", "x", "--workspace", "acme", "--scope", "own")
    assert code == 2 and "agent" in err and "--agent" in err
    code, _, err = run(env, "ingest", "/no/such/file.jsonl")
    assert code == 2 and "no such file" in err
    code, _, err = run(env, "recall", "x", "--workspace", "acme", "--policy", "nope")
    assert code == 2 and "unknown recall policy 'nope'" in err


def test_doctor_reports_sparse_only_and_the_fix(env: dict[str, str]) -> None:
    code, out, _ = run(env, "doctor", "--json")
    report = json.loads(out)
    assert code == 0 and report["episodic"] == "sparse-only"
    embedder = next(c for c in report["checks"] if c["name"] == "embedder")
    assert embedder["status"] == "warn" and "EPISODIC_EMBEDDER=local" in embedder["fix"]


def test_unknown_embedder_choice_is_refused(env: dict[str, str]) -> None:
    code, _, err = run({**env, "EPISODIC_EMBEDDER": "magic"}, "doctor")
    assert code != 0 and "EPISODIC_EMBEDDER" in err


def test_every_command_has_help_with_an_example() -> None:
    group = typer.main.get_group(app)
    expected = {"init", "ingest", "index", "reindex", "recall", "render", "doctor", "demo"}
    assert expected <= set(group.commands)
    # The README and the docs pages it links to.
    root = Path(__file__).parents[1]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    readme = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    for name, command in group.commands.items():
        assert command.help and re.search(r"Example: .*episodic", command.help), name
        assert f"episodic {name}" in readme, f"the docs do not document `episodic {name}`"


CHAT = [
    ("user", "Dana", "The refund failed because the customer card B had expired last month."),
    ("assistant", "Helper", "I see. Card B expired, so the refund cannot go back to it."),
    ("user", "Dana", "We moved the refund to card A and that worked fine in the end."),
    ("assistant", "Helper", "Good, card A accepted it."),
]


def test_messages_flush_into_episodes_listed_by_recent(env: dict[str, str], tmp_path: Path) -> None:
    lines = [
        json.dumps(
            {
                "workspace": "acme",
                "conversation": "chat-42",
                "agent": "helper",
                "type": "message",
                "summary": text,
                "payload": {"role": role, "name": name},
                "ts": f"2026-11-19T10:0{i}:00Z",
            }
        )
        for i, (role, name, text) in enumerate(CHAT)
    ]
    assert run(env, "ingest", str(write_jsonl(tmp_path / "chat.jsonl", lines)))[0] == 0
    code, out, _ = run(env, "recent", "--workspace", "acme", "--json")
    assert (code, json.loads(out)) == (0, [])  # the session is still open
    code, out, _ = run(env, "index", "--once", "--flush", "--json")
    assert code == 0
    assert json.loads(out)["segmentation"]["episodes"] == 1
    code, out, _ = run(env, "recent", "--workspace", "acme", "--conversation", "chat-42", "--json")
    (episode,) = json.loads(out)
    assert {"title", "summary", "start", "end", "surprise", "message_count"} <= set(episode)
    assert episode["message_count"] == 4
    assert (episode["start"], episode["end"]) == (
        "2026-11-19T10:00:00+00:00",
        "2026-11-19T10:03:00+00:00",
    )
    code, out, _ = run(
        env, "recall", "refund card", "--workspace", "acme", "--type", "entry", "--json"
    )
    hits = json.loads(out)
    assert code == 0 and hits
    assert all(h["type"] == "entry" and h["source"] == "user_assertion" for h in hits)
    assert all(h["evidence"] in h["content"] for h in hits)
    code, out, _ = run(env, "recent", "--workspace", "acme")
    assert code == 0 and "4 messages" in out
    # The episode's id, whole, as `memory history` takes it.
    assert episode["id"] in out
    assert run(env, "memory", "history", episode["id"], "--workspace", "acme")[0] == 0
    assert run(env, "index", "--flush")[0] == 2  # --flush only makes sense with --once


def test_ingest_names_each_rejected_line_with_its_value_as_written(
    env: dict[str, str],
) -> None:
    good = json.dumps({"workspace": "acme", "type": "peer.escalation", "summary": "disk full"})
    loud = json.dumps(
        {"workspace": "acme", "type": "peer.escalation", "summary": "x", "severity": "[loud]"}
    )
    code, out, err = run(env, "ingest", "-", input=f"{good}\n{loud}\n")
    assert code == 1 and "stored 1 event" in out
    # The value is shown as given, brackets and all (not read as terminal markup).
    assert "rejected line 2: severity: unknown severity '[loud]'" in err
    assert "1 line rejected; the others were stored" in err
    code, _, err = run(env, "ingest", "-", input=f"{loud}\n")
    assert code == 1 and err.strip().endswith("1 line rejected"), err
