"""Seed 001 (TeaParty), lived through by a team with default settings.

The payments team brings its TeaParty memory tree (``tests/fixtures/teaparty``: a global
``MEMORY.md``, the project's ``MEMORY.md`` and ``institutional.md``, a job's
``institutional.md`` and the worktrees of its tasks) into episodic with the CLI. Then its
agents work over simulated days: an agent that names itself ranks its team's entries over
its project's over the workspace-wide ones (x1.5 / x1.2 / x1.0), the institutional entries
always render, an explicit scope still filters; a session reinforces what it retrieved
once at its end while the per-recall reference count counts every recall; the session's
learnings carry its phase and stage retirement reaches them; prominence decay keeps
importance within 0..1; the tree exported back shows what happened.
"""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from story import SimClock, cli, http_client, mcp_call
from typer.testing import CliRunner

from episodic import Client, Episodic
from episodic.cli import app
from episodic.errors import InvalidInput
from episodic.model import Memory, ScopeFilter

TREE = Path(__file__).resolve().parents[1] / "fixtures" / "teaparty"
W = "payments-co"
JOB = "job-20260309-064427"
TEAM_FILE = f"payments/.teaparty/jobs/{JOB}/tasks/task-api/worktree/MEMORY.md"

# The same advice at three levels of the tree, differing only in which file says it.
GLOBAL_FLAKY = "0b6f3c2e-8d1a-4c5e-9f7a-2e4d6b8a1c02"
PROJECT_FLAKY = "1c7a4d3f-9e2b-4d6f-8a1b-3f5e7c9b2d02"
TEAM_FLAKY = "4fad7a6c-c15e-4a9c-9d4e-6c8badce5a01"
TEAM_HEADER = "4fad7a6c-c15e-4a9c-9d4e-6c8badce5a02"  # reinforced once already
JOB_FLAG = "3e9c6f5b-b04d-4f8b-8c3d-5b7a9ebd4f01"  # the job's institutional.md, domain task
UI_SPINNER = "5abe8b7d-d26f-4bad-8e5f-7d9cbedf6b01"  # task-ui, domain task, implementation
UI_MONEY = "5abe8b7d-d26f-4bad-8e5f-7d9cbedf6b02"  # task-ui, domain team
INSTITUTIONAL = ("second reviewer", "only the vault service", "refunds_v2 flag")


def import_tree(db_url: str) -> dict[str, Any]:
    out = cli(db_url, "import", str(TREE), "--workspace", W, "--layout", "teaparty", "--json")
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def stored(mem: Episodic, *ids: str) -> dict[str, Memory]:
    return {m.id: m for m in mem.memories(ScopeFilter(workspace_id=W), list(ids))}


def files_of(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*.md"))
        if p.name in ("MEMORY.md", "institutional.md")
    }


def test_a_team_imports_its_tree_and_recall_weighs_its_levels(
    memory: Episodic, clock: SimClock, db_url: str
) -> None:
    report = import_tree(db_url)
    assert (report["files"], report["inserted"], report["errors"]) == (7, 14, [])

    # Day 1: task-api's agent asks with no scope, naming its crew: every level is searched
    # and its team's words outrank the project's, which outrank the workspace-wide ones.
    ask = "flaky integration tests, should I rerun?"
    hits = [h.id for h in memory.recall(ask, workspace=W, crew="task-api", k=5).hits]
    assert {TEAM_FLAKY, PROJECT_FLAKY, GLOBAL_FLAKY} <= set(hits)
    assert hits.index(TEAM_FLAKY) < hits.index(PROJECT_FLAKY) < hits.index(GLOBAL_FLAKY)

    # Day 2, through MCP bound to task-ui: task-api's entry is just more of the project now,
    # still above the workspace-wide one; task-ui has no flaky-test entry of its own.
    clock.advance(days=1)
    found = mcp_call(memory, "recall_memory", {"query": ask, "k": 5}, workspace=W, crew="task-ui")
    ids = [m["id"] for m in found["memories"]]
    assert {TEAM_FLAKY, PROJECT_FLAKY, GLOBAL_FLAKY} <= set(ids)
    assert max(ids.index(TEAM_FLAKY), ids.index(PROJECT_FLAKY)) < ids.index(GLOBAL_FLAKY)

    # The institutional entries (project and job) render for whoever asks.
    askers: list[dict[str, Any]] = [{"crew": "task-ui"}, {"agent": "ui-bot"}, {}]
    for who in askers:
        block = memory.render("refund button spinner", workspace=W, **who)
        assert "spinner" in block
        for standing in INSTITUTIONAL:
            assert standing in block, (who, standing)

    # Over HTTP an explicit scope still filters: crew_shared shows task-api's entries only,
    # where naming the crew alone reaches the project and global files too.
    with http_client(memory, W) as c:
        body = {"query": ask, "crew": "task-api", "k": 10}
        wide = c.post("/v1/recall", json=body)
        narrow = c.post("/v1/recall", json={**body, "scope": "crew_shared"})
    assert wide.status_code == narrow.status_code == 200, (wide.text, narrow.text)
    assert {h["crew"] for h in wide.json()["hits"]} > {"task-api"}
    assert narrow.json()["hits"] and {h["crew"] for h in narrow.json()["hits"]} == {"task-api"}
    assert TEAM_FLAKY in {h["id"] for h in narrow.json()["hits"]}


