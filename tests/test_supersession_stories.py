"""Two chats through the command line with the real model, as a new user runs them: ingest
the messages, ``index --once --flush``, recall. A change told in plain words replaces the
old instruction; a reason is never replaced by the next instruction."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.cli import app

pytestmark = pytest.mark.model
NOW = datetime.now(UTC)


def chat(
    tmp_path: Path, db_url: str, lines: list[tuple[str, str, str, str, datetime]]
) -> dict[str, str]:
    env = {"EPISODIC_DB": db_url, "EPISODIC_EMBEDDER": "local"}
    events = [
        {
            "workspace": "acme",
            "conversation": conversation,
            "agent": "helper",
            "type": "message",
            "summary": text,
            "payload": {"role": role, "name": name},
            "ts": ts.isoformat(),
        }
        for conversation, role, name, text, ts in lines
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n", encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(app, ["init"], env=env).exit_code == 0
    done = runner.invoke(app, ["ingest", str(path)], env=env)
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["index", "--once", "--flush"], env=env)
    assert done.exit_code == 0, done.output
    return env


def recall(env: dict[str, str], query: str) -> list[dict[str, Any]]:
    found = CliRunner().invoke(app, ["recall", query, "--workspace", "acme", "--json"], env=env)
    assert found.exit_code == 0, found.output
    hits: list[dict[str, Any]] = json.loads(found.stdout)
    return hits


def test_a_new_courier_from_now_on_replaces_the_old_one(tmp_path: Path, db_url: str) -> None:
    then, later = NOW - timedelta(days=30), NOW - timedelta(days=9)
    env = chat(
        tmp_path,
        db_url,
        [
            (
                "c1",
                "user",
                "Sam",
                "Ship all my parcels with the courier Falcon Express, they "
                "handle fragile items well.",
                then,
            ),
            (
                "c1",
                "assistant",
                "helper",
                "Noted: Falcon Express for all your parcels.",
                then + timedelta(minutes=1),
            ),
            (
                "c2",
                "user",
                "Sam",
                "Falcon Express broke two vases. From now on ship my parcels "
                "with Heron Logistics instead.",
                later,
            ),
            ("c2", "assistant", "helper", "Understood.", later + timedelta(minutes=1)),
        ],
    )
    hits = recall(env, "which courier should ship my parcels")

    assert hits and "Heron Logistics" in hits[0]["content"], [h["content"] for h in hits]
    # The old instruction, its restatement and what was made from them are out of recall.
    assert not [h for h in hits if "Falcon Express" in h["content"] and "Heron" not in h["content"]]


def test_why_a_refund_failed_survives_the_new_card(tmp_path: Path, db_url: str) -> None:
    start = NOW - timedelta(days=2)
    env = chat(
        tmp_path,
        db_url,
        [
            ("c1", "user", "Dana", "Did the refund for INV-20931 go through?", start),
            (
                "c1",
                "assistant",
                "helper",
                "The refund for INV-20931 failed because the card ending 4242 had expired.",
                start + timedelta(minutes=1),
            ),
            (
                "c1",
                "user",
                "Dana",
                "Refund it to the new card ending 1881 instead.",
                start + timedelta(minutes=2),
            ),
        ],
    )
    hits = recall(env, "why did the refund for INV-20931 fail")

    assert any("had expired" in h["content"] for h in hits), [h["content"] for h in hits]
    listed = CliRunner().invoke(
        app,
        ["recall", "refund card", "--workspace", "acme", "--json", "--include-superseded"],
        env=env,
    )
    assert listed.exit_code == 0, listed.output
    assert not [h for h in json.loads(listed.stdout) if h.get("valid_to")]
