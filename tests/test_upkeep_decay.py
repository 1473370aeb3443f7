"""Decay and reinforcement: seed 000's values (and seed 001's prominence), through the
service, and recall feeding the reference count."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic, InvalidInput, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.model import Event, Memory
from episodic.store import open_store

NOW = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)


@pytest.fixture
def svc(db_url: str) -> Iterator[Episodic]:
    mem = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=256),
        settings=Settings(),
        clock=lambda: NOW,
    )
    yield mem
    mem.close()


def put(svc: Episodic, id: str, days: float, refs: int = 0, base: float = 0.5) -> None:
    ts = NOW - timedelta(days=days)
    e = Event(id=id, workspace_id="acme", ts=ts, type="note", summary=f"{id} checkout cache")
    m = Memory(id=id, workspace_id="acme", ts=ts, type="note", content=e.summary,
               base_importance=base, importance=base, reference_count=refs,
               source_event_ids=(id,))  # fmt: skip
    svc.store.append([e], [m])


# (days old, references, crewship importance, prominence) for base importance 0.5.
# crewship: 0.5 x max(0.1, 1 - days/180) x (1 + log2(refs + 1)/8)
# prominence: 0.5 x max(0.1, exp(-ln2/90 x days)) x (1 + refs)
SEED_TABLE = [
    (1, 0, 0.497222, 0.496164),
    (1, 1, 0.559375, 0.992328),
    (1, 7, 0.683681, 3.969312),
    (180, 0, 0.05, 0.125),
    (180, 1, 0.05625, 0.25),
    (180, 7, 0.06875, 1.0),
    (365, 0, 0.05, 0.05),
    (365, 1, 0.05625, 0.1),
    (365, 7, 0.06875, 0.4),
]


@pytest.mark.parametrize("formula", ["crewship", "prominence"])
def test_the_nightly_job_pins_the_seeds_values(svc: Episodic, formula: str) -> None:
    for days, refs, _, _ in SEED_TABLE:
        put(svc, f"d{days}r{refs}", days, refs)
    result = svc.decay(formula=formula)
    assert result.ok and result.detail["changed"] == len(SEED_TABLE)
    for days, refs, crewship, prominence in SEED_TABLE:
        got = svc.store.get_memory("acme", f"d{days}r{refs}").importance
        want = crewship if formula == "crewship" else prominence
        assert got == pytest.approx(want, abs=1e-6), (days, refs)


def test_importance_is_clamped_to_one_by_the_crewship_formula(svc: Episodic) -> None:
    put(svc, "hot", 1, refs=7, base=0.9)  # 0.9 x 0.9944 x 1.375 = 1.23 -> 1.0
    svc.decay()
    assert svc.store.get_memory("acme", "hot").importance == 1.0


def test_a_second_run_at_the_same_time_changes_nothing(svc: Episodic) -> None:
    put(svc, "a", 30)
    put(svc, "b", 200, refs=3)
    assert svc.decay().detail["changed"] == 2
    before = [m.importance for m in svc.store.get_memories("acme", ["a", "b"])]
    assert svc.decay().detail["changed"] == 0
    assert [m.importance for m in svc.store.get_memories("acme", ["a", "b"])] == before


def test_recall_feeds_reinforcement(svc: Episodic) -> None:
    put(svc, "used", 10)
    put(svc, "unused", 10)
    svc.index_once()
    svc.decay()
    for _ in range(3):
        hits = svc.recall("used checkout cache", workspace="acme", k=1, policy="bm25").hits
        assert [h.id for h in hits] == ["used"]
    svc.decay()
    used, unused = svc.store.get_memories("acme", ["used", "unused"])
    assert used.reference_count == 3 and unused.reference_count == 0
    # 0.5 x (1 - 10/180) x (1 + log2(4)/8) vs without the boost
    assert used.importance == pytest.approx(0.5 * (1 - 10 / 180) * 1.25, abs=1e-6)
    assert unused.importance == pytest.approx(0.5 * (1 - 10 / 180), abs=1e-6)


def test_a_recall_with_mark_false_leaves_no_trace(svc: Episodic) -> None:
    put(svc, "m", 1)
    svc.recall("checkout", workspace="acme", policy="bm25", mark=False)
    assert svc.store.get_memory("acme", "m").reference_count == 0


def test_the_formula_is_checked_by_name(svc: Episodic) -> None:
    with pytest.raises(InvalidInput, match="formula"):
        svc.decay(formula="linear")
    with pytest.raises(InvalidInput, match="workspace"):
        svc.decay(workspace=" ")
    with pytest.raises(InvalidInput, match="EPISODIC_DECAY_FORMULA"):
        Settings.from_env({"EPISODIC_DECAY_FORMULA": "linear"})
    assert Settings.from_env({"EPISODIC_DECAY_FORMULA": "Prominence"}).decay_formula == (
        "prominence"
    )
