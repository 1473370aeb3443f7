"""`episodic bench updates`: the metrics on hand-made hits, the shipped scenarios, the
oracle that stands in for the model step, and the runner and command end to end."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.bench import updates
from episodic.bench.updates import (
    CONTROL_KEYS,
    UPDATE_KEYS,
    Asked,
    ScenarioOracle,
    current_at,
    false_supersessions,
    oracle_decisions,
    run_updates,
    stale_above_current,
    stale_superseded,
    summarise_policy,
)
from episodic.bench.updates_data import Scenario, load_scenarios
from episodic.cli import app
from episodic.config import Settings
from episodic.embed import FakeEmbedder
from episodic.errors import InvalidInput, LLMError
from episodic.policy import admit

ROOT = Path(__file__).parent.parent
SHIPPED = ROOT / "benchmarks" / "updates" / "scenarios.jsonl"
runner = CliRunner()


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_scenarios", ROOT / "benchmarks" / "updates" / "make_scenarios.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


# -- the metrics ----------------------------------------------------------------------------
CURRENT, STALE = "Lisbon", ("Porto", "Ghent")
OTHER = "The coffee machine is fixed."


@pytest.mark.parametrize(
    ("contents", "at1", "at5", "stale_first"),
    [
        pytest.param(["Dana lives in Lisbon.", "Dana lived in Porto."], True, True, False,
                     id="current-first"),
        pytest.param(["Dana lives in Porto.", "Dana moved to LISBON."], False, True, True,
                     id="stale-above-current"),
        pytest.param([OTHER, "Dana lives in Ghent.", OTHER], False, False, True,
                     id="current-missing-stale-present"),
        pytest.param([OTHER, OTHER], False, False, False, id="neither"),
        pytest.param(["Dana moved from Porto to Lisbon.", "Porto it is."], True, True, False,
                     id="a-hit-carrying-both-is-current"),
        pytest.param([OTHER] * 5 + ["Dana lives in Lisbon."], False, False, False,
                     id="current-below-the-top-five"),
        pytest.param([OTHER] * 5 + ["Dana lives in Porto."], False, False, False,
                     id="stale-below-the-top-five"),
        pytest.param([OTHER, "Lisbon now.", "Porto before."], False, True, False,
                     id="current-second-stale-third"),
    ],
)  # fmt: skip
def test_hit_metrics(contents: list[str], at1: bool, at5: bool, stale_first: bool) -> None:
    assert current_at(contents, CURRENT, 1) is at1
    assert current_at(contents, CURRENT, 5) is at5
    assert stale_above_current(contents, CURRENT, STALE) is stale_first


@pytest.mark.parametrize(
    ("memories", "expected"),
    [
        pytest.param([("Dana lives in Porto.", "superseded")], (0, 0),
                     id="stale-rightly-superseded"),
        pytest.param([("Dana lives in Lisbon.", "superseded")], (1, 1), id="current-superseded"),
        pytest.param([("Moved from Porto to Lisbon.", "superseded")], (1, 1),
                     id="the-change-itself-superseded"),
        pytest.param([(OTHER, "superseded"), (OTHER, "active")], (1, 2),
                     id="distractor-superseded"),
        pytest.param([("Dana lives in Lisbon.", "active"), ("Dana lives in Porto.", "active")],
                     (0, 1), id="nothing-superseded"),
        pytest.param([(OTHER, "retired")], (0, 1), id="other-statuses-are-not-supersession"),
    ],
)  # fmt: skip
def test_false_supersessions(memories: list[tuple[str, str]], expected: tuple[int, int]) -> None:
    assert false_supersessions(memories, CURRENT, STALE) == expected


@pytest.mark.parametrize(
    ("memories", "expected"),
    [
        pytest.param([("Dana lives in Porto.", "superseded"), ("I'll use Ghent.", "active")],
                     (1, 2), id="one-of-two-caught"),
        pytest.param([("Dana moved from Porto to Lisbon.", "superseded")], (0, 0),
                     id="a-memory-carrying-the-current-value-is-not-stale"),
        pytest.param([(OTHER, "superseded")], (0, 0), id="distractors-do-not-count"),
    ],
)  # fmt: skip
def test_stale_superseded(memories: list[tuple[str, str]], expected: tuple[int, int]) -> None:
    assert stale_superseded(memories, CURRENT, STALE) == expected


def _scenario(kind: str, current: str, stale: tuple[str, ...] = ()) -> Scenario:
    return Scenario(f"{kind}-{current}", kind, "journal", "Where?", current, stale, ())


def test_summary_per_policy() -> None:
    asked = [
        Asked(_scenario("update", "Lisbon", ("Porto",)), "p", ("Lisbon", "Porto")),
        Asked(_scenario("update", "Oslo", ("Bergen",)), "p", ("Bergen", "x", "Oslo")),
        Asked(_scenario("control", "Rome"), "p", ("x", "Rome")),
    ]
    assert summarise_policy(asked) == {
        "current@1": 0.5,
        "current@5": 1.0,
        "stale_above_current": 0.5,
        "control@1": 0.0,
        "control@5": 1.0,
    }


# -- the oracle -------------------------------------------------------------------------------
def _envelope(new: str, candidates: list[str]) -> str:
    payload = {
        "new": {"content": new, "when": "2025-04-01T10:00:00+00:00"},
        "candidates": [
            {"ref": str(i), "content": c, "when": "2025-03-01T10:00:00+00:00"}
            for i, c in enumerate(candidates, start=1)
        ],
    }
    return "<untrusted_memory_data>\n" + json.dumps(payload) + "\n</untrusted_memory_data>"


def test_oracle_answers_the_supersession_step_from_the_ground_truth() -> None:
    oracle = ScenarioOracle()
    oracle.use(_scenario("update", "Mastercard ending 0932", ("Visa ending 4417",)))
    user = _envelope(
        "The Visa ending 4417 expired; from now on pay with the Mastercard ending 0932.",
        [
            "Always pay my subscriptions with the Visa ending 4417.",
            "I will use the Visa ending 4417.",
            "Elif's subscriptions go on the Amex ending 1108.",
            "Noted, the Mastercard ending 0932 from now on.",
        ],
    )
    reply = oracle.complete_json("system", user, {"title": "supersession_decisions"})
    assert [(d["ref"], d["decision"]) for d in reply["decisions"]] == [
        ("1", "supersedes"),
        ("2", "supersedes"),
        ("3", "unrelated"),
        ("4", "unrelated"),
    ]
    assert all(d["reason"] for d in reply["decisions"]) and oracle.calls == 1


def test_oracle_supersedes_only_values_older_than_the_one_said() -> None:
    values = ("Porto", "Ghent", "Lisbon")
    candidates = [{"ref": "1", "content": "Lisbon"}, {"ref": "2", "content": "Porto"}]
    said_ghent = oracle_decisions("Dana moved to Ghent.", candidates, values)
    assert [d["decision"] for d in said_ghent] == ["unrelated", "supersedes"]
    restated = oracle_decisions("Dana still lives in Porto.", candidates[1:], values)
    assert restated[0]["decision"] == "unrelated"


@pytest.mark.parametrize(
    ("title", "user"),
    [
        ("episode_summary", _envelope("x", [])),
        ("supersession_decisions", "no envelope"),
        ("supersession_decisions", "<untrusted_memory_data>\n{}\n</untrusted_memory_data>"),
    ],
)
def test_oracle_refuses_other_steps_and_bad_requests(title: str, user: str) -> None:
    with pytest.raises(LLMError):
        ScenarioOracle().complete_json("system", user, {"title": title})


# -- the shipped scenarios --------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped() -> list[Scenario]:
    return load_scenarios(SHIPPED)


def test_the_file_is_what_the_generator_writes() -> None:
    generator = _generator()
    assert generator.render(generator.generate()) == SHIPPED.read_text(encoding="utf-8")


def test_shipped_set_size_and_shape(shipped: list[Scenario]) -> None:
    kinds = Counter((s.kind, s.form) for s in shipped)
    assert kinds["update", "conversation"] + kinds["update", "journal"] >= 200
    assert kinds["control", "conversation"] + kinds["control", "journal"] >= 100
    for kind in ("update", "control"):
        assert abs(kinds[kind, "conversation"] - kinds[kind, "journal"]) <= 1
    assert len({s.id for s in shipped}) == len(shipped)
    assert all(s.stale for s in shipped if s.kind == "update")
    assert not any(s.stale for s in shipped if s.kind == "control")


def test_every_question_is_answerable_and_does_not_give_it_away(shipped: list[Scenario]) -> None:
    for s in shipped:
        assert any(s.current.lower() in w.text.lower() for w in s.writes), s.id
        assert not any(v.lower() in s.question.lower() for v in s.values), s.id
        # the fact is told before it changes: the last write naming a value names the current
        last = [w for w in s.writes if any(v.lower() in w.text.lower() for v in s.values)][-1]
        assert s.current.lower() in last.text.lower(), s.id


def test_changes_are_worded_many_ways() -> None:
    phrasings = Counter()
    for line in SHIPPED.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["kind"] == "update":
            phrasings.update(w["phrasing"] for w in record["writes"] if w["fact"] == "change")
    assert len(phrasings) >= 20
    assert max(phrasings.values()) < sum(phrasings.values()) / 10  # no wording dominates


def test_every_write_becomes_a_memory(shipped: list[Scenario]) -> None:
    for s in shipped:
        for w in s.writes:
            if w.event is not None:
                e = w.event
                assert admit(e["type"], e.get("severity", "info"), e["payload"], e.get("refs", {}))
            else:
                assert w.message is not None and w.message["role"] in ("user", "assistant")


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"id": "a", "kind": "update", "form": "chat"}', "form"),
        ('{"id": "a", "kind": "maybe", "form": "journal", "question": "q", "current": "v", '
         '"stale": [], "writes": [{"event": {"id": "e", "ts": "2025-01-01T00:00:00+00:00", '
         '"summary": "v"}}]}', "kind"),
        ('{"id": "a", "kind": "update", "form": "journal", "question": "q", "current": "v", '
         '"stale": ["u"], "writes": [{"event": {"id": "e", "ts": "2025-01-01", "summary": "v"}}]}',
         "ts"),
        ('{"id": "a", "kind": "update", "form": "journal", "question": "q", "current": "v", '
         '"stale": ["u"], "writes": [{"event": {"id": "e", "ts": "2025-01-01T00:00:00+00:00", '
         '"summary": "nothing"}}]}', "current"),
        ('{"id": "a", "kind": "control", "form": "conversation", "question": "q", "current": "v",'
         ' "stale": [], "writes": [{"message": {"id": "m", "ts": "2025-01-01T00:00:00+00:00", '
         '"role": "user", "content": "v", "conversation": "c", "name": "x"}}]}', "name"),
    ],
)  # fmt: skip
def test_a_bad_scenario_names_its_field(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        load_scenarios(path)
    assert caught.value.field == field


def test_limit_keeps_both_kinds(shipped: list[Scenario]) -> None:
    limited = load_scenarios(SHIPPED, limit=3)
    assert Counter(s.kind for s in limited) == {"update": 3, "control": 3}


# -- the runner and the command ---------------------------------------------------------------
TINY = [
    {
        "id": "u1", "kind": "update", "form": "conversation",
        "question": "Which card pays the streaming subscriptions?",
        "current": "Mastercard ending 0932", "stale": ["Visa ending 4417"],
        "writes": [
            {"fact": "initial", "message": {
                "id": "m1", "ts": "2025-03-03T09:00:00+00:00", "role": "user",
                "conversation": "c1",
                "content": "Always pay the streaming subscriptions with the Visa ending 4417."}},
            {"fact": "ack", "message": {
                "id": "m2", "ts": "2025-03-03T09:00:30+00:00", "role": "assistant",
                "conversation": "c1", "content": "I will use the Visa ending 4417."}},
            {"fact": "change", "message": {
                "id": "m3", "ts": "2025-03-24T09:00:00+00:00", "role": "user",
                "conversation": "c2",
                "content": "The Visa ending 4417 expired; from now on pay the streaming "
                           "subscriptions with the Mastercard ending 0932."}},
        ],
    },
    {
        "id": "c1", "kind": "control", "form": "journal",
        "question": "Which region hosts the billing service?",
        "current": "eu-west-1", "stale": [],
        "writes": [
            {"fact": "initial", "event": {
                "id": "e1", "ts": "2025-03-03T09:00:00+00:00", "type": "summary.generated",
                "summary": "The billing service is hosted in eu-west-1.", "payload": {}}},
            {"fact": "lookalike", "event": {
                "id": "e2", "ts": "2025-03-20T09:00:00+00:00", "type": "note",
                "refs": {"episodic": True},
                "summary": "The mailer moved from us-east-2 to ap-south-1.", "payload": {}}},
        ],
    },
]  # fmt: skip


@pytest.fixture
def fake_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The hashing fake in place of the model (the runner embeds through it)."""
    monkeypatch.setattr(updates, "make_embedder", lambda _settings: FakeEmbedder())
    env = {"EPISODIC_EMBEDDER": "local", "EPISODIC_CACHE_DIR": str(tmp_path / "cache")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield env


def test_runner_on_both_backends(db_url: str, fake_env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in TINY), encoding="utf-8")
    report = run_updates(path, Settings.from_env(), policies="bm25", modes="off", db_url=db_url)
    assert report["scenarios"] == {"update": 1, "control": 1}
    assert report["embedder"] == "fake-bow-64"
    off = report["modes"]["off"]
    scores = off["policies"]["bm25"]
    # both values are found; the control's true value is the first hit
    assert scores["current@5"] == 1.0 and scores["control@1"] == 1.0
    # with nothing detecting changes, every memory stays active: none wrongly superseded
    assert off["false_supersession"]["wrong"] == 0
    # the update's change message and the control's two events should all stay valid
    assert off["false_supersession"]["valid"] >= 3
    # the first message and its acknowledgement carry only the expired card: out of date,
    # and with nothing detecting changes, not marked
    assert off["stale_superseded"]["stale"] >= 2 and off["stale_superseded"]["superseded"] == 0


