"""`episodic bench locomo` end to end on a tiny LoCoMo-shaped fixture of our own.

The fixture has two conversations; conversation tiny-b holds the only turn about a
"theremin jazz trio", and both conversations ask about it, so a leak between workspaces
would show as a tiny-a question retrieving a tiny-b turn.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.bench.harness import CACHE_FILE
from episodic.bench.locomo import (
    QuestionRun,
    category_counts,
    load_locomo,
    parse_session_date,
    resolve_policies,
    run_locomo,
    turn_event,
)
from episodic.bench.metrics import METRIC_KEYS
from episodic.cli import app
from episodic.config import Settings
from episodic.errors import InvalidInput, UnknownPolicy
from episodic.recall.policies import POLICIES

FIXTURE = Path(__file__).parent / "fixtures" / "locomo_tiny.json"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
RARE_WORDS_QUESTION = "What is the name of the greyhound Ava adopted?"  # evidence tiny-a D1:1
PARAPHRASE_QUESTION = "Which musical instrument does Dan perform with his band?"  # tiny-b D1:2
BAIT_QUESTION = "Would Ava enjoy a theremin jazz trio concert?"  # asked in both
SCORED = 11  # 13 questions; one has no evidence, one only the malformed "D30:05"
CATEGORY_COUNTS = {"1": 2, "2": 3, "3": 3, "4": 2, "5": 1}

runner = CliRunner()


def _bench(env: dict[str, str], *args: str) -> Any:
    return runner.invoke(app, ["bench", "locomo", "--data", str(FIXTURE), *args], env=env)


@pytest.fixture
def sparse_env(tmp_path: Path) -> dict[str, str]:
    return {"EPISODIC_EMBEDDER": "none", "EPISODIC_CACHE_DIR": str(tmp_path / "cache")}


def _check_shape(report: dict[str, Any], embedder: str) -> None:
    assert set(report) == {
        "policies",
        "granularity",
        "questions",
        "unscored",
        "embedder",
        "ingest",
        "key_expansion",
        "superseded_by",
    }
    assert (report["ingest"], report["key_expansion"]) == ("turn", True)
    # The fixture's chat states no change: nothing may be hidden.
    assert report["superseded_by"] == {}
    assert report["questions"] == SCORED
    assert report["embedder"] == embedder
    # every registered policy, looked up at run time, baselines included
    assert list(report["policies"]) == list(POLICIES)
    assert {"bm25", "dense"} <= set(report["policies"])
    for name, result in report["policies"].items():
        assert set(result) == {"overall", "by_category", "latency_ms"}, name
        assert list(result["overall"]) == list(METRIC_KEYS)
        assert list(result["by_category"]) == ["1", "2", "3", "4", "5"]
        for scores in (result["overall"], *result["by_category"].values()):
            assert list(scores) == list(METRIC_KEYS)
            assert all(0.0 <= v <= 1.0 for v in scores.values())
            # recall can only grow with k
            assert scores["recall@1"] <= scores["recall@5"] <= scores["recall@10"]
            assert scores["recall@10"] <= scores["recall@20"]
        latency = result["latency_ms"]
        assert set(latency) == {"p50", "p95"}
        assert 0.0 < latency["p50"] <= latency["p95"]


# -- loading -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37, tzinfo=UTC)),
        ("12:05 am on 1 January, 2024", datetime(2024, 1, 1, 0, 5, tzinfo=UTC)),
        ("12:30 pm on 3 Mar, 2022", datetime(2022, 3, 3, 12, 30, tzinfo=UTC)),
        ("8:10 PM on 14 august 2023", datetime(2023, 8, 14, 20, 10, tzinfo=UTC)),
    ],
)
def test_parse_session_date(text: str, expected: datetime) -> None:
    assert parse_session_date(text) == expected


@pytest.mark.parametrize(
    "text", ["yesterday", "13:00 pm on 1 May, 2023", "1:56 pm on 31 February, 2023", ""]
)
def test_parse_session_date_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_session_date(text)


def test_loader_reads_turns_sessions_and_evidence() -> None:
    a, b = load_locomo(FIXTURE)
    assert (a.sample_id, b.sample_id) == ("tiny-a", "tiny-b")
    assert a.workspace != b.workspace
    # session_4 has a date but no turns: it is not a session
    assert len(a.turns) == 11 and len(b.turns) == 6
    assert {t.session for t in a.turns} == {"session_1", "session_2", "session_3"}
    assert a.session_of["D2:4"] == "session_2"
    first, second = a.turns[0], a.turns[1]
    assert first.ts == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert (second.ts - first.ts).total_seconds() == 1  # turn order survives in time
    assert a.end == datetime(2023, 8, 14, 20, 10, 2, tzinfo=UTC)
    hull = a.turns[3]
    assert hull.summary == (
        f"{hull.speaker}: Look at the hull I sanded this morning! "
        "[image: a photo of a wooden boat hull in a garage]"
    )
    evidence = {q.text: q.evidence for q in a.questions}
    assert evidence["Which hobbies do Ava and Ben share about music and boats?"] == (
        "D2:1",
        "D2:4",
    )
    assert evidence["When did Ava's sister visit from Toronto?"] == ("D2:3",)
    assert evidence["Which cities has Ben visited?"] == ()  # only "D30:05"
    assert evidence["What might Ben name his next boat?"] == ()
    assert {q.text: q.evidence for q in b.questions}[
        "What did Cleo write with her vintage typewriter?"
    ] == ("D1:1", "D2:2")
    assert category_counts([a, b]) == CATEGORY_COUNTS


def test_turn_event_is_a_kept_conversation_turn() -> None:
    a, _ = load_locomo(FIXTURE)
    event = turn_event(a, a.turns[3])
    assert event["workspace"] == a.workspace
    assert event["type"] == "conversation.turn"
    assert event["refs"] == {"episodic": True}
    assert event["agent"] == "Ben"
    assert event["conversation"] == "session_1"
    assert event["ts"] == "2023-05-08T13:56:03+00:00"
    assert event["summary"].endswith("[image: a photo of a wooden boat hull in a garage]")
    assert event["payload"] == {
        "dia_id": "D1:4",
        "speaker": "Ben",
        "session": "session_1",
        "session_date": "1:56 pm on 8 May, 2023",
    }
    # answers and evidence never reach what is indexed
    assert "Pickles" not in json.dumps(turn_event(a, a.turns[1]))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a readable JSON"),
        ("[]", "non-empty JSON list"),
        ('[{"conversation": {"session_1": [{"dia_id": "D1:1", "speaker": "A"}]}}]', "date"),
    ],
)
def test_loader_names_what_is_wrong(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(InvalidInput, match=message):
        load_locomo(bad)


def test_resolve_policies() -> None:
    assert resolve_policies("all") == list(POLICIES)
    assert resolve_policies(None) == list(POLICIES)
    assert resolve_policies("bm25, dense,bm25") == ["bm25", "dense"]
    with pytest.raises(UnknownPolicy):
        resolve_policies("bm25,nope")
    with pytest.raises(InvalidInput):
        resolve_policies(" , ")


# -- the command, sparse-only ----------------------------------------------------------


def test_command_json_sparse_only(sparse_env: dict[str, str]) -> None:
    result = _bench(sparse_env, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    _check_shape(report, "none")
    assert report["granularity"] == "turn"
    # both category-4 questions name their turn's rare words: BM25 puts it first
    assert report["policies"]["bm25"]["by_category"]["4"]["recall@1"] == 1.0


def test_command_embedder_option_overrides_the_environment(sparse_env: dict[str, str]) -> None:
    env = {**sparse_env, "EPISODIC_EMBEDDER": "local"}
    result = _bench(env, "--json", "--embedder", "none", "--policy", "bm25")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["embedder"] == "none" and list(report["policies"]) == ["bm25"]


def test_command_prints_policies_side_by_side(sparse_env: dict[str, str]) -> None:
    result = _bench(sparse_env, "--policy", "bm25,dense", "--granularity", "session")
    assert result.exit_code == 0, result.output
    out = result.stdout
    header = next(line for line in out.splitlines() if "metric" in line)
    assert header.index("bm25") < header.index("dense")
    assert "session level: 11 questions" in out
    for label in (
        "overall (n=11)",
        "1 multi-hop (n=2)",
        "2 temporal (n=3)",
        "3 open-domain (n=3)",
        "4 single-hop (n=2)",
        "5 adversarial (n=1)",
    ):
        assert label in out
    assert out.count("recall@20") == 6 and "p95" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--granularity", "word"], "granularity"),
        (["--policy", "nope"], "nope"),
        (["--embedder", "magic"], "EPISODIC_EMBEDDER"),
    ],
)
def test_command_errors(sparse_env: dict[str, str], args: list[str], message: str) -> None:
    result = _bench(sparse_env, *args)
    assert result.exit_code == 2
    assert message in result.stderr and "error" in result.stderr


def test_command_missing_data_file(sparse_env: dict[str, str], tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["bench", "locomo", "--data", str(tmp_path / "none.json")], env=sparse_env
    )
    assert result.exit_code == 2 and "no such file" in result.stderr


# -- inside the run ---------------------------------------------------------------------


def _observed(settings: Settings, policies: list[str], granularity: str) -> list[QuestionRun]:
    runs: list[QuestionRun] = []
    run_locomo(FIXTURE, policies, granularity, settings, observe=runs.append)
    return runs


def _check_isolation(runs: list[QuestionRun]) -> None:
    assert runs
    for run in runs:
        # memory ids are "<conversation>/<dia_id>": every hit is the question's own
        assert all(h.startswith(f"{run.conversation}/") for h in run.hit_ids), run
    for policy in {r.policy for r in runs}:
        bait = {
            r.conversation: r
            for r in runs
            if r.policy == policy and r.question.text == BAIT_QUESTION
        }
        # the bait is findable where it lives, and never from the other workspace
        assert bait["tiny-b"].hit_ids[0] == "tiny-b/D1:2", policy
        assert "tiny-b/D1:2" not in bait["tiny-a"].hit_ids, policy


def test_run_sparse_only_isolation_and_rare_words(tmp_path: Path) -> None:
    settings = Settings.from_env({}, embedder="none", cache_dir=tmp_path)
    runs = _observed(settings, ["bm25", "default"], "turn")
    _check_isolation(runs)
    asked = {r.question.text for r in runs}
    assert "What might Ben name his next boat?" not in asked  # no evidence: skipped
    assert "Which cities has Ben visited?" not in asked  # only a malformed id: skipped
    assert len(runs) == 2 * SCORED
    rare = next(r for r in runs if r.policy == "bm25" and r.question.text == RARE_WORDS_QUESTION)
    assert rare.turns[0] == "D1:1" and rare.scores["recall@1"] == 1.0
    hobbies = next(r for r in runs if r.question.raw_evidence == ("D2:1; D2:4", "D"))
    assert hobbies.relevant == ("D2:1", "D2:4")


def test_run_session_granularity_scores_sessions(tmp_path: Path) -> None:
    settings = Settings.from_env({}, embedder="none", cache_dir=tmp_path)
    runs = _observed(settings, ["bm25"], "session")
    for run in runs:
        assert len(set(run.ranking)) == len(run.ranking)
        assert all(s.startswith("session_") for s in (*run.ranking, *run.relevant))
    hobbies = next(r for r in runs if r.question.raw_evidence == ("D2:1; D2:4", "D"))
    assert hobbies.relevant == ("session_2",)
    typed = next(r for r in runs if r.question.raw_evidence == ("D1:1 D2:2",))
    assert typed.relevant == ("session_1", "session_2")


# -- the real local model --------------------------------------------------------------


@pytest.mark.model
def test_command_json_with_the_local_model(tmp_path: Path) -> None:
    env = {"EPISODIC_EMBEDDER": "local", "EPISODIC_CACHE_DIR": str(tmp_path)}
    first = _bench(env, "--json")
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    _check_shape(report, MINILM)
    assert report["policies"]["bm25"]["by_category"]["4"]["recall@1"] == 1.0
    assert (tmp_path / CACHE_FILE).is_file()
    assert "0 cached" in first.stderr
    # the second run finds every turn and question in the persistent cache
    second = _bench(env, "--json", "--policy", "dense")
    assert second.exit_code == 0, second.output
    assert ", 0 to embed" in second.stderr
    again = json.loads(second.stdout)["policies"]["dense"]
    assert again["overall"] == report["policies"]["dense"]["overall"]


@pytest.mark.model
def test_run_with_the_local_model_dense_finds_a_paraphrase(tmp_path: Path) -> None:
    settings = Settings.from_env({}, embedder="local", cache_dir=tmp_path)
    runs = _observed(settings, ["dense", "bm25"], "turn")
    _check_isolation(runs)
    paraphrase = {r.policy: r for r in runs if r.question.text == PARAPHRASE_QUESTION}
    # no word of the question is in the turn "I play the theremin in a jazz trio now."
    assert paraphrase["dense"].turns[0] == "D1:2"
    assert paraphrase["bm25"].scores["recall@1"] == 0.0
