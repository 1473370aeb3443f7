"""One swept value chosen over several data sets' folds at once (``bench/joint.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from episodic.bench.joint import joint_folds, joint_markdown, verdict
from episodic.errors import InvalidInput

ROOT = Path(__file__).resolve().parent.parent


def _summary(r10: float, categories: dict[str, float]) -> dict[str, Any]:
    return {
        "overall": {"recall@1": r10 / 2, "recall@10": r10, "ndcg@10": r10 / 1.5},
        "by_category": {c: {"recall@10": v} for c, v in categories.items()},
        "latency_ms": {"p50": 1.0, "p95": 2.0},
    }


def _report(rows: dict[float, list[float]]) -> dict[str, Any]:
    """A swept report: blend value -> recall@10 on each of three folds."""
    return {
        "folds": [],
        "folds_mean": {},
        "sweep": [
            {"values": {"blend": b}, "folds": [_summary(v, {"x": v}) for v in per_fold]}
            for b, per_fold in rows.items()
        ],
    }


# Set A barely prefers 0.4; set B much prefers 0.6: one choice for both takes 0.6, where
# A alone would keep 0.4.
A = _report({0.4: [0.80, 0.80, 0.80], 0.6: [0.79, 0.79, 0.79]})
B = _report({0.4: [0.40, 0.40, 0.40], 0.6: [0.60, 0.60, 0.60]})


def test_the_choice_weighs_every_set_and_is_scored_on_the_held_out_fold() -> None:
    alone = joint_folds({"a": A})
    assert [f["chosen"] for f in alone["folds"]] == [{"blend": 0.4}] * 3
    joint = joint_folds({"a": A, "b": B})
    assert [f["chosen"] for f in joint["folds"]] == [{"blend": 0.6}] * 3
    # training mean: each set's mean over the other two folds, the sets averaged
    assert joint["folds"][0]["train"][1]["train_recall@10"] == pytest.approx((0.79 + 0.60) / 2)
    assert joint["held_out"]["a"]["overall"]["recall@10"] == pytest.approx(0.79)
    assert joint["held_out"]["b"]["by_category"]["x"]["recall@10"] == pytest.approx(0.60)
    assert [r["overall"]["recall@10"] for r in joint["fixed"]["a"]] == [0.8, 0.79]


def test_a_fold_never_chooses_on_its_own_conversations() -> None:
    # fold 1 is where 0.6 shines; the other folds prefer 0.4
    a = _report({0.4: [0.5, 0.8, 0.8], 0.6: [0.9, 0.7, 0.7]})
    joint = joint_folds({"a": a})
    # trained on folds 2 and 3 (0.4 better there), fold 1 takes 0.4 and scores 0.5; folds
    # 2 and 3 each train with fold 1 in, where 0.6 wins, and score 0.7
    assert [f["chosen"] for f in joint["folds"]] == [{"blend": 0.4}, {"blend": 0.6}, {"blend": 0.6}]
    assert joint["held_out"]["a"]["overall"]["recall@10"] == pytest.approx(
        round((0.5 + 0.7 + 0.7) / 3, 4)
    )


def test_reports_that_do_not_match_are_refused_by_name() -> None:
    with pytest.raises(InvalidInput, match="b swept other values"):
        joint_folds({"a": A, "b": _report({0.4: [0.1, 0.1, 0.1]})})
    with pytest.raises(InvalidInput, match="c has no sweep"):
        joint_folds({"a": A, "c": {"folds": [], "folds_mean": {}}})


def test_the_script_prints_the_tables(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(A))
    (tmp_path / "b.json").write_text(json.dumps(B))
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "joint_folds.py"),
            f"locomo={tmp_path / 'a.json'}",
            f"beam={tmp_path / 'b.json'}",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "src")},
    )
    assert done.stdout.strip() == joint_markdown(joint_folds({"locomo": A, "beam": B}))
    assert "| blend=0.6 | 0.7900 | 0.6000 |" in done.stdout
    assert "held-out beam: recall@10 0.6000" in done.stdout


def test_the_rule_refuses_a_choice_that_lowers_a_set_or_a_category() -> None:
    # today's 0.4 listed first; B's gain does not excuse A's loss
    joint = joint_folds({"a": A, "b": B})
    assert verdict(joint) == ["a: recall@10 0.0100 below blend=0.4"]
    assert "not kept: a: recall@10 0.0100 below blend=0.4" in joint_markdown(joint)
    # a set that gains overall but loses more than a point in one category is refused too
    c = _report({0.4: [0.5, 0.5, 0.5], 0.6: [0.6, 0.6, 0.6]})
    for row, cat in zip(c["sweep"], (0.50, 0.48), strict=True):
        for fold in row["folds"]:
            fold["by_category"]["y"] = {"recall@10": cat}
    assert verdict(joint_folds({"c": c})) == ["c y: recall@10 0.0200 below"]
    d = _report({0.4: [0.5, 0.5, 0.5], 0.6: [0.6, 0.6, 0.6]})
    assert verdict(joint_folds({"d": d})) == []
    assert "kept (no set lower" in joint_markdown(joint_folds({"d": d}))
    assert "every fold chose it: unchanged" in joint_markdown(joint_folds({"a": A}))


def _with_category(report: dict[str, Any], name: str, per_variant: list[float]) -> None:
    for row, value in zip(report["sweep"], per_variant, strict=True):
        for fold in row["folds"]:
            fold["by_category"][name] = {"recall@10": value}


def test_a_guarded_choice_passes_over_a_variant_that_costs_a_category() -> None:
    # today's 0.4 first; 0.6 is best overall but costs category y two points, 0.5 gains
    # less and keeps y within a point
    c = _report({0.4: [0.5, 0.5, 0.5], 0.6: [0.6, 0.6, 0.6], 0.5: [0.55, 0.55, 0.55]})
    _with_category(c, "y", [0.50, 0.48, 0.495])
    free = joint_folds({"c": c})
    assert [f["chosen"] for f in free["folds"]] == [{"blend": 0.6}] * 3
    assert verdict(free) == ["c y: recall@10 0.0200 below"]
    guarded = joint_folds({"c": c}, guarded=True)
    assert [f["chosen"] for f in guarded["folds"]] == [{"blend": 0.5}] * 3
    assert verdict(guarded) == []
    assert guarded["held_out"]["c"]["overall"]["recall@10"] == pytest.approx(0.55)
    assert "guarded" in joint_markdown(guarded)


def test_a_guarded_choice_keeps_todays_value_when_every_other_costs_something() -> None:
    # B gains with 0.6, A loses a point overall: no variant but today's keeps both sets
    guarded = joint_folds({"a": A, "b": B}, guarded=True)
    assert [f["chosen"] for f in guarded["folds"]] == [{"blend": 0.4}] * 3
    assert "every fold chose it: unchanged" in joint_markdown(guarded)


def test_the_script_takes_the_guarded_choice(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(A))
    (tmp_path / "b.json").write_text(json.dumps(B))
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "joint_folds.py"),
            "--guarded",
            f"locomo={tmp_path / 'a.json'}",
            f"beam={tmp_path / 'b.json'}",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "src")},
    )
    guarded = joint_folds({"locomo": A, "beam": B}, guarded=True)
    assert done.stdout.strip() == joint_markdown(guarded)