def test_detection_modes_mark_the_stale_memories_and_nothing_else(
    fake_env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in TINY), encoding="utf-8")
    report = run_updates(path, Settings.from_env(), policies="bm25", modes="off,offline,llm")
    modes = report["modes"]
    assert modes["off"]["stale_superseded"]["superseded"] == 0
    # The scripted model replays the right decisions: the stale message and its
    # acknowledgement are marked (an episode quoting them never is).
    assert modes["llm"]["stale_superseded"]["superseded"] >= 2
    for mode in ("offline", "llm"):
        assert modes[mode]["false_supersession"]["wrong"] == 0, mode


@pytest.mark.parametrize(
    ("args", "field"),
    [(["--modes", "sometimes"], "modes"), (["--policies", "nope"], "nope"),
     (["--limit", "0"], "limit")],
)  # fmt: skip
def test_command_refuses_bad_options(fake_env: dict[str, str], args: list[str], field: str) -> None:
    result = runner.invoke(app, ["bench", "updates", "--scenarios", str(SHIPPED), *args])
    assert result.exit_code != 0
    assert field in result.output


def test_command_json_end_to_end(fake_env: dict[str, str]) -> None:
    result = runner.invoke(
        app,
        ["bench", "updates", "--scenarios", str(SHIPPED), "--limit", "4", "--modes", "off",
         "--policies", "default", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["scenarios"] == {"update": 4, "control": 4}
    off = report["modes"]["off"]
    assert list(off["policies"]) == ["default"]
    scores = off["policies"]["default"]
    assert set(scores) == {*UPDATE_KEYS, *CONTROL_KEYS, "by_form"}
    assert set(scores["by_form"]) == {"conversation", "journal"}
    for rows in (scores, *scores["by_form"].values()):
        assert all(0.0 <= rows[key] <= 1.0 for key in (*UPDATE_KEYS, *CONTROL_KEYS))
    assert scores["current@5"] >= scores["current@1"]
    assert off["false_supersession"]["valid"] > 0


def test_command_table(fake_env: dict[str, str]) -> None:
    result = runner.invoke(
        app,
        ["bench", "updates", "--scenarios", str(SHIPPED), "--limit", "2", "--modes", "off",
         "--policies", "bm25,default"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "stale_above_current" in result.stdout and "bm25" in result.stdout
