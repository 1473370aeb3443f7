"""DenseIndex's approximate path (an inverted-file index over large workspaces): the rows it
returns carry exact cosines, it finds nearly all of the exact top k, it never returns a row
the filter hides, and it falls back to the exact scan when a probe comes back short."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from episodic.errors import ModelMismatch
from episodic.model import Scope, ScopeFilter
from episodic.store.dense import DenseIndex, DenseRows

DIM = 32
ROWS = 4000
ACME = ScopeFilter("acme")


def _vectors(n: int, seed: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    vecs = centres[rng.integers(0, 40, n)] + 0.5 * rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs


def _rows(
    vecs: npt.NDArray[np.float32], *, start: int = 0, statuses: list[str] | None = None
) -> DenseRows:
    n = len(vecs)
    return DenseRows(
        memory_ids=tuple(f"m{start + i}" for i in range(n)),
        vectors=tuple(v.astype("<f4").tobytes() for v in vecs),
        models=("test/model",) * n,
        agent_ids=tuple(f"agent{(start + i) % 10}" for i in range(n)),
        crew_ids=tuple(f"crew{(start + i) % 2}" for i in range(n)),
        resource_ids=(None,) * n,
        conversation_ids=(None,) * n,
        base_importances=(0.5,) * n,
        statuses=tuple(statuses or ["active"] * n),
    )


def _exact(
    vecs: npt.NDArray[np.float32], q: npt.NDArray[np.float32], k: int, keep: list[int]
) -> list[str]:
    scores = vecs[keep] @ q
    order = np.argsort(-scores, kind="stable")[:k]
    return [f"m{keep[int(i)]}" for i in order]


@pytest.fixture
def index_and_vectors() -> tuple[DenseIndex, npt.NDArray[np.float32]]:
    vecs = _vectors(ROWS, seed=1)
    index = DenseIndex()
    index.ann_min_rows = 1000  # the approximate path from 1,000 rows on
    index.upsert(_rows(vecs))
    return index, vecs


def test_ann_finds_nearly_all_of_the_exact_top_k_with_exact_scores(
    index_and_vectors: tuple[DenseIndex, npt.NDArray[np.float32]],
) -> None:
    index, vecs = index_and_vectors
    queries = _vectors(50, seed=2)
    overlap = []
    for q in queries:
        got = index.search(ACME, None, q, 20)
        assert len(got) == 20
        want = _exact(vecs, q, 20, list(range(ROWS)))
        overlap.append(len({c.memory_id for c in got} & set(want)) / 20)
        for c in got:
            # Only which rows are looked at is approximate; a score is the true cosine.
            assert c.score == pytest.approx(float(vecs[int(c.memory_id[1:])] @ q), abs=1e-5)
        assert [c.score for c in got] == sorted((c.score for c in got), reverse=True)
        assert [c.rank for c in got] == list(range(1, 21))
    assert index._ann is not None, "the search did not take the approximate path"
    assert float(np.mean(overlap)) >= 0.9


def test_ann_never_returns_what_the_filter_hides() -> None:
    vecs = _vectors(ROWS, seed=3)
    statuses = ["retired" if i % 3 == 0 else "active" for i in range(ROWS)]
    index = DenseIndex()
    index.ann_min_rows = 1000
    index.upsert(_rows(vecs, statuses=statuses))
    crew0 = ScopeFilter("acme", crew_id="crew0")  # half the rows: still the approximate path
    for q in _vectors(20, seed=4):
        for flt in (ACME, crew0):
            got = index.search(flt, None, q, 30)
            assert len(got) == 30
            for c in got:
                row = int(c.memory_id[1:])
                assert statuses[row] == "active", c.memory_id
                if flt.crew_id:
                    assert row % 2 == 0, c.memory_id
    assert index._ann is not None


def test_a_narrow_scope_and_a_short_probe_get_the_exact_answer() -> None:
    vecs = _vectors(ROWS, seed=5)
    index = DenseIndex()
    index.ann_min_rows = 1000
    index.upsert(_rows(vecs))
    q = _vectors(1, seed=6)[0]
    # One agent's rows (a tenth): gathered and scanned exactly.
    own = ScopeFilter("acme", agent_id="agent3", scope=Scope.OWN)
    got = [c.memory_id for c in index.search(own, Scope.OWN, q, 10)]
    assert got == _exact(vecs, q, 10, [i for i in range(ROWS) if i % 10 == 3])
    # Asking for every row: no probe of a quarter of the lists can hold them all.
    everything = index.search(ACME, None, q, ROWS)
    assert len(everything) == ROWS
    assert [c.memory_id for c in everything[:10]] == _exact(vecs, q, 10, list(range(ROWS)))


def test_ann_follows_appends_and_in_place_updates(
    index_and_vectors: tuple[DenseIndex, npt.NDArray[np.float32]],
) -> None:
    index, _ = index_and_vectors
    q = _vectors(1, seed=7)[0]
    index.search(ACME, None, q, 5)  # builds the index
    # A new row equal to the query: found first, with cosine 1.
    index.upsert(_rows(q[None, :], start=ROWS))
    top = index.search(ACME, None, q, 5)[0]
    assert top.memory_id == f"m{ROWS}" and top.score == pytest.approx(1.0, abs=1e-5)
    # An old row re-embedded as the query: its new vector is what is searched.
    index.upsert(_rows(q[None, :], start=7))
    got = {c.memory_id: c.score for c in index.search(ACME, None, q, 5)}
    assert got["m7"] == pytest.approx(1.0, abs=1e-5)
    assert len(index) == ROWS + 1


def test_a_query_normalised_once_searches_as_the_raw_one_and_its_size_is_still_checked() -> None:
    # The dense leg searches the memories and their passages with one query: it makes the
    # unit vector once and hands it to both searches.
    vecs = _vectors(200, seed=4)
    index = DenseIndex()
    index.upsert(_rows(vecs))
    raw = 3.0 * vecs[17]
    unit = index.query_vector(raw)
    assert float(np.linalg.norm(unit)) == pytest.approx(1.0)
    assert index.search_pairs(ACME, None, unit, 5, unit=True) == index.search_pairs(
        ACME, None, raw, 5
    )
    assert index.search_pairs(ACME, None, unit, 1, unit=True)[0][0] == "m17"
    with pytest.raises(ModelMismatch):
        index.search_pairs(ACME, None, np.ones(DIM + 1, dtype=np.float32), 5, unit=True)
    with pytest.raises(ModelMismatch):
        index.query_vector(np.ones(DIM + 1, dtype=np.float32))
