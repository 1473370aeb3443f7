"""One memory per statement of a source, and a summary after its evidence: the last order
recall gives its ranking before the hits are cut (``one_per_source``), fetching rows as it
walks."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from episodic.model import Memory
from episodic.recall.trace import DROP_SAME_SOURCE, Trace
from episodic.scoring.mmr import tokens

# One memory says what another says when it holds this share of the other's words. A
# message often says several things, and each may become a memory of its own (an entry
# from one sentence, a learning from the next): those share a source but not a
# statement, and dropping one for the other would hide it from every recall. Below 1 so
# that a speaker's name or a greeting around a quoted sentence does not count.
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
    it carries the exact evidence (seed 004), but only in place of what it says whole."""
    return (
        placed
        and first is not None
        and m.type == "entry"
        and first.type in ("message", "learning")
        and says_all_of(statement(m), statement(first))
    )


def _said_by(m: Memory, shown: list[str], memories: dict[str, Memory]) -> str | None:
    """The first of ``shown`` (memories of ``m``'s source) that says all ``m`` says; for
    a message, the first memory made of it: what ranked the message is most often what
    that memory quotes, and the message again would take a slot from another source."""
    if m.type == "message" and shown:
        return shown[0]
    said = statement(m)
    for i in shown:
        other = memories.get(i)
        if other is not None and says_all_of(statement(other), said):
            return i
    return None


def one_per_source(
    ranked: list[tuple[str, float]],
    memories: dict[str, Memory],
    fetch: Callable[[Sequence[str]], None],
    k: int,
    trace: Trace | None,
) -> list[tuple[str, float]]:
    """The final order, walking down the ranking until ``k`` are kept (fetching rows as
    it goes):

    - one memory per statement of a source: an entry extracted from a message says what
      the message says, and two slots for one piece of evidence crowd out another. The
      best-ranked takes the slot, and a lower memory of the same source that it says
      whole is dropped (a message, below any memory made of it); but an entry stands for
      what it quotes (seed 004: it carries the exact evidence): it takes the slot of a
      message or learning made from that same source when it says all of it. Memories
      of one message that say different things (an entry of one sentence, a learning of
      the next) each keep a slot;
    - a memory derived from others (a consolidated rule) comes right after the last of
      its evidence that is ranked too: a summary never displaces what it summarises."""
    out: list[tuple[str, float]] = []
    seen: dict[str, list[str]] = {}  # source -> the memories of it kept, in rank order
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
            shown = seen.setdefault(key, [])
            first = next(
                (i for i in shown if _stands_for_source(m, memories.get(i), i in at)), None
            )
            if first is not None:
                shown[shown.index(first)] = mid
                out[at[first]] = (mid, out[at[first]][1])
                at[mid] = at.pop(first)
                if trace is not None:
                    trace.drop(first, "sources", DROP_SAME_SOURCE, f"says what {mid} says")
                release(mid, score)
                continue
            if (said := _said_by(m, shown, memories)) is not None:
                if trace is not None:
                    trace.drop(mid, "sources", DROP_SAME_SOURCE, f"says what {said} says")
                release(mid, score)
                continue
            shown.append(mid)
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
