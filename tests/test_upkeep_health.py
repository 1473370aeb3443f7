"""Health snapshots: each metric on hand-built memories whose value is worked out by hand."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from episodic import Episodic, InvalidInput, Settings
from episodic.model import Event, Memory
from episodic.scoring import health as h
from episodic.store import Store, open_store
from episodic.store.base import Relation, ReviewRequest
from episodic.upkeep.health import compute_health

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
DIM = 8


def axis(i: int) -> np.ndarray:
    v = np.zeros(DIM, np.float32)
    v[i] = 1.0
    return v


@pytest.fixture
def svc(db_url: str) -> Iterator[Episodic]:
    mem = Episodic(store=open_store(db_url), embedder=None, settings=Settings(), clock=lambda: NOW)
    yield mem
    mem.close()


def add(store: Store, id: str, days: float, crew: str = "c1") -> None:
    ts = NOW - timedelta(days=days)
    e = Event(id=id, workspace="acme", ts=ts, type="note", summary=f"note {id}", crew=crew)
    m = Memory(id=id, workspace="acme", ts=ts, type="note", content=e.summary, crew=crew,
               source_event_ids=(id,))  # fmt: skip
    store.append([e], [m])


def build(store: Store) -> None:
    """16 memories, all 45 days old. 12 have vectors: 4 themes of 3 identical vectors
    (axes 0-3). 3 of the 12 have an edge."""
    for i in range(16):
        add(store, f"m{i:02}", 45, crew="c1" if i < 8 else "c2")
    store.put_vectors("m", DIM, [(f"m{i:02}", axis(i // 3)) for i in range(12)])
    store.add_relations(
        "acme", [Relation("m00", "m03", "similar", 0.9), Relation("m06", "m00", "similar", 0.9)]
    )


# -- the metrics as functions ------------------------------------------------------------
@pytest.mark.parametrize(
    ("median", "value"), [(None, 0.0), (0.0, 100.0), (45.0, 75.0), (90.0, 50.0), (400.0, 0.0)]
)
def test_freshness_falls_with_median_age_over_180_days(median: float | None, value: float) -> None:
    assert h.freshness(median) == pytest.approx(value)


@pytest.mark.parametrize(
    ("part", "whole", "value"), [(0, 0, 0.0), (3, 4, 75.0), (4, 4, 100.0), (0, 5, 0.0)]
)
def test_coverage_and_reachability_are_shares(part: int, whole: int, value: float) -> None:
    assert h.coverage(part, whole) == pytest.approx(value)
    assert h.reachability(part, whole) == pytest.approx(value)


@pytest.mark.parametrize(
    ("score", "band"),
    [(0.0, "red"), (49.99, "red"), (50.0, "yellow"), (74.99, "yellow"), (75.0, "green")],
)
def test_bands(score: float, band: str) -> None:
    assert h.band(score) == band


def test_score_weights_are_25_25_20_15_15() -> None:
    assert h.score(100, 0, 0, 0, 0) == pytest.approx(25)
    assert h.score(0, 100, 0, 0, 0) == pytest.approx(25)
    assert h.score(0, 0, 100, 0, 0) == pytest.approx(20)
    assert h.score(0, 0, 0, 100, 0) == pytest.approx(15)
    assert h.score(0, 0, 0, 0, 100) == pytest.approx(15)


def test_coherence_of_a_uniform_cloud_is_0_and_of_tight_themes_100() -> None:
    spread = np.eye(DIM, dtype=np.float32)  # 8 orthogonal memories
    assert h.coherence(h.neighbour_cosine(spread), h.mean_pair_cosine(spread), DIM) == 0.0
    themes = np.repeat(np.eye(2, DIM, dtype=np.float32), 6, axis=0)  # 2 themes x 6 copies
    nn, g = h.neighbour_cosine(themes), h.mean_pair_cosine(themes)
    assert (nn, g) == (pytest.approx(1.0), pytest.approx(30 / 66))
    assert h.coherence(nn, g, 12) == pytest.approx(100.0)
    assert h.coherence(0.0, 0.0, 1) == 0.0


def test_efficiency_prefers_recorded_recalls_over_probes() -> None:
    assert h.efficiency([[0.9, 0.7], [0.5], []], probe_nn=0.1) == pytest.approx(65.0)
    assert h.efficiency([], probe_nn=0.4) == pytest.approx(40.0)
    assert h.efficiency([[-0.2, 0.2]], probe_nn=None) == pytest.approx(10.0)
    assert h.efficiency([], probe_nn=None) == 0.0


def test_sparkline_uses_a_fixed_0_to_100_scale() -> None:
    assert h.sparkline([0, 50, 100]) == "▁▅█"
    assert h.sparkline([90, 90]) == "██" and h.sparkline([20, 20]) == "▂▂"
    assert h.sparkline([]) == ""


# -- a snapshot of hand-built memories ---------------------------------------------------
def test_snapshot_of_a_workspace_by_hand(svc: Episodic) -> None:
    store = svc.store
    build(store)
    snap = compute_health(store, "acme", None, NOW)
    # median age 45 days -> 100 x (1 - 45/180)
    assert snap.freshness == pytest.approx(75.0)
    # 12 of 16 embedded
    assert snap.coverage == pytest.approx(75.0)
    # Each memory's 5 nearest: its 2 twins (cosine 1) and 3 others (0): nn = 2/5. All
    # pairs: 4 themes x 3 twin pairs = 12 of 66 at cosine 1: g = 2/11.
    # (2/5 - 2/11) / (1 - 2/11) = 132/495
    assert snap.coherence == pytest.approx(100 * 132 / 495, abs=1e-3)
    # No recall recorded: the probe's top-5 cosine, 2/5.
    assert snap.efficiency == pytest.approx(40.0)
    # m00, m03, m06 have an edge: 3 of 12 embedded.
    assert snap.reachability == pytest.approx(25.0)
    expected = 0.25 * 75 + 0.25 * 75 + 0.20 * (100 * 132 / 495) + 0.15 * 40 + 0.15 * 25
    assert snap.score == pytest.approx(expected, abs=1e-3)
    assert h.band(snap.score) == "yellow"
    # Recorded recalls replace the probe: mean of (0.9 + 0.7) / 2 and 0.5.
    store.add_review(ReviewRequest("acme", "q", ("m00", "m01"), NOW, (0.9, 0.7)))
    store.add_review(ReviewRequest("acme", "q", ("m02",), NOW - timedelta(days=1), (0.5,)))
    store.add_review(ReviewRequest("acme", "q", ("m02",), NOW - timedelta(days=31), (0.0,)))
    assert compute_health(store, "acme", None, NOW).efficiency == pytest.approx(65.0)


def test_a_crew_snapshot_sees_only_the_crews_memories(svc: Episodic) -> None:
    store = svc.store
    build(store)
    crew = compute_health(store, "acme", "c2", NOW)
    # c2: m08..m15, of which m08..m11 have vectors (axes 2 and 3).
    assert crew.coverage == pytest.approx(50.0)
    assert crew.reachability == pytest.approx(0.0)
    # Within c2, m08 (axis 2) has no twin (m06, m07 are c1's) and m09-m11 (axis 3) are
    # three twins. k = min(5, 3) = 3:
    # m08 -> 0, 0, 0; m09..m11 -> 1, 1, 0. nn = (0 + 3 x 2/3) / 4 = 1/2;
    # g = 3 pairs at 1 of 6 = 1/2; coherence (1/2 - 1/2) / (1/2) = 0.
    assert crew.coherence == pytest.approx(0.0, abs=1e-6)
    assert crew.efficiency == pytest.approx(50.0)


def test_memory_health_is_none_until_a_snapshot_then_latest_with_history(
    svc: Episodic,
) -> None:
    store = svc.store
    build(store)
    assert svc.memory_health("acme") is None
    for days in (2, 1, 0):
        svc.clock = lambda days=days: NOW - timedelta(days=days)  # type: ignore[misc]
        results = svc.health_snapshot(workspace="acme")
        assert [r.status for r in results] == ["ok"]
        assert [s["crew"] for s in results[0].detail["snapshots"]] == [None, "c1", "c2"]
    view = svc.memory_health("acme", history=30)
    assert view is not None
    body = view.to_json()
    assert {
        "freshness",
        "coverage",
        "coherence",
        "efficiency",
        "reachability",
        "score",
        "band",
        "snapshot_date",
        "history",
    } <= set(body)
    assert body["snapshot_date"] == "2026-11-24" and body["band"] == "yellow"
    assert [s["snapshot_date"] for s in body["history"]] == ["2026-11-23", "2026-11-22"]
    assert view.trend() == [s.score for s in reversed(view.history)] + [view.score]
    one = svc.memory_health("acme", history=1)
    assert one is not None and len(one.history) == 1
    crew = svc.memory_health("acme", "c1")
    assert crew is not None and crew.crew_id == "c1"
    assert svc.memory_health("acme", "nobody") is None
    with pytest.raises(InvalidInput, match="history"):
        svc.memory_health("acme", history=-1)
    with pytest.raises(InvalidInput, match="workspace"):
        svc.memory_health("")
