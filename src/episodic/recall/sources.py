"""One memory per source, and a summary after its evidence: the last order recall gives
its ranking before the hits are cut (``one_per_source``), fetching rows as it walks."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from episodic.model import Memory
from episodic.recall.trace import DROP_SAME_SOURCE, Trace
from episodic.scoring.mmr import tokens

# One memory says what another says when it holds this share of the other's words
# (below 1, so that a speaker's name around a quoted sentence does not count).
SAYS_SAME_SHARE = 0.8


def _source_key(m: Memory) -> str:
    """What a memory is evidence of: the one event it was made from (a journal entry's
    memory, a message, an entry quoting that message), else itself (an episode, a rule)."""
    return m.source_event_ids[0] if len(m.source_event_ids) == 1 else m.id


def derived_from(m: Memory) -> tuple[str, ...]:
    """The memories ``m`` was derived from and restates (a consolidated rule lists its
    evidence), by id; () for a memory that stands on its own."""
    evidence = m.payload.get("evidence_ids", m.payload.get("evidence"))
    if isinstance(evidence, list) and all(isinstance(e, str) for e in evidence):
        return tuple(evidence)
    return ()


def statement(m: Memory) -> str:
    """What a memory states: the sentences its evidence quotes (an entry, a learning),
    else its content."""
    evidence = m.payload.get("evidence")
    return evidence if isinstance(evidence, str) and evidence.strip() else m.content


def says_all_of(a: str, b: str) -> bool:
    """Whether text ``a`` holds (nearly) every word of text ``b``."""
    words = tokens(b)
    if not words:
        return True
    return len(words & tokens(a)) >= SAYS_SAME_SHARE * len(words)


def _stands_for_source(m: Memory, first: Memory | None, placed: bool) -> bool:
    """Whether entry ``m`` takes the slot ``first`` (same source, ranked above it) holds:
    a message's (seed 004: the entry carries its exact evidence), a learning's only when
    it says all the learning says. A message often says several things, an entry from
    one sentence and a learning from the next: the better-ranked keeps the slot then."""
    if not placed or first is None or m.type != "entry":
        return False
    if first.type == "message":
        return True
    return first.type == "learning" and says_all_of(statement(m), statement(first))


def _why_dropped(m: Memory, first: Memory | None, first_id: str) -> str:
    """The trace's detail for ``m`` dropped below ``first``, a memory of its source."""
    if m.type == "message":
        return f"{first_id} was made from it"
    if first is None or first.type == "message" or says_all_of(statement(first), statement(m)):
        return f"says what {first_id} says"
    return f"made from the message {first_id} was made from, and ranked below it"


def one_per_source(
    ranked: list[tuple[str, float]],
    memories: dict[str, Memory],
    fetch: Callable[[Sequence[str]], None],
    k: int,
    trace: Trace | None,
) -> list[tuple[str, float]]:
    """The final order, walking down the ranking until ``k`` are kept (fetching rows as
    it goes):

    - one memory per source: an entry extracted from a message says what the message says,
      and two slots for one piece of evidence crowd out another. The best-ranked takes the
      slot, but an entry stands for its source (seed 004: it carries the exact evidence):
      it takes the slot of the message it was made from, and of a learning made from it
      that says no more than the entry (one that says something else keeps its slot);
    - a memory derived from others (a consolidated rule) comes right after the last of
      its evidence that is ranked too: a summary never displaces what it summarises."""
    out: list[tuple[str, float]] = []
    seen: dict[str, str] = {}
    ahead = {i for i, _ in ranked}
    waiting: dict[str, list[tuple[str, float]]] = {}  # evidence id -> summaries after it
    pending: dict[str, set[str]] = {}  # summary id -> its evidence not yet placed
    kept = 0

    at: dict[str, int] = {}  # placed id -> its index in out

    def place(mid: str, score: float) -> None:
        nonlocal kept
        at[mid] = len(out)
        out.append((mid, score))
        kept += 1
        release(mid, score)

    def release(mid: str, score: float) -> None:
        # A summary follows its evidence, and scores no higher than what it follows.
        for summary, own in waiting.pop(mid, []):
            left = pending[summary]
            left.discard(mid)
            if not left:
                del pending[summary]
                place(summary, min(own, score))

    for start in range(0, len(ranked), 2 * k):
        chunk = ranked[start : start + 2 * k]
        if kept >= k and trace is None and not pending:
            out += chunk  # past k only the order matters, and it is unchanged
            continue
        fetch([i for i, _ in chunk])
        for mid, score in chunk:
            ahead.discard(mid)
            m = memories.get(mid)
            if m is None:
                release(mid, score)
                continue
            key = _source_key(m)
            first = seen.get(key)
            if first is not None and _stands_for_source(m, memories.get(first), first in at):
                seen[key] = mid
                out[at[first]] = (mid, out[at[first]][1])
                at[mid] = at.pop(first)
                if trace is not None:
                    trace.drop(first, "sources", DROP_SAME_SOURCE, f"{mid} stands for it")
                release(mid, score)
                continue
            if first is not None:
                if trace is not None:
                    why = _why_dropped(m, memories.get(first), first)
                    trace.drop(mid, "sources", DROP_SAME_SOURCE, why)
                release(mid, score)
                continue
            seen[key] = mid
            below = {e for e in derived_from(m) if e in ahead}
            if below:
                pending[mid] = below
                for e in below:
                    waiting.setdefault(e, []).append((mid, score))
                continue
            place(mid, score)
    # Evidence that never came (no row any more): its summaries follow in rank order.
    for mid, score in sorted(
        {(s, sc) for lst in waiting.values() for s, sc in lst if s in pending},
        key=lambda pair: -pair[1],
    ):
        pending.pop(mid, None)
        out.append((mid, score))
    return out
