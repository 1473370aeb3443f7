"""MMR compares a candidate with the picks only when it is about to be chosen: the picks,
their order and the merges it reports are those of comparing every candidate with every
pick, with far fewer Jaccard similarities computed (long memories' token sets hold
thousands of words)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest

from episodic.scoring import mmr as mmr_module
from episodic.scoring.mmr import MmrDrop, jaccard, mmr


def eager_mmr(
    ranked: Sequence[tuple[str, float]],
    token_sets: Mapping[str, frozenset[str]],
    k: int,
    lam: float,
) -> tuple[list[tuple[str, float]], list[MmrDrop]]:
    """MMR as seed 001 states it: after each pick, every remaining candidate compared."""
    top = max(score for _, score in ranked)
    scale = top if top > 0 else 1.0
    relevance = {i: s / scale for i, s in ranked}
    remaining = [i for i, _ in ranked]
    picked: list[str] = []
    best: dict[str, tuple[float, str]] = {i: (0.0, "") for i in remaining}
    while remaining and len(picked) < k:
        choice = max(remaining, key=lambda i: lam * relevance[i] - (1 - lam) * best[i][0])
        picked.append(choice)
        remaining.remove(choice)
        for i in remaining:
            sim = jaccard(token_sets[i], token_sets[choice])
            if sim > best[i][0]:
                best[i] = (sim, choice)
    first = [i for i, _ in ranked][: len(picked)]
    dropped = [MmrDrop(i, best[i][1], best[i][0]) for i in first if i not in picked and best[i][1]]
    return [(i, dict(ranked)[i]) for i in picked], dropped


@pytest.mark.parametrize("seed", range(40))
def test_the_lazy_picks_are_the_eager_picks(seed: int) -> None:
    rnd = random.Random(seed)
    vocabulary = [f"w{n}" for n in range(rnd.choice((6, 30, 200)))]
    n = rnd.randint(1, 60)
    ids = [f"m{i}" for i in range(n)]
    # Coarse scores make ties, which must fall to the better-ranked candidate as before.
    scores = sorted((rnd.choice((0.2, 0.5, 0.5, 0.9, 1.0)) for _ in ids), reverse=True)
    ranked = list(zip(ids, scores, strict=True))
    sets = {i: frozenset(rnd.sample(vocabulary, rnd.randint(0, len(vocabulary)))) for i in ids}
    for lam in (0.3, 0.7, 1.0):
        for k in (1, 5, 20, 80):
            assert mmr(ranked, sets, k, lam=lam) == eager_mmr(ranked, sets, k, lam)


def test_few_candidates_are_compared_when_they_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = mmr_module.jaccard

    def counting(a: frozenset[str], b: frozenset[str]) -> float:
        nonlocal calls
        calls += 1
        return real(a, b)

    monkeypatch.setattr(mmr_module, "jaccard", counting)
    ranked = [(f"m{i}", 1.0 - i / 100) for i in range(80)]
    sets = {i: frozenset({i, f"{i}-x"}) for i, _ in ranked}  # nothing alike
    picked, dropped = mmr(ranked, sets, 20, lam=0.7)
    assert [i for i, _ in picked] == [i for i, _ in ranked[:20]] and not dropped
    # Each pick is compared with the picks before it: 190, against 20 x ~70 = 1,390
    # when every remaining candidate is compared after every pick.
    assert calls == 190
