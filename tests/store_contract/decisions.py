"""Contract: undoing a supersession (``SupersessionStore.revert_supersession``) and the
reverted link it leaves, which detection must never make again."""

from __future__ import annotations

from datetime import timedelta

import pytest

from episodic.errors import NotFound
from episodic.model import MemoryStatus, ScopeFilter
from episodic.store.base import Store
from episodic.store.supersession import Supersession
from store_contract.helpers import (
    DIM,
    MODEL,
    T0,
    dense_ids,
    event,
    memory_of,
    remember,
    sparse_ids,
    vec,
)

LATER = T0 + timedelta(days=21)
UNDONE = T0 + timedelta(days=22)


def _card_change(store: Store, *, vectors: bool = False) -> None:
    """``card-a`` (day 0) superseded by ``card-b`` (day 21), ``quote-a`` (an entry made
    from ``card-a``) with it; with ``vectors``, both cards embedded before the change."""
    a = event("card-a", summary="pay subscriptions with card A", agent="billing")
    b = event("card-b", summary="card A expired, pay with card B", agent="billing", minutes=30)
    quote = event("quote-a", summary="the user pays with card A", agent="billing", minutes=1)
    remember(store, a, b)
    store.append([quote], [memory_of(quote, type="entry", source_event_ids=("card-a",))])
    if vectors:
        store.put_vectors(MODEL, DIM, [("card-a", vec(1, 0)), ("card-b", vec(0, 1))])
        assert dense_ids(store, ScopeFilter("acme"), vec(1, 0))[0] == "card-a"
    done = store.supersede(
        "acme", "card-a", "card-b", decided_by="offline:rule", reason="same slot", at=LATER
    )
    assert done is not None and done.status is MemoryStatus.SUPERSEDED


def _link(store: Store, old: str, new: str) -> Supersession:
    return next(s for s in store.supersessions("acme", [old]) if (s.old_id, s.new_id) == (old, new))


class DecisionsContract:
    def test_a_reverted_supersession_is_active_and_searchable_again(self, store: Store) -> None:
        _card_change(store, vectors=True)
        flt = ScopeFilter("acme")
        assert "card-a" not in sparse_ids(store, flt, "card")
        assert "card-a" not in dense_ids(store, flt, vec(1, 0))
        restored = store.revert_supersession("acme", "card-a", by="cli", at=UNDONE)
        assert restored == ["card-a", "quote-a"]
        for memory_id in ("card-a", "quote-a"):
            m = store.get_memory("acme", memory_id)
            assert (m.status, m.valid_to, m.superseded_by) == (MemoryStatus.ACTIVE, None, None)
            link = _link(store, memory_id, "card-b")
            assert (link.reverted_at, link.reverted_by) == (UNDONE, "cli")
        assert link.decided_by == "offline:rule"  # the decision is kept, marked undone
        assert {"card-a", "quote-a"} <= set(sparse_ids(store, flt, "card"))
        assert dense_ids(store, flt, vec(1, 0))[0] == "card-a"

    def test_a_reverted_pair_is_never_superseded_again_but_on_explicit_request(
        self, store: Store
    ) -> None:
        _card_change(store)
        store.revert_supersession("acme", "card-a", by="cli", at=UNDONE)
        again = store.supersede(
            "acme", "card-a", "card-b", decided_by="llm:m", reason="same slot", at=UNDONE
        )
        assert again is None
        assert store.get_memory("acme", "card-a").status is MemoryStatus.ACTIVE
        assert _link(store, "card-a", "card-b").reverted_at == UNDONE
        overruled = store.supersede(
            "acme",
            "card-a",
            "card-b",
            decided_by="explicit",
            reason="asked",
            at=UNDONE,
            overrule=True,
        )
        assert overruled is not None and overruled.status is MemoryStatus.SUPERSEDED
        link = _link(store, "card-a", "card-b")
        assert (link.decided_by, link.reason, link.reverted_at) == ("explicit", "asked", None)
        # The entry restored with it was reverted too: not taken along again.
        assert store.get_memory("acme", "quote-a").status is MemoryStatus.ACTIVE

    def test_reverting_what_is_not_superseded_writes_nothing(self, store: Store) -> None:
        _card_change(store)
        assert store.revert_supersession("acme", "card-b", by="cli", at=UNDONE) is None
        with pytest.raises(NotFound):
            store.revert_supersession("acme", "no-such", by="cli", at=UNDONE)
        with pytest.raises(NotFound):
            store.revert_supersession("orbit", "card-a", by="cli", at=UNDONE)
        assert store.get_memory("acme", "card-a").status is MemoryStatus.SUPERSEDED

    def test_a_reverted_link_goes_with_either_memory(self, store: Store) -> None:
        _card_change(store)
        store.revert_supersession("acme", "card-a", by="cli", at=UNDONE)
        store.delete_memories("acme", ["card-a"])
        assert [s.old_id for s in store.supersessions("acme", ["card-b"])] == ["quote-a"]

    def test_a_reverted_link_is_written_back_as_an_export_holds_it(self, store: Store) -> None:
        _card_change(store)
        store.revert_supersession("acme", "card-a", by="cli", at=UNDONE)
        links = store.supersessions("acme", ["card-a"])
        store.restore_supersessions("acme", links)
        assert store.supersessions("acme", ["card-a"]) == links
        assert links[0].reverted_at == UNDONE and links[0].reverted_by == "cli"
