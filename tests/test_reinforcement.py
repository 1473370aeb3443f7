"""Seed 001's reinforcement and phases, on the default path: an entry retrieved during a
session is reinforced once when the session ends, however often it was retrieved (seed
000's per-recall reference count goes on counting every recall), and the learnings a
session leaves carry the phase its messages stated, so stage retirement reaches them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.model import Memory, MemoryStatus

NOW = datetime(2026, 11, 24, 15, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> list[datetime]:
    """The service's time, which a test moves on by setting ``clock[0]``."""
    return [NOW]


@pytest.fixture
def mem(db_url: str, clock: list[datetime]) -> Iterator[Episodic]:
    with Episodic.open(db_url, settings=Settings(embedder="none"), clock=lambda: clock[0]) as m:
        yield m


def learning(id: str, content: str, *, status: MemoryStatus = MemoryStatus.ACTIVE) -> Memory:
    return Memory(
        id=id,
        workspace="acme",
        ts=NOW - timedelta(days=30),
        type="learning",
        content=content,
        payload={"learning_type": "procedural", "domain": "task"},
        base_importance=0.6,
        importance=0.6,
        status=status,
    )


def talk(mem: Episodic, conversation: str, at: datetime, *texts: str) -> None:
    for i, text in enumerate(texts):
        mem.add_message(
            text,
            workspace="acme",
            conversation=conversation,
            role="user" if i % 2 == 0 else "assistant",
            ts=at + timedelta(minutes=i),
        )


def counts(mem: Episodic, *ids: str) -> dict[str, tuple[int, str | None, int]]:
    """id -> (reinforcement_count, last_reinforced, reference_count)."""
    return {
        m.id: (
            m.payload.get("reinforcement_count", 0),
            m.payload.get("last_reinforced"),
            m.reference_count,
        )
        for m in mem.store.get_memories("acme", list(ids))
    }


def test_a_session_reinforces_what_it_retrieved_once_at_its_end(
    mem: Episodic, clock: list[datetime]
) -> None:
    mem.store.append(
        [],
        [
            learning("rollback", "roll back the checkout cache before restarting pods"),
            learning("warmup", "warm the checkout cache after a deploy"),
            learning("other", "rotate the on-call pager every monday"),
            learning("old", "checkout cache keys", status=MemoryStatus.RETIRED),
        ],
    )
    ask = {"workspace": "acme", "policy": "bm25", "k": 5}
    for _ in range(3):  # three retrievals in session s1
        hits = mem.recall("checkout cache", review_conversation="s1", **ask).hits
        assert {h.id for h in hits} == {"rollback", "warmup"}
    other = mem.recall("roll back before restarting", review_conversation="s2", **ask)
    assert [h.id for h in other.hits] == ["rollback"]  # in another session

    # Open sessions reinforce nothing; seed 000's reference count moved on every recall.
    assert counts(mem, "rollback", "warmup")["warmup"] == (0, None, 3)
    talk(mem, "s1", NOW - timedelta(minutes=30), "the pods crash again", "rolled back the cache")
    report = mem.segment(flush=True, conversation="s1")  # s1 ends
    assert report.episodes == 1
    today = NOW.date().isoformat()
    assert counts(mem, "rollback", "warmup", "other", "old") == {
        "rollback": (1, today, 4),
        "warmup": (1, today, 3),
        "other": (0, None, 0),
        "old": (0, None, 0),  # retired entries are not reinforced
    }

    # Ending s1 again without new recalls changes nothing.
    mem.segment(flush=True, conversation="s1")
    assert counts(mem, "rollback")["rollback"] == (1, today, 4)

    # The next session of the same conversation counts its own recalls only.
    clock[0] = NOW + timedelta(days=2)
    again = mem.recall("warm after a deploy", review_conversation="s1", **ask)
    assert [h.id for h in again.hits] == ["warmup"]
    talk(mem, "s1", clock[0] - timedelta(minutes=5), "deploy went out", "cache warmed")
    mem.segment(flush=True, conversation="s1")
    later = clock[0].date().isoformat()
    assert counts(mem, "rollback", "warmup")["warmup"] == (2, later, 4)
    assert counts(mem, "rollback")["rollback"][:2] == (1, today)

    # s2 ends (idle past the hard gap, no flush): its one retrieval counts now.
    talk(mem, "s2", NOW - timedelta(minutes=10), "what was the rollback step?")
    clock[0] = NOW + timedelta(days=3)
    mem.segment()
    assert counts(mem, "rollback")["rollback"][:2] == (2, clock[0].date().isoformat())


