"""MMR's token sets are made once per memory and kept across queries (a long memory's text
was re-read on every recall), read again when the memory's text changes, and bounded."""

from __future__ import annotations

import pytest

from episodic.scoring import mmr as mmr_module
from episodic.scoring.mmr import TokenSets, jaccard, tokens


def test_jaccard_counts_the_union() -> None:
    a, b = frozenset({"x", "y", "z"}), frozenset({"y", "z", "w", "v"})
    assert jaccard(a, b) == 2 / 5
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(a, frozenset()) == 0.0


def test_a_memory_is_tokenised_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = mmr_module.tokens

    def counting(text: str) -> frozenset[str]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(mmr_module, "tokens", counting)
    sets = TokenSets(size=2)
    long_text = "deploy the cache " * 10_000
    first = sets.get("m1", long_text)
    assert sets.get("m1", "".join(["deploy the cache "] * 10_000)) is first  # an equal copy
    assert len(calls) == 1 and first == tokens(long_text)
    # an edited memory is read again
    assert sets.get("m1", "new words") == frozenset({"new", "words"})
    assert len(calls) == 2
    # bounded: the oldest goes first
    sets.get("m2", "b")
    sets.get("m3", "c")
    sets.get("m1", "new words")
    assert len(calls) == 5