def say(mem: Episodic, clock: SimClock, phase: str, *texts: str) -> None:
    """One stretch of the job's session, in the task-api worktree of the payments project."""
    start = clock.now - timedelta(minutes=len(texts) + 1)
    for i, text in enumerate(texts):
        mem.add_message(
            text,
            workspace=W,
            conversation=JOB,
            role="user" if i % 2 == 0 else "assistant",
            crew="task-api",
            resource="payments",
            ts=start + timedelta(minutes=i),
            payload={"phase": phase},
        )


def test_sessions_reinforce_learn_with_their_phase_decay_in_range_and_export(
    memory: Episodic, clock: SimClock, db_url: str, tmp_path: Path
) -> None:
    import_tree(db_url)
    before = stored(memory, TEAM_HEADER)[TEAM_HEADER]
    assert before.payload["reinforcement_count"] == 1

    # Day 1: task-api's agent looks up the same thing three times in the job's session.
    clock.advance(days=1)
    session: set[str] = set()
    for _ in range(3):
        hits = memory.recall(
            "where do idempotency keys go?",
            workspace=W,
            crew="task-api",
            review_conversation=JOB,
        ).hits
        assert hits[0].id == TEAM_HEADER
        session |= {h.id for h in hits}
    counted = stored(memory, *session)
    assert counted[TEAM_HEADER].reference_count == before.reference_count + 3  # per recall
    assert counted[TEAM_HEADER].payload["reinforcement_count"] == 1  # the session is open
    say(
        memory,
        clock,
        "implementation",
        "Let's add retries to the refund client.",
        "I will wrap POST /refunds in a retry loop.",
        "Never retry a refund without sending the same Idempotency-Key header.",
        "Understood, the key is reused on every retry.",
        "Always run the contract tests against the sandbox gateway before merging.",
        "Will do.",
    )
    memory.segment(flush=True, conversation=JOB)  # the session ends

    # Once per session, however many retrievals: +1 and today's date on each entry it found.
    day1 = clock.now.date().isoformat()
    after = stored(memory, *session)
    for memory_id, m in after.items():
        assert (
            m.payload["reinforcement_count"]
            == counted[memory_id].payload.get("reinforcement_count", 0) + 1
        ), m.content
        assert m.payload["last_reinforced"] == day1
    assert after[TEAM_HEADER].payload["reinforcement_count"] == 2
    assert after[TEAM_HEADER].reference_count == before.reference_count + 3

    # The session's learnings carry its phase, its crew, its job and its project.
    page = memory.list_memories(ScopeFilter(workspace_id=W, conversation_id=JOB), limit=100)
    learned = {m.content: m for m in page.items if m.type == "learning" and m.id not in session}
    never = next(m for text, m in learned.items() if text.startswith("Never retry a refund"))
    always = next(m for text, m in learned.items() if text.startswith("Always run the contract"))
    for m in (never, always):
        assert m.payload["phase"] == "implementation" and m.payload["domain"] == "task"
        assert (m.crew, m.resource) == ("task-api", "payments")

    # Day 2: the job's next session looks up its rules (learnings) and ends too.
    clock.advance(days=1)
    hits = memory.recall(
        "retrying a refund", workspace=W, crew="task-api", review_conversation=JOB,
        types="learning", k=3,
    ).hits  # fmt: skip
    assert never.id in {h.id for h in hits}
    say(memory, clock, "implementation", "Retries are in.", "Merged behind the flag.")
    memory.segment(flush=True, conversation=JOB)
    assert stored(memory, never.id)[never.id].payload["reinforcement_count"] == 1

    # Prominence decay over the following months keeps every importance within 0..1:
    # the reinforced new rule (0.7 x 2 fresh) is held at 1, then ages below it.
    for days in (0, 60, 120):
        clock.advance(days=days)
        memory.decay(formula="prominence")
        listed = memory.list_memories(ScopeFilter(workspace_id=W), limit=200)
        everything = listed.items
        assert listed.next_cursor is None  # every memory of the workspace is checked
        assert everything and all(0.0 <= m.importance <= 1.0 for m in everything)
        rule = stored(memory, never.id)[never.id].importance
        if days == 0:
            assert rule == 1.0  # 0.7 x 2^(-1/90) x (1 + 1) = 1.39 without the bound
        else:
            assert rule < 1.0

    # The implementation phase ends: its task-domain entries retire, the team's stay.
    out = cli(db_url, "upkeep", "retire", "--workspace", W, "--phase", "implementation", "--json")
    retired = set(json.loads(out.stdout)["retired"])
    assert {TEAM_FLAKY, TEAM_HEADER, JOB_FLAG, UI_SPINNER, never.id, always.id} <= retired
    assert UI_MONEY not in retired and GLOBAL_FLAKY not in retired

    # The tree written back: the team's file shows the reinforcement, the retirement and
    # the session's learnings with their phase; files nothing touched are byte-identical.
    out = cli(db_url, "export", str(tmp_path), "--workspace", W, "--layout", "teaparty", "--json")
    assert json.loads(out.stdout)["skipped"] == []
    exported, original = files_of(tmp_path), files_of(TREE)
    assert set(exported) == set(original)
    team = exported[TEAM_FILE].decode("utf-8")
    header = team.split(f"id: {TEAM_HEADER}\n")[1].split("\n---\n")[0]
    assert f"status: retired\nreinforcement_count: 2\nlast_reinforced: '{day1}'\n" in header
    for rule_text in ("Never retry a refund", "Always run the contract tests"):
        entry = next(e for e in team.split("\n---\nid: ") if rule_text in e)
        assert "phase: implementation\n" in entry and "status: retired\n" in entry
    changed = session | retired | {never.id, always.id}
    for rel, data in original.items():
        if not any(memory_id in data.decode("utf-8") for memory_id in changed):
            assert exported[rel] == data, rel