def test_reinforcement_feeds_the_teaparty_prominence(mem: Episodic) -> None:
    mem.store.append(
        [],
        [
            learning("used", "restart the ingest workers one at a time"),
            learning("unused", "restart the ingest workers all at once"),
        ],
    )
    for _ in range(2):
        mem.recall("restart one at a time", workspace="acme", policy="bm25", k=1,
                   review_conversation="s1")  # fmt: skip
    talk(mem, "s1", NOW - timedelta(minutes=20), "restarting now", "done")
    mem.segment(flush=True, conversation="s1")
    mem.decay(formula="prominence")
    used, unused = mem.store.get_memories("acme", ["used", "unused"])
    # 0.6 x 2^(-30/90) x (1 + 1) against x (1 + 0): one session, one reinforcement.
    assert used.importance == pytest.approx(0.6 * 2 ** (-30 / 90) * 2, abs=1e-9)
    assert unused.importance == pytest.approx(0.6 * 2 ** (-30 / 90), abs=1e-9)
    hits = mem.recall("restart the ingest workers", workspace="acme", policy="teaparty",
                      mark=False).hits  # fmt: skip
    assert [h.id for h in hits][:1] == ["used"]


def message(id: str, text: str, role: str, minute: int, phase: str | None) -> str:
    payload = {"role": role, **({"phase": phase} if phase else {})}
    return json.dumps(
        {
            "id": id,
            "workspace": "acme",
            "conversation": "job-7",
            "agent": "builder",
            "type": "message",
            "summary": text,
            "ts": (NOW - timedelta(hours=1) + timedelta(minutes=minute)).isoformat(),
            "payload": payload,
        }
    )


def test_learnings_carry_their_phase_and_stage_retirement_reaches_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    env = {"EPISODIC_DB": f"sqlite:///{tmp_path}/m.db"}
    runner = CliRunner()
    lines = [
        message("m1", "Let's sketch the payment API.", "user", 0, "design"),
        message("m2", "Here is a first draft with six endpoints.", "assistant", 1, "design"),
        message("m3", "Always keep the public API to three endpoints.", "user", 2, None),
        message("m4", "Moving on to the build now.", "user", 3, "implementation"),
        message("m5", "Starting the implementation.", "assistant", 4, "implementation"),
        message("m6", "Never merge without running the contract tests.", "user", 5, None),
    ]
    ingest = runner.invoke(app, ["ingest", "-"], env=env, input="\n".join(lines) + "\n")
    assert ingest.exit_code == 0, ingest.output
    flushed = runner.invoke(app, ["index", "--once", "--flush"], env=env)
    recall = ["recall", "API endpoints contract tests", "-w", "acme", "--type", "learning"]
    assert flushed.exit_code == 0, flushed.output
    shown = runner.invoke(app, [*recall, "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    phases = {
        h["content"]: h["payload"].get("phase")
        for h in json.loads(shown.stdout)
        if h["type"] == "learning"
    }
    assert phases == {
        "Always keep the public API to three endpoints.": "design",
        "Never merge without running the contract tests.": "implementation",
    }
    retired = runner.invoke(
        app, ["upkeep", "retire", "--workspace", "acme", "--phase", "design", "--json"], env=env
    )
    assert retired.exit_code == 0, retired.output
    gone = json.loads(retired.stdout)["retired"]
    assert len(gone) == 1
    left = runner.invoke(app, [*recall, "--json"], env=env)
    learned = [h["content"] for h in json.loads(left.stdout) if h["type"] == "learning"]
    assert learned == ["Never merge without running the contract tests."]
