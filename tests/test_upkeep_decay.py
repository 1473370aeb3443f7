"""Decay and reinforcement: seed 000's values (and seed 001's prominence), through the
service, and recall feeding the reference count."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic, InvalidInput, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.model import Event, Memory
from episodic.scoring.decay import prominence_importance, reinforcement_of
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


def put(
    svc: Episodic,
    id: str,
    days: float,
    refs: int = 0,
    base: float = 0.5,
    *,
    reinforced: object = None,
) -> None:
    """A memory with seed 000's reference count ``refs`` and, unless None, seed 001's
    payload ``reinforcement_count`` (``reinforced``: any JSON value, to test the reading)."""
    ts = NOW - timedelta(days=days)
    payload = {} if reinforced is None else {"reinforcement_count": reinforced}
    e = Event(id=id, workspace="acme", ts=ts, type="note", summary=f"{id} checkout cache")
    m = Memory(id=id, workspace="acme", ts=ts, type="note", content=e.summary,
               base_importance=base, importance=base, reference_count=refs,
               payload=payload, source_event_ids=(id,))  # fmt: skip
    svc.store.append([e], [m])


# (days old, uses, crewship importance, prominence) for base importance 0.5, where the
# uses are seed 000's reference count for crewship and seed 001's reinforcement count
# for prominence.
# crewship: 0.5 x max(0.1, 1 - days/180) x (1 + log2(refs + 1)/8)
# prominence: clamp01(0.5 x max(0.1, exp(-ln2/90 x days)) x (1 + reinforcement))
SEED_TABLE = [
    (1, 0, 0.497222, 0.496164),
    (1, 1, 0.559375, 0.992328),
    (1, 7, 0.683681, 1.0),  # 3.969312 before the clamp
    (180, 0, 0.05, 0.125),
    (180, 1, 0.05625, 0.25),
    (180, 7, 0.06875, 1.0),
    (365, 0, 0.05, 0.05),
    (365, 1, 0.05625, 0.1),
    (365, 7, 0.06875, 0.4),
]


@pytest.mark.parametrize("formula", ["crewship", "prominence"])
def test_the_nightly_job_pins_the_seeds_values(svc: Episodic, formula: str) -> None:
    for days, uses, _, _ in SEED_TABLE:
        put(svc, f"d{days}r{uses}", days, uses, reinforced=uses)
    result = svc.decay(formula=formula)
    assert result.ok and result.detail["changed"] == len(SEED_TABLE)
    for days, uses, crewship, prominence in SEED_TABLE:
        got = svc.store.get_memory("acme", f"d{days}r{uses}").importance
        want = crewship if formula == "crewship" else prominence
        assert got == pytest.approx(want, abs=1e-6), (days, uses)


def test_importance_is_clamped_to_one_by_the_crewship_formula(svc: Episodic) -> None:
    put(svc, "hot", 1, refs=7, base=0.9)  # 0.9 x 0.9944 x 1.375 = 1.23 -> 1.0
    svc.decay()
    assert svc.store.get_memory("acme", "hot").importance == 1.0


def test_prominence_decay_keeps_stored_importance_within_one(svc: Episodic) -> None:
    # Seed 001's prominence of a fresh entry of importance 0.5 reinforced in 3 sessions is
    # 0.5 x 1 x (1 + 3) = 2.0: as a recall-time factor that is fine, as the stored
    # importance every reader takes for a 0..1 scale it is not.
    put(svc, "fresh", 0, refs=3, base=0.5, reinforced=3)
    put(svc, "hot", 1, refs=7, base=0.9, reinforced=7)
    svc.decay(formula="prominence")
    got = {m.id: m.importance for m in svc.store.get_memories("acme", ["fresh", "hot"])}
    assert got == {"fresh": 1.0, "hot": 1.0}
    hits = svc.recall("checkout cache", workspace="acme", policy="bm25", mark=False).hits
    assert hits and all(0.0 <= h.to_json()["importance"] <= 1.0 for h in hits)


def test_prominence_decay_reads_reinforcement_not_the_reference_count(svc: Episodic) -> None:
    # Seed 000's per-recall count and seed 001's per-session count are two signals: a
    # memory recalled 7 times in one session has 7 references and 1 reinforcement.
    put(svc, "a", 90, refs=7, reinforced=1)
    put(svc, "b", 90, refs=0)
    svc.decay(formula="prominence")
    a, b = svc.store.get_memories("acme", ["a", "b"])
    assert a.importance == pytest.approx(0.5 * 0.5 * 2, abs=1e-9)
    assert b.importance == pytest.approx(0.5 * 0.5, abs=1e-9)
    svc.decay(formula="crewship")
    a, b = svc.store.get_memories("acme", ["a", "b"])
    assert a.importance == pytest.approx(0.5 * 0.5 * (1 + 3 / 8), abs=1e-9)


@pytest.mark.parametrize(
    "stored",
    [0, 2, -4, 2.0, 2.5, "3", "", True, [1], {"n": 1}, 10**6 + 5, 10**18 - 1, 10**18],
)
def test_the_sql_reads_reinforcement_as_its_python_twin_does(svc: Episodic, stored: object) -> None:
    put(svc, "m", 12.5, base=0.4, reinforced=stored)
    svc.decay(formula="prominence")
    m = svc.store.get_memory("acme", "m")
    want = prominence_importance(0.4, 12.5, reinforcement_of(m.payload))
    assert m.importance == pytest.approx(want, abs=1e-12)


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
