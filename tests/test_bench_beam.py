"""`episodic bench beam` on a tiny BEAM-shaped fixture of our own (two conversations of a
user and an assistant): the reader, the abilities named in the report, abstention
questions left out and counted, and the folds over conversations."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.bench.beam import evidence_ids, load_beam, parse_anchor, strip_index_marker
from episodic.bench.locomo import (
    QuestionRun,
    Turn,
    category_counts,
    message_event,
    prepare_locomo,
    run_locomo,
    run_policy,
    stored_text,
    unscored_counts,
)
from episodic.bench.metrics import METRIC_KEYS, update_order
from episodic.cli import app
from episodic.config import Settings
from episodic.errors import InvalidInput
from episodic.service import Episodic
from episodic.store import open_store

FIXTURE = Path(__file__).parent / "fixtures" / "beam_tiny"
SCORED = {
    "contradiction_resolution": 1,
    "event_ordering": 1,
    "information_extraction": 1,
    "instruction_following": 1,
    "knowledge_update": 1,
    "preference_following": 1,
}

runner = CliRunner()


@pytest.fixture
def sparse_env(tmp_path: Path) -> dict[str, str]:
    return {"EPISODIC_EMBEDDER": "none", "EPISODIC_CACHE_DIR": str(tmp_path / "cache")}


def _bench(env: dict[str, str], *args: str) -> Any:
    return runner.invoke(app, ["bench", "beam", "--data", str(FIXTURE), *args], env=env)


def test_index_markers_are_stripped_from_the_end_only() -> None:
    assert strip_index_marker("Can you help? ->-> 1,1") == "Can you help?"
    assert strip_index_marker("Deadline is April 30. ->-> 2,14") == "Deadline is April 30."
    assert strip_index_marker("a -> b ->-> c") == "a -> b ->-> c"  # not a marker


def test_evidence_may_be_a_list_a_list_of_lists_or_an_object_of_lists() -> None:
    assert evidence_ids([28]) == ["28"]
    assert evidence_ids([[24, 26], [146], [24]]) == ["24", "26", "146"]
    assert evidence_ids({"original_info": [86], "updated_info": [114]}) == ["86", "114"]
    assert evidence_ids(None) == [] and evidence_ids([]) == []


def test_anchor_dates() -> None:
    assert parse_anchor("March-15-2024", "x") == datetime(2024, 3, 15, tzinfo=UTC)
    with pytest.raises(InvalidInput, match="time anchor"):
        parse_anchor("15/03/2024", "x")


def test_loader_reads_messages_sessions_times_and_evidence() -> None:
    one, two = load_beam(FIXTURE)
    assert (one.workspace, two.workspace) == ("beam-1", "beam-2")
    assert len(one.turns) == 10 and len(two.turns) == 4
    first = one.turns[0]
    assert first.speaker == "user" and first.dia_id == "0"
    assert first.text.endswith("need a plan.")  # the index marker is gone
    assert "->->" not in " ".join(t.text for t in one.turns)
    # each batch on its own anchor day, its sessions an hour apart, in order
    assert first.ts == datetime(2024, 3, 15, tzinfo=UTC)
    assert one.turns[4].ts == datetime(2024, 3, 15, 1, tzinfo=UTC)
    assert one.turns[6].ts == datetime(2024, 4, 2, tzinfo=UTC)
    assert one.session_of["8"] == "batch_2.session_1"
    by_ability = {str(q.category): q for q in one.questions}
    assert by_ability["knowledge_update"].evidence == ("0", "6")
    assert by_ability["event_ordering"].evidence == ("0", "2", "8", "9")
    assert by_ability["abstention"].evidence == ()
    # an id naming no message is dropped, not guessed at
    (marathon,) = [q for q in two.questions if q.category == "contradiction_resolution"]
    assert marathon.evidence == ("0",) and marathon.raw_evidence == ("0", "99")
    assert category_counts([one, two]) == SCORED
    assert unscored_counts([one, two]) == {"abstention": 1, "summarization": 1}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "no sub-folder holds a chat.json"),
        ({"a/chat.json": "[]"}, "non-empty list of batches"),
        ({"a/chat.json": "{"}, "not a readable JSON file"),
        (
            {"a/chat.json": '[{"turns": [[{"role": "user", "id": 0, "content": "x"}]]}]'},
            "no time_anchor",
        ),
        (
            {
                "a/chat.json": '[{"time_anchor": "May-01-2024", "turns": '
                '[[{"role": "bot", "id": 0, "content": "x"}]]}]'
            },
            "role must be user or assistant",
        ),
    ],
)
def test_loader_names_what_is_wrong(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(InvalidInput, match=message):
        load_beam(tmp_path)


def test_command_json_names_abilities_and_counts_what_it_left_out(
    sparse_env: dict[str, str],
) -> None:
    result = _bench(sparse_env, "--json", "--policy", "default,bm25")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["questions"] == sum(SCORED.values())
    assert report["unscored"] == {"abstention": 1, "summarization": 1}
    for policy in report["policies"].values():
        assert list(policy["by_category"]) == list(SCORED)
        assert list(policy["overall"]) == list(METRIC_KEYS)
    # the rare words of the question find the user's own message first
    bm25 = report["policies"]["bm25"]["by_category"]
    assert bm25["information_extraction"]["recall@1"] == 1.0


def test_command_table_is_per_ability(sparse_env: dict[str, str]) -> None:
    result = _bench(sparse_env, "--policy", "bm25")
    assert result.exit_code == 0, result.output
    assert "BEAM evidence recall" in result.stdout
    assert "knowledge_update (n=1)" in result.stdout
    assert "Left out, no evidence to score against: abstention 1, summarization 1" in (
        result.stdout
    )


def test_folds_hold_out_each_conversation(sparse_env: dict[str, str]) -> None:
    result = _bench(sparse_env, "--json", "--policy", "default", "--folds", "2")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [fold["test"] for fold in report["folds"]] == [["1"], ["2"]]
    assert list(report["folds"][1]["policies"]["default"]["by_category"]) == [
        "contradiction_resolution",
        "preference_following",
    ]


def test_messages_keep_their_roles() -> None:
    one, _ = load_beam(FIXTURE)
    user, assistant = (message_event(one, t)["payload"] for t in one.turns[:2])
    assert user == {"role": "user", "dia_id": "0"}
    assert assistant == {"role": "assistant", "dia_id": "1"}


def test_conversation_ingest_runs_on_beam(tmp_path: Path) -> None:
    settings = Settings(embedder="none", cache_dir=tmp_path)
    report = run_locomo(FIXTURE, ["bm25"], "turn", settings, ingest="conversation", load=load_beam)
    assert report["ingest"] == "conversation"
    assert report["policies"]["bm25"]["overall"]["recall@20"] > 0.0


def test_a_run_over_conversation_ingest_recalls_only_the_types_asked(tmp_path: Path) -> None:
    settings = Settings(embedder="none", cache_dir=tmp_path)
    with prepare_locomo(
        FIXTURE, settings, say=lambda _: None, ingest="conversation", load=load_beam
    ) as run:
        kinds: set[str] = set()

        def types_of(outcome: QuestionRun) -> None:
            conv = next(c for c in run.conversations if c.sample_id == outcome.conversation)
            rows = run.mem.store.get_memories(conv.workspace, list(outcome.hit_ids))
            kinds.update(m.type for m in rows)

        run_policy(run, "bm25", "turn", ingest="conversation", observe=types_of)
        assert "entry" in kinds  # by default a chat's entries are recalled beside messages
        kinds.clear()
        runs = run_policy(
            run, "bm25", "turn", ingest="conversation", types=("message",), observe=types_of
        )
    assert kinds == {"message"}
    assert any(r.scores["recall@20"] > 0 for r in runs)


def test_missing_folder_names_data(sparse_env: dict[str, str], tmp_path: Path) -> None:
    result = runner.invoke(app, ["bench", "beam", "--data", str(tmp_path / "nope")], env=sparse_env)
    assert result.exit_code != 0
    assert "data" in result.output and "BEAM folder" in result.output


def test_a_knowledge_update_names_its_original_and_updated_message() -> None:
    one, _ = load_beam(FIXTURE)
    by_ability = {str(q.category): q for q in one.questions}
    assert by_ability["knowledge_update"].changed == (("0",), ("6",))
    # Other abilities name no changed fact.
    assert by_ability["event_ordering"].changed == ((), ())


def test_update_order_is_the_updated_above_the_original() -> None:
    assert update_order(["6", "0"], {"0"}, {"6"})["updated_above"] == 1.0
    assert update_order(["0", "6"], {"0"}, {"6"})["updated_above"] == 0.0
    # Found while the original is not: above it.
    assert update_order(["6", "x"], {"0"}, {"6"}) == {
        "updated_above": 1.0,
        "recall@10_updated": 1.0,
        "recall@10_original": 0.0,
    }
    assert update_order(["x", "0"], {"0"}, {"6"})["updated_above"] == 0.0


def test_the_report_gives_the_knowledge_updates_order(sparse_env: dict[str, str]) -> None:
    result = _bench(sparse_env, "--json", "--policy", "bm25")
    assert result.exit_code == 0, result.output
    updates = json.loads(result.stdout)["policies"]["bm25"]["updates"]
    assert list(updates) == ["knowledge_update"]
    assert updates["knowledge_update"]["questions"] == 1
    assert set(updates["knowledge_update"]) == {
        "questions",
        "updated_above",
        "recall@10_updated",
        "recall@10_original",
    }
    text = _bench(sparse_env, "--policy", "bm25").stdout
    assert "bm25, knowledge_update (1 questions): the updated message above the original" in (text)


def test_what_is_embedded_ahead_is_what_the_message_path_stores(tmp_path: Path) -> None:
    # Embedded ahead, a text is one batch and cached across runs; a text the store holds
    # but nobody embedded ahead is embedded one memory at a time by the indexer (an hour
    # on BEAM with the real model), so the two must be the same text.
    conversations = load_beam(FIXTURE)
    with Episodic(
        store=open_store(f"sqlite:///{tmp_path / 'm.db'}"), settings=Settings(embedder="none")
    ) as mem:
        for conv in conversations:
            mem.ingest(message_event(conv, t) for t in conv.turns)
            for turn in conv.turns:
                (held,) = mem.store.get_memories(
                    conv.workspace, [f"{conv.sample_id}/{turn.dia_id}"]
                )
                assert held.content == stored_text(turn, "conversation")
                assert stored_text(turn, "turn") == turn.summary
    named = Turn("D1:1", "Caroline", "Hi Mel", "session_1", "", datetime(2023, 5, 8, tzinfo=UTC))
    assert stored_text(named, "conversation") == "Caroline: Hi Mel"


def test_only_a_chat_that_states_no_change_calls_its_supersessions_false(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A task chat holds real corrections (the user sets the assistant right); two friends
    chatting state none, so there every supersession on ingest is a false one."""
    from episodic.cli.bench import _print_bench

    report = {
        "granularity": "turn",
        "questions": 0,
        "embedder": "none",
        "unscored": {},
        "policies": {
            "bm25": {
                "overall": dict.fromkeys(METRIC_KEYS, 0.0),
                "by_category": {},
                "latency_ms": {"p50": 1.0, "p95": 2.0},
            }
        },
        "superseded_by": {"explicit:corrective": 3},
    }
    _print_bench("BEAM", report, {})
    beam = capsys.readouterr().out
    _print_bench("LoCoMo", report, {})
    locomo = capsys.readouterr().out

    assert "3 memories superseded on ingest (3 explicit:corrective)" in beam
    assert "false" not in beam
    assert "each is a false supersession" in locomo
