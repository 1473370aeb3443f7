"""Temporal fit of a memory's timestamp to a query's time windows, pinned to the formula."""

from __future__ import annotations

import ast
import itertools
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import episodic.scoring.temporal as temporal
from episodic.scoring.temporal import (
    DEFAULT_DECAY_DAYS,
    DEFAULT_FLOOR,
    MAX_SCALE_DAYS,
    SCALE_RATIO,
    TimeKind,
    TimeWindow,
    clamped_add,
    time_boost,
    time_booster,
    window_fit,
)


def d(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def win(start: str, end: str, kind: TimeKind = "absolute") -> TimeWindow:
    return TimeWindow(d(start), d(end), "x", kind)


YESTERDAY = win("2023-05-23", "2023-05-24")
LAST_WEEK = win("2023-05-15", "2023-05-22")
MAY_2023 = win("2023-05-01", "2023-06-01")
YEAR_2022 = win("2022-01-01", "2023-01-01")
BEFORE_JUNE = win("1922-06-01", "2022-06-01")


def expected(distance_days: float, scale_days: float, floor: float = 0.1) -> float:
    return floor + (1 - floor) * math.exp(-distance_days / scale_days)


def test_constants() -> None:
    assert (SCALE_RATIO, MAX_SCALE_DAYS, DEFAULT_DECAY_DAYS, DEFAULT_FLOOR) == (
        0.5,
        90.0,
        1.0,
        0.1,
    )


def test_no_windows_is_neutral() -> None:
    assert time_boost(d("2023-05-23T12:00"), []) == 1.0
    assert time_boost(d("2023-05-23T12:00"), [], inside=3.0) == 1.0


def test_unresolved_anchored_windows_are_ignored() -> None:
    anchored = TimeWindow(
        d("1923-05-24"), d("2123-05-24"), "two days before the conference", "anchored",
        anchor="the conference", offset=-timedelta(days=2.5), span=timedelta(days=1),
    )  # fmt: skip
    assert time_boost(d("1990-01-01"), [anchored]) == 1.0
    # once resolved it counts like any other window
    resolved = anchored.resolve(d("2023-06-15T10:00"))
    assert (resolved.start, resolved.end, resolved.kind) == (
        d("2023-06-12T22:00"),
        d("2023-06-13T22:00"),
        "relative",
    )
    assert time_boost(d("2023-06-13T08:00"), [anchored, resolved]) == 1.0
    assert time_boost(d("2023-06-14T22:00"), [resolved]) == pytest.approx(expected(1, 1))


def test_resolve_leaves_other_windows_alone() -> None:
    assert YESTERDAY.resolve(d("2020-01-01")) is YESTERDAY


@pytest.mark.parametrize(
    ("ts", "window", "boost"),
    [
        # inside, both edges included
        ("2023-05-23T12:00", YESTERDAY, 1.0),
        ("2023-05-23T00:00", YESTERDAY, 1.0),
        ("2023-05-24T00:00", YESTERDAY, 1.0),
        # "yesterday": 1-day window, scale = decay_days = 1 day
        ("2023-05-25T00:00", YESTERDAY, expected(1, 1)),
        ("2023-05-22T00:00", YESTERDAY, expected(1, 1)),
        ("2023-05-27T00:00", YESTERDAY, expected(3, 1)),
        # "last week": scale 3.5 days
        ("2023-05-14T00:00", LAST_WEEK, expected(1, 3.5)),
        ("2023-05-24T00:00", LAST_WEEK, expected(2, 3.5)),
        # "May 2023": scale 15.5 days
        ("2023-06-11T00:00", MAY_2023, expected(10, 15.5)),
        # "in 2022": 182.5 days capped at 90
        ("2023-01-31T00:00", YEAR_2022, expected(30, 90)),
        ("2021-10-03T00:00", YEAR_2022, expected(90, 90)),
        # open-ended window: capped too, so the far side still decays
        ("2022-08-30T00:00", BEFORE_JUNE, expected(90, 90)),
        ("1950-01-01T00:00", BEFORE_JUNE, 1.0),
    ],
)
def test_boost_values(ts: str, window: TimeWindow, boost: float) -> None:
    assert time_boost(d(ts), [window]) == pytest.approx(boost)


def test_worked_numbers() -> None:
    # the same numbers as above written out, so a formula change cannot hide in a helper
    assert time_boost(d("2023-05-25"), [YESTERDAY]) == pytest.approx(0.4310914, abs=1e-6)
    assert time_boost(d("2023-01-31"), [YEAR_2022]) == pytest.approx(0.7448782, abs=1e-6)


def test_longer_windows_forgive_more() -> None:
    ten_days_after_yesterday = d("2023-06-03")
    ten_days_after_2022 = d("2023-01-11")
    assert time_boost(ten_days_after_yesterday, [YESTERDAY]) < time_boost(
        ten_days_after_2022, [YEAR_2022]
    )


def test_decays_monotonically_towards_the_floor() -> None:
    values = [time_boost(d("2023-05-24") + timedelta(days=k), [LAST_WEEK]) for k in range(60)]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert values[-1] == pytest.approx(DEFAULT_FLOOR, abs=1e-6)
    assert values[-1] >= DEFAULT_FLOOR


def test_best_window_wins() -> None:
    ts = d("2023-05-25T00:00")
    assert time_boost(ts, [YEAR_2022, YESTERDAY]) == pytest.approx(expected(1, 1))
    assert time_boost(ts, [YESTERDAY, MAY_2023]) == 1.0


def test_inside_scales_the_whole_curve() -> None:
    assert time_boost(d("2023-05-23T12:00"), [YESTERDAY], inside=2.0) == 2.0
    assert time_boost(d("2023-05-25"), [YESTERDAY], inside=2.0) == pytest.approx(2 * expected(1, 1))


def test_floor_and_decay_days_parameters() -> None:
    ts = d("2023-05-25")
    assert time_boost(ts, [YESTERDAY], floor=0.0) == pytest.approx(math.exp(-1))
    assert time_boost(ts, [YESTERDAY], decay_days=4.0) == pytest.approx(expected(1, 4))
    # decay_days is a lower bound on the scale, not an override for long windows
    assert time_boost(d("2023-01-31"), [YEAR_2022], decay_days=4.0) == pytest.approx(
        expected(30, 90)
    )
    # a non-positive decay_days must not divide by zero
    assert time_boost(ts, [YESTERDAY], decay_days=0.0) == pytest.approx(expected(1, 0.5))
    point = win("2023-05-23", "2023-05-23")
    assert time_boost(d("2023-05-24"), [point], decay_days=0.0, floor=0.0) == 0.0


def test_naive_timestamps_are_utc() -> None:
    naive = datetime(2023, 5, 25)
    assert time_boost(naive, [YESTERDAY]) == pytest.approx(expected(1, 1))
    naive_window = TimeWindow(datetime(2023, 5, 23), datetime(2023, 5, 24), "x", "relative")
    assert window_fit(d("2023-05-25"), naive_window, decay_days=1.0) == pytest.approx(math.exp(-1))


def test_clamped_add() -> None:
    assert clamped_add(d("2023-05-24"), timedelta(days=1)) == d("2023-05-25")
    assert clamped_add(d("9999-12-01"), timedelta(days=365)) == datetime.max.replace(tzinfo=UTC)
    assert clamped_add(d("0001-02-01"), -timedelta(days=365)) == datetime.min.replace(tzinfo=UTC)


def test_scoring_stays_pure() -> None:
    tree = ast.parse(Path(temporal.__file__).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert not any(name.startswith("episodic") for name in imported), imported


def test_a_booster_gives_what_each_window_fit_gives_to_the_last_bit() -> None:
    # Ranking boosts a few hundred candidates against one query's windows with the
    # function ``time_booster`` makes once; its values must be the formula's, exactly,
    # or a recall's order could change with how it was computed.
    windows = [
        TimeWindow(d("2023-05-01"), d("2023-06-01"), "May 2023", "absolute"),
        TimeWindow(d("2023-07-10"), d("2023-07-11"), "July 10", "absolute"),
        TimeWindow(d("1990-01-01"), d("2090-01-01"), "before the move", "anchored"),
    ]
    booster = time_booster(windows[:2], floor=0.5, inside=2.0)
    for day in range(-400, 400, 7):
        for hour in (0, 5, 23):
            ts = d("2023-06-15") + timedelta(days=day, hours=hour)
            best = max(window_fit(ts, w, decay_days=1.0) for w in windows[:2])
            assert booster(ts) == 2.0 * (0.5 + (1.0 - 0.5) * best)
            assert time_boost(ts, windows, floor=0.5, inside=2.0) == booster(ts)
    assert time_booster([windows[2]])(d("2023-06-15")) == 1.0
