"""Newest first among memories about the same subject, at read time (the pure rules are
``scoring/supersede.py``; this step fetches the rows and vectors they need and reads what
each newer text says of change).

Two memories by the same owner (agent, crew and resource) are about the same subject
when their vectors are close: at cosine ``records`` when both are outside conversations,
at ``turns`` when either is a turn (never two turns of one conversation: they reply to
and repeat each other). A newer one
that only asks, plans, wishes, stays for a while or adds ("should we switch to B?", "for
this week use B", "Lena also has a work number": ``change_rules.change_kind``) pairs
with nothing, and neither does a newer one under an older one that tells why something
happened (a new instruction does not make the reason untrue). These are the
supersession rule's own guards; the pairing only reorders, it hides nothing.

Among the hits recall returns, a pair may also be told by what the newer text says: one
that states a changed value ("the quota is now 1,200": ``write/stated_change.py``) about
what the question asks and the older text names goes above it (``restated_first_within``,
no vectors needed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import cast

from episodic.blas import one_thread
from episodic.model import Memory, MemoryStatus, ScopeFilter
from episodic.policy import EPISODE_TYPE
from episodic.recall.policies import RecallPolicy
from episodic.scoring.supersede import newer_of, newest_first, older_below_newer, same_subject
from episodic.store.search import SearchStore


def newest_similar_first(
    store: SearchStore,
    flt: ScopeFilter,
    ranked: list[tuple[str, float]],
    memories: dict[str, Memory],
    fetch: Callable[[Sequence[str]], None],
    depth: int,
    cosines: tuple[float, float, float],
    earlier: dict[str, str] | None = None,
) -> list[tuple[str, float]]:
    """The head of ``ranked`` (its first ``depth``) with memories about the same subject
    newest first, at ``cosines`` (between records, with a turn, with a turn when the
    newer text states a change in plain change language: ``subject_cosine_changes``);
    ``earlier``, when given,
    receives each id that has a newer one about its subject in the head, with that newer
    id. Without stored vectors (no embedder) nothing moves."""
    if all(c <= 0 for c in cosines):
        return ranked
    head, tail = ranked[:depth], ranked[depth:]
    fetch([i for i, _ in head])
    head = [(i, s) for i, s in head if i in memories]
    similar = _similar(store, flt, head, memories, cosines)
    if not similar:
        return ranked
    return _reordered(newest_first, head, similar, memories, earlier) + tail


@dataclass(frozen=True, slots=True)
class Hits:
    """The hits recall chose (``chosen``, best first, every one in ``memories``) and what
    to read them with: the ``question`` they answer, the ``store`` and scope (``flt``)
    their vectors come from (None: no vectors to read, and a reorder that needs them moves
    nothing), and ``earlier``, which receives each older id a reorder moved with the newer
    one."""

    chosen: list[tuple[str, float]]
    memories: dict[str, Memory]
    question: str
    store: SearchStore | None = None
    flt: ScopeFilter | None = None
    earlier: dict[str, str] | None = None
    # How many hits recall returns (None: as many as ``chosen`` holds); a memory brought
    # in takes a free place, or the last hit's.
    k: int | None = None


def order_within_hits(hits: Hits, policy: RecallPolicy) -> list[tuple[str, float]]:
    """The hits recall chose in the order ``policy``'s soft signals among them give:
    newer turns about one subject first (``subject_cosine_hits``), then a newer one that
    restates a value the question asks about (``restated_words``), then a newer one the
    supersession rule reads as changing an older (``changed_first``). No hit enters or
    leaves."""
    chosen = newer_turns_first_within(hits, policy.subject_cosine_hits)
    chosen = restated_first_within(replace(hits, chosen=chosen), policy.restated_words)
    chosen = changed_first_within(replace(hits, chosen=chosen), policy.changed_first)
    return partly_changed_first(replace(hits, chosen=chosen), policy.partly_changed)


# ``partly_changed``'s levels: order the hits; also bring the newer in.
PARTLY_ORDER = 1
PARTLY_BRING_IN = 2


def partly_changed_first(hits: Hits, level: int) -> list[tuple[str, float]]:
    """The hits with a newer memory that detection on write found changing part of an
    older hit (``partial_changes``: the older says more that stays true, so it was not
    replaced) ranked just above it, the older marked earlier, when the question asks for
    the current state. An episode takes the links of the messages it recounts, never to
    a newer one made from the same. At level 2
    (``PARTLY_BRING_IN``; 1 only orders, 0 does nothing) a newer memory recall did not
    choose takes a place just above the older one (the last hit gives its place up) when
    ``flt`` can see it and it is active. One read of the hits' links; one more, of the
    newer memories, only when one is brought in."""
    chosen, memories, flt = hits.chosen, hits.memories, hits.flt
    if level < PARTLY_ORDER or not chosen or flt is None or flt.superseded:
        return chosen
    if not _asks_for_now(hits.question):
        return chosen
    # A store of the full protocol reads links (``SupersessionStore``); a search-only one
    # has none to read.
    links_of = getattr(hits.store, "partly_changed_by", None)
    if links_of is None:
        return chosen
    # A hit's own id, and for one made from others the memories it was made from.
    keys = {i: [i, *(s for s in memories[i].source_event_ids if s != i)] for i, _ in chosen}
    # An episode recounts its whole session, the changed sentence with it, and is never a
    # candidate on write: it takes its messages' links. An entry drawn from a message was
    # a candidate itself; still active and unlinked, it holds none of what changed.
    asked = {i: keys[i] if memories[i].type == EPISODE_TYPE else [i] for i, _ in chosen}
    links = cast(
        "dict[str, list[str]]",
        links_of(flt.workspace_id, [k for ks in asked.values() for k in ks]),
    )
    if not links:
        return chosen
    newer: dict[str, list[str]] = {}
    for i, _ in chosen:
        found = [n for k in asked[i] for n in links.get(k, ())]
        if found:
            newer[i] = list(dict.fromkeys(found))
    if not newer:
        return chosen
    # A newer memory is among the hits as itself or as a hit made from it (the episode
    # of the session that said it), never one made from the older's sources too.
    similar = {older: _standing_for(older, ns, chosen, keys) for older, ns in newer.items()}
    if level >= PARTLY_BRING_IN:
        wanted = {older: ns[0] for older, ns in newer.items() if not similar[older]}
        if wanted:
            chosen = _brought_in(hits, chosen, wanted)
            keys.update({i: [i] for i, _ in chosen if i not in keys})
            similar = {o: _standing_for(o, ns, chosen, keys) for o, ns in newer.items()}
    # Only a newer partner moves (newest_first and newer_of compare the times).
    ts = {i: memories[i].ts for i, _ in chosen}
    room = max(len(hits.chosen), hits.k or 0)
    if not any(similar.values()):
        return chosen[:room]
    # No base-importance guard: the rule read the change, an entry may stand above the
    # message it changes.
    ordered = newest_first(chosen, similar, ts)[:room]
    if hits.earlier is not None:
        hits.earlier.update(newer_of(ordered, similar, ts))
    return ordered


def _standing_for(
    older: str,
    newer: Sequence[str],
    chosen: Sequence[tuple[str, float]],
    keys: dict[str, list[str]],
) -> list[tuple[str, float]]:
    """The hits that are one of ``newer`` or were made from one, none made from what
    ``older`` was made from."""
    wanted, own = set(newer), set(keys[older])
    return [
        (i, 1.0)
        for i, _ in chosen
        if i != older and wanted & set(keys[i]) and not own & set(keys[i])
    ]


def _brought_in(
    hits: Hits, chosen: list[tuple[str, float]], wanted: dict[str, str]
) -> list[tuple[str, float]]:
    """``chosen`` with, for each older hit in ``wanted``, its newer memory put in just
    below it with its score (the order step lifts it above, and cuts the hits back to
    ``k``) when ``hits.flt`` can see it and it is active."""
    from episodic.store.sql import scope_allows

    assert hits.store is not None and hits.flt is not None
    found = {
        m.id: m
        for m in hits.store.get_memories(hits.flt.workspace_id, list(set(wanted.values())))
        if m.status is MemoryStatus.ACTIVE and scope_allows(hits.flt, m)
    }
    if not found:
        return chosen
    out: list[tuple[str, float]] = []
    for i, score in chosen:
        out.append((i, score))
        newer = wanted.get(i)
        if newer in found and newer not in {j for j, _ in out}:
            hits.memories[newer] = found[newer]
            out.append((newer, score))
    return out


def newer_turns_first_within(hits: Hits, turns: float) -> list[tuple[str, float]]:
    """The hits with the older of a pair about one subject, a turn in it, moved to just
    below the newer one, at cosine ``turns`` (0 moves nothing), when the question asks
    for the current state (one in the past tense, or about a first or earlier state,
    wants the older: nothing moves). No hit enters or leaves: a newer turn deep in the
    candidates is never lifted into the hits over other evidence, it only orders the hits
    already chosen."""
    chosen = hits.chosen
    if (
        turns <= 0
        or len(chosen) < 2
        or hits.store is None
        or hits.flt is None
        or not _asks_for_now(hits.question)
    ):
        return chosen
    similar = _similar(hits.store, hits.flt, chosen, hits.memories, (0.0, turns, 0.0))
    if not similar:
        return chosen
    return _reordered(older_below_newer, chosen, similar, hits.memories, hits.earlier)


def restated_first_within(hits: Hits, shared: int) -> list[tuple[str, float]]:
    """The hits with a newer one that restates a value the question asks about lifted to
    just above an older one by the same owner, when the question asks what something is
    now (a what / how / when / where question in the present). The newer one must state
    a changed value ("the quota is now 1,200", "has improved to 250ms":
    ``stated_change.stated_changes``), and the question, the words around that change and
    the older text must share ``shared`` content words or more (0 moves nothing): the
    same subject, named by all three. Never two turns of one conversation. No hit enters
    or leaves. Needs no vectors."""
    chosen, memories = hits.chosen, hits.memories
    if shared <= 0 or len(chosen) < 2 or not _asks_for_current_value(hits.question):
        return chosen
    asked = _content_words(hits.question)
    if len(asked) < shared:
        return chosen
    said = {i: _head(memories[i].content) for i, _ in chosen}
    # Only a text that holds ``shared`` of the question's stems anywhere can pair, as the
    # newer (its change's own words) or as the older (its words): the rest is not read.
    may = {i for i in said if _may_share(said[i], asked, shared)}
    changes = {
        i: tuple(about for about in _stated(said[i]) if len(about & asked) >= shared)
        if i in may
        else ()
        for i in said
    }
    if not any(changes.values()):
        return chosen
    similar: dict[str, list[tuple[str, float]]] = {}
    for older, _ in chosen:
        old = memories[older]
        # Which of the two is newer, newest_first decides (and lifts only the newer).
        newers = [
            newer
            for newer, _ in chosen
            if changes[newer]
            and _owner(memories[newer]) == _owner(old)
            and (old.conversation is None or memories[newer].conversation != old.conversation)
        ]
        # Reading the older's words costs more than the rest: only where a newer may pair.
        words: frozenset[str] = frozenset()
        if newers and older in may:
            words = _content_words(said[older]) & asked
        similar[older] = [
            (newer, 1.0)
            for newer in newers
            if any(len(words & change) >= shared for change in changes[newer])
        ]
    if not any(similar.values()):
        return chosen
    return _reordered(newest_first, chosen, similar, memories, hits.earlier)


def changed_first_within(hits: Hits, on: bool) -> list[tuple[str, float]]:
    """The hits with each older one moved to just below a newer one that the supersession
    rule reads as changing it, when the question asks for the current state: the rule
    decides ``supersedes`` (detection on write did not get to the pair), or declines only
    because the older says more than the change (``says-more``: the older stays true in
    part, so it stays, below and marked earlier). The write-time guards hold: the same
    owner, never one made from the other or from the same source, never a reason under a
    new instruction, never two turns of one conversation. No hit enters or leaves. Needs
    no vectors."""
    chosen, memories = hits.chosen, hits.memories
    if not on or len(chosen) < 2 or not _asks_for_now(hits.question):
        return chosen
    from episodic.write.change_rules import may_signal_change

    said = {i: _head(memories[i].content) for i, _ in chosen}
    # Reading a text's sentences costs ~0.5 ms; most texts hold no word a signal needs.
    changing = [
        i for i, _ in chosen if may_signal_change(said[i]) and _read(said[i])[1] == "change"
    ]
    if not changing:
        return chosen
    similar: dict[str, list[tuple[str, float]]] = {i: [] for i, _ in chosen}
    for newer in changing:
        for older, _ in chosen:
            if _changes(memories[newer], memories[older], said[newer], said[older]):
                similar[older].append((newer, 1.0))
    if not any(similar.values()):
        return chosen
    return _reordered(older_below_newer, chosen, similar, memories, hits.earlier)


def _changes(new: Memory, old: Memory, new_head: str, old_head: str) -> bool:
    """Whether the rule reads ``new`` as changing (a sentence of) ``old``, the guards
    allowing."""
    from episodic.write.change_rules import decide
    from episodic.write.supersession import Claim, blocked

    if new.id == old.id:
        return False
    if old.conversation is not None and new.conversation == old.conversation:
        return False
    claims = [
        Claim(m.id, head, m.ts, _owner(m), m.source_event_ids)
        for m, head in ((new, new_head), (old, old_head))
    ]
    if blocked(*claims) is not None:
        return False
    verdict = decide(new_head, old_head)
    return verdict.kind == "supersedes" or verdict.rule == "says-more"


def _owner(memory: Memory) -> tuple[str | None, str | None, str | None]:
    return memory.agent, memory.crew, memory.resource


def _reordered(
    order: Callable[..., list[tuple[str, float]]],
    ranked: list[tuple[str, float]],
    similar: dict[str, list[tuple[str, float]]],
    memories: dict[str, Memory],
    earlier: dict[str, str] | None,
) -> list[tuple[str, float]]:
    """``ranked`` put in ``order`` (newest_first or older_below_newer) by its memories'
    times and base importances; ``earlier``, when given, receives each id with the
    newest of its newer ones ranked with it."""
    ts = {i: memories[i].ts for i, _ in ranked}
    if earlier is not None:
        earlier.update(newer_of(ranked, similar, ts))
    base = {i: memories[i].base_importance for i, _ in ranked}
    return order(ranked, similar, ts, base)


def _similar(
    store: SearchStore,
    flt: ScopeFilter,
    head: list[tuple[str, float]],
    memories: dict[str, Memory],
    cosines: tuple[float, float, float],
) -> dict[str, list[tuple[str, float]]]:
    """Each id of ``head`` with its newer memories about the same subject at ``cosines``
    (between records, with a turn, with a turn when the newer states a change) that the
    guards let pair; {} when none pair."""
    records, turns, changes = cosines
    with_turns = turns > 0 or changes > 0
    taking = [i for i, _ in head if with_turns or memories[i].conversation is None]
    if len(taking) < 2:
        return {}
    vectors = store.get_vectors(flt.workspace_id, taking)
    if len(vectors) < 2:
        return {}
    read = {i: _read(memories[i].content) for i in vectors}
    said = {i: head for i, (head, _) in read.items()}
    # What a newer text says of change decides whether it pairs at all, and at what
    # cosine with a turn.
    kind = {i: k for i, (_, k) in read.items()}
    on_records = {i: records if kind[i] != "guarded" else 0.0 for i in vectors}
    on_turns = {i: _turn_cosine(kind[i], turns, changes) for i in vectors}
    conversation = {i: memories[i].conversation for i in vectors}
    owner = {i: (memories[i].agent, memories[i].crew, memories[i].resource) for i in vectors}
    ts = {i: memories[i].ts for i, _ in head}
    # A head's cosines are one small product: on one BLAS thread it takes 0.4 ms, where
    # OpenBLAS's threads on a loaded machine took 36.
    with one_thread():
        pairs = same_subject(vectors, conversation, ts, on_records, on_turns, owner)
    similar = {
        older: [
            (newer, w)
            for newer, w in others
            if not _reason_over_instruction(said[newer], said[older])
        ]
        for older, others in pairs.items()
    }
    return similar if any(similar.values()) else {}


# The same memories come back query after query: what their texts say is read once (a
# text's head costs milliseconds to read, and a head holds up to a hundred memories).
_READ_CACHE = 8192


def _turn_cosine(kind: str, turns: float, changes: float) -> float:
    """The cosine a newer text of ``kind`` (``change_rules.change_kind``) pairs at when a
    turn is in the pair: ``turns`` unless it is guarded, and ``changes`` (when lower, or
    ``turns`` is off) when it states a change in plain change language; 0 pairs none."""
    if kind == "guarded":
        return 0.0
    if kind == "change" and changes > 0:
        return changes if turns <= 0 else min(turns, changes)
    return turns


@lru_cache(maxsize=_READ_CACHE)
def _read(content: str) -> tuple[str, str]:
    """A text's head, as the supersession rule reads it, and what it says of change
    (``change_kind``: it only asks, plans, stays for a while or adds when it is
    ``guarded``; ``change`` when it says so in plain change language)."""
    # The rules load with the first recall that needs them (a keyword recall never does).
    from episodic.write.change_rules import change_kind
    from episodic.write.supersession import OFFLINE_MAX_CHARS
    from episodic.write.text import cut_words

    head = cut_words(content, OFFLINE_MAX_CHARS, ellipsis="")
    return head, change_kind(head)


@lru_cache(maxsize=_READ_CACHE)
def _head(content: str) -> str:
    from episodic.write.supersession import OFFLINE_MAX_CHARS
    from episodic.write.text import cut_words

    return cut_words(content, OFFLINE_MAX_CHARS, ellipsis="")


def _stated(head: str) -> tuple[frozenset[str], ...]:
    """What each value ``head`` states as changed is about (its content words)."""
    from episodic.write.stated_change import stated_changes

    return tuple(change.about for change in stated_changes(head))


def _may_share(text: str, stems: frozenset[str], shared: int) -> bool:
    """False when fewer than ``shared`` of ``stems`` occur in ``text`` at all: the content
    words read from it then share fewer too."""
    folded = text.casefold()
    # Stems read "’" as "'"; a code keeps it as written.
    texts = (folded, folded.replace("\u2019", "'")) if "\u2019" in folded else (folded,)
    return sum(any(s in t for t in texts) for s in stems) >= shared


def _content_words(text: str) -> frozenset[str]:
    from episodic.write.stated_change import content_words

    return content_words(text)


def _asks_for_current_value(question: str) -> bool:
    from episodic.write.questions import asks_for_current_value

    return asks_for_current_value(question)


def _asks_for_now(question: str) -> bool:
    from episodic.write.questions import asks_for_now

    return asks_for_now(question)


@lru_cache(maxsize=_READ_CACHE)
def _reason_over_instruction(new: str, old: str) -> bool:
    from episodic.write.change_rules import reason_over_instruction

    return reason_over_instruction(new, old)