# -- the files decide -----------------------------------------------------------------------
LEGACY = "20260101-0900"
LEGACY_FILE = f"projects/payments/.sessions/{LEGACY}/MEMORY.md"
LEGACY_ENTRY = "7c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e01"
# Written by hand in the seed's field order, with no created_at and one entry without
# a status: an export must give these bytes back.
HAND_WRITTEN = f"""\
---
id: {LEGACY_ENTRY}
type: corrective
domain: team
importance: 0.7
reinforcement_count: 0
last_reinforced: '2026-01-01'
status: active
---
Settlement files arrive in UTC; convert before matching them to ledger days.

---
id: 7c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e02
type: declarative
domain: team
importance: 0.4
---
The old settlement job ran at 02:00 on the batch host.
"""


def all_files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*.md"))
        if p.name in ("MEMORY.md", "institutional.md")
    }


def drop_entry(path: Path, memory_id: str) -> None:
    """Delete one entry from a file by hand, as a person editing it would."""
    entries = path.read_text(encoding="utf-8").split("---\nid: ")
    kept = [e for e in entries if not e.startswith(memory_id)]
    assert len(kept) == len(entries) - 1
    path.write_text("---\nid: ".join(kept).replace("\n\n\n", "\n\n"), encoding="utf-8")


def test_the_files_decide_what_stays_and_a_hand_written_tree_comes_back_unchanged(
    memory: Episodic, db_url: str, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    (tree / LEGACY_FILE).parent.mkdir(parents=True)
    (tree / LEGACY_FILE).write_text(HAND_WRITTEN, encoding="utf-8")

    def load(*extra: str) -> dict[str, Any]:
        args = ("import", str(tree), "-w", W, "--layout", "teaparty", "--json", *extra)
        report: dict[str, Any] = json.loads(cli(db_url, *args).stdout)
        assert report["errors"] == [] and not report.get("warnings")
        return report

    first = load()
    assert (first["files"], first["inserted"]) == (8, 16)

    # A legacy session folder is its project's team level (seed 001's classify_scope()),
    # not a project named after its path.
    legacy = stored(memory, LEGACY_ENTRY)[LEGACY_ENTRY]
    assert (legacy.resource, legacy.crew, legacy.conversation) == (
        "payments", f".sessions/{LEGACY}", LEGACY,
    )  # fmt: skip
    ask = "settlement files time zone"
    hits = memory.recall(ask, workspace=W, resource="payments", crew=legacy.crew, k=3).hits
    assert hits[0].id == LEGACY_ENTRY

    # Nothing changed on disk: no file is read again, nothing is written.
    again = load()
    assert (again["skipped_unchanged"], again["read"]) == (8, 0)
    assert (again["inserted"], again["updated"], again["removed"]) == (0, 0, 0)

    # Exported, the hand-written tree comes back byte for byte: each entry keeps its own
    # fields in its own order, and no import date is added.
    out = tmp_path / "out"
    cli(db_url, "export", str(out), "-w", W, "--layout", "teaparty")
    assert all_files(out) == all_files(tree)
    # A memory that changes gains that field only, where the seed's order puts it.
    memory.retire(ScopeFilter(workspace_id=W), LEGACY_ENTRY)
    cli(db_url, "export", str(out), "-w", W, "--layout", "teaparty")
    assert (out / LEGACY_FILE).read_text(encoding="utf-8") == HAND_WRITTEN.replace(
        "status: active", "status: retired"
    )

    # An entry deleted from a file is retired on the next import, with its reason, and
    # the next export leaves it out; the other entries of that file stand.
    drop_entry(tree / "MEMORY.md", GLOBAL_FLAKY)
    pruned = load()
    assert (pruned["read"], pruned["skipped_unchanged"], pruned["removed"]) == (1, 7, 1)
    gone = stored(memory, GLOBAL_FLAKY)[GLOBAL_FLAKY]
    assert gone.status.value == "retired"
    assert gone.payload["retired_reason"] == "removed from markdown"
    asked = memory.recall("flaky integration tests, should I rerun?", workspace=W, k=10)
    assert GLOBAL_FLAKY not in {h.id for h in asked.hits}
    exported = json.loads(
        cli(db_url, "export", str(out), "-w", W, "--layout", "teaparty", "--json").stdout
    )
    assert exported["removed"] == 1
    assert GLOBAL_FLAKY not in (out / "MEMORY.md").read_text(encoding="utf-8")
    assert "0b6f3c2e-8d1a-4c5e-9f7a-2e4d6b8a1c01" in (out / "MEMORY.md").read_text("utf-8")
    # ... and importing the unchanged tree again changes nothing.
    steady = load()
    assert (steady["read"], steady["removed"], steady["updated"]) == (0, 0, 0)

    # With --prune forget the entry is forgotten instead; `reindex --from` does the same.
    drop_entry(tree / "payments" / "MEMORY.md", PROJECT_FLAKY)
    assert load("--prune", "forget")["removed"] == 1
    assert stored(memory, PROJECT_FLAKY) == {}
    drop_entry(tree / TEAM_FILE, TEAM_FLAKY)
    rebuilt = json.loads(
        cli(
            db_url, "reindex", "--from", str(tree), "--layout", "teaparty", "-w", W, "--json"
        ).stdout
    )
    assert (rebuilt["removed"], rebuilt["skipped_unchanged"]) == (1, 7)
    assert stored(memory, TEAM_FLAKY) == {}


# -- what a recall brings -------------------------------------------------------------------
TEAM_CORRECTIVE = TEAM_HEADER  # "Idempotency keys go in the Idempotency-Key header ..."
PROJECT_CORRECTIVE = "1c7a4d3f-9e2b-4d6f-8a1b-3f5e7c9b2d03"


def test_recall_filters_by_learning_type_and_standing_entries_take_no_place(
    memory: Episodic, db_url: str
) -> None:
    import_tree(db_url)

    # Standing knowledge is loaded for every recall, apart from the ranking: with k=2 the
    # task's two learnings are both there, and the institutional entries come on top.
    ask = "reviewing a refunds change"
    result = memory.recall(ask, workspace=W, crew="task-api", k=2)
    assert len(result.hits) == 2
    assert {h.memory.type for h in result.hits} == {"learning"}
    standing = [h.memory.content for h in result.institutional]
    for words in INSTITUTIONAL:
        assert any(words in text for text in standing), words
    listed = json.loads(cli(db_url, "recall", ask, "-w", W, "--crew", "task-api",
                            "-k", "2", "--json").stdout)  # fmt: skip
    assert [h["type"] for h in listed] == ["learning", "learning"] + ["institutional"] * 3
    found = mcp_call(memory, "recall_memory", {"query": ask, "k": 2}, workspace=W, crew="task-api")
    assert [m["type"] for m in found["memories"]] == ["learning", "learning"]
    assert len(found["institutional"]) == 3

    # Seed 001's retrieve(learning_type): only the corrective learnings, on every interface.
    wrong = "refund amounts and idempotency keys"
    corrective = {TEAM_CORRECTIVE, PROJECT_CORRECTIVE}
    hits = memory.recall(wrong, workspace=W, learning_type="corrective", k=10).hits
    assert {h.id for h in hits} == corrective
    shown = json.loads(
        cli(db_url, "recall", wrong, "-w", W, "--type", "corrective", "-k", "10", "--json").stdout
    )
    assert {h["id"] for h in shown if h["type"] == "learning"} == corrective
    found = mcp_call(memory, "recall_memory", {"query": wrong, "k": 10,
                     "learning_type": "corrective"}, workspace=W, crew="task-api")  # fmt: skip
    assert {m["id"] for m in found["memories"]} == corrective
    with http_client(memory, W) as c:
        body = {"query": wrong, "k": 10, "learning_type": "corrective"}
        answer = c.post("/v1/recall", json=body)
        assert answer.status_code == 200, answer.text
        assert {h["id"] for h in answer.json()["hits"]} == corrective
        client = Client(str(c.base_url), c.headers["authorization"].removeprefix("Bearer "))
        with client:
            got = client.recall(wrong, k=10, learning_type=["corrective", "directive"])
        assert corrective < {h.id for h in got.hits} and len(got.institutional) == 3
        assert {h.memory.payload["learning_type"] for h in got.hits} == {"corrective", "directive"}
        # ... with its own budget: the block holds corrective learnings only.
        block = c.post("/v1/render", json={**body, "max_chars": 400}).json()["block"]
        assert "Idempotency-Key header" in block and len(block) <= 400 + 600
        # An unknown learning type is an error that names the field, not an empty answer.
        bad = c.post("/v1/recall", json={**body, "learning_type": "lessons"})
        assert bad.status_code in (400, 422) and "learning_type" in bad.text
    try:
        memory.recall(wrong, workspace=W, learning_type="lessons")
        raise AssertionError("an unknown learning type was accepted")
    except InvalidInput as exc:
        assert exc.field == "learning_type"
    # A memory type nothing has says so instead of answering empty in silence.
    odd = CliRunner().invoke(app, ["--db", db_url, "recall", wrong, "-w", W, "--type", "lesson"])
    assert odd.exit_code == 0 and "nothing of type 'lesson' matched" in odd.stderr


def test_key_terms_fall_back_to_the_first_500_characters_when_the_llm_is_down(
    memory: Episodic, db_url: str, clock: SimClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_tree(db_url)
    monkeypatch.setenv("EPISODIC_LLM_URL", "http://127.0.0.1:1/v1")  # nothing listens
    monkeypatch.setenv("EPISODIC_LLM_MODEL", "haiku")
    monkeypatch.setenv("EPISODIC_LLM_QUERY_TERMS", "1")
    task = "Add idempotency keys to the refunds endpoint so that retries never double-refund. " * 16
    assert len(task) > 1_000
    with Episodic.open(db_url, clock=clock) as mem:
        result = mem.recall(task, workspace=W, crew="task-api", explain=True, mark=False)
    assert result.trace is not None
    assert result.trace.lexical_query == task.strip()[:500]
    assert result.hits and result.hits[0].id == TEAM_HEADER
