"""Source-backed extraction (seed 004): entries that quote the transcript they came from.

With an LLM, the role-labelled transcript goes in (as an untrusted data block) and entries
``{content, source, evidence}`` come out. The code trusts none of them:

1. ``source`` must be one of ``SOURCES``;
2. ``evidence`` must occur verbatim (whitespace runs collapsed on both sides) in a message
   of the transcript: a user message for ``user_assertion`` and
   ``user_accepted_assistant_proposal``, a user or assistant message for
   ``verified_assistant_finding``; tool and system messages are never evidence. The entry
   is attributed to the first message that qualifies;
3. content and evidence are normalised and cut to ``max_chars`` at a word boundary;
4. exact repeats (same ``content_hash``) are dropped;
5. at most ``per_turn`` entries are kept per turn (a user message and the replies up to
   the next user message), in the order they were given.

Repeats are dropped before the turn cap so that a repeat never takes the place of a new
entry. Every entry that fails a check is recorded in ``Extraction.dropped`` with its reason.
An ``LLMError`` falls back to the offline extraction with a warning.

``known`` holds what is already remembered for this user (seed 004's ``<memory>``
context): the model sees it as a ``<memory>`` block that is context, never a source, and
on either path a candidate whose content words are nearly all in one known note restates
it and is dropped (``restates_known``), before the turn cap.

Offline, only the user speaks for themselves: each declarative sentence of a user message
with real content (at least ``OFFLINE_MIN_WORDS`` words, ``OFFLINE_MIN_CONTENT_WORDS`` of
them content words; no question, request, greeting or thanks; nothing inside a code fence
or a ``>`` quote) becomes a ``user_assertion`` whose content and evidence are the sentence
itself. The same cuts, repeat check and turn cap apply.

On both paths seed 004's exclusions are enforced in code, whatever a model returned:
wishes and intentions, preferences and profile details, rules for the agent, generic
advice, pleasantries and speculation are not entries (``write.exclusions``; a model's note
is judged by its wording and by the sentences its evidence quotes), and neither is a
statement a later message of the same transcript corrects (``corrected_later``,
``write.corrections``). Each is recorded in ``Extraction.dropped`` with its reason.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from episodic.errors import InvalidInput, LLMError
from episodic.llm.base import LLM
from episodic.llm.prompts import (
    DEFAULT_PROMPTS,
    ENTRIES_PER_TURN,
    ENTRY_MAX_CHARS,
    ENTRY_SOURCES,
    EXTRACT_SCHEMA,
    Prompts,
    data_block,
    fill,
)
from episodic.write.cases import new_identifiers
from episodic.write.corrections import corrected_by
from episodic.write.exclusions import exclusion, note_exclusion
from episodic.write.messages import Message, transcript_json
from episodic.write.text import (
    FENCED,
    QUESTION_END,
    clip_messages,
    collapse,
    content_words,
    cut_words,
    split_sentences,
    word_count,
)

__all__ = [
    "ENTRIES_PER_TURN",
    "ENTRY_MAX_CHARS",
    "OFFLINE_EXTRACTOR",
    "REASONS",
    "SOURCES",
    "Dropped",
    "Entry",
    "Extraction",
    "content_hash",
    "extract_entries",
    "normalise",
]

log = logging.getLogger("episodic.write")

SOURCES: tuple[str, ...] = ENTRY_SOURCES
USER_SOURCES = frozenset({"user_assertion", "user_accepted_assistant_proposal"})
OFFLINE_EXTRACTOR = "offline"
# Evidence shorter than this (after normalising) would be found in almost any transcript.
EVIDENCE_MIN_CHARS = 3
OFFLINE_MIN_WORDS = 6
OFFLINE_MIN_CONTENT_WORDS = 3
# A long conversation reaches the model cut to about this many characters; every message
# keeps its place (and tool output is cut hardest, it is context only). Evidence is always
# checked against the full messages.
EXTRACT_INPUT_MAX_CHARS = 24_000
EXTRACT_MAX_TOKENS = 2048
# Known notes shown to the model: enough to recognise what is already remembered without
# crowding out the transcript.
KNOWN_SHOWN = 20
KNOWN_SHOWN_CHARS = 400
# A candidate with at least this share of its content words in one known note says
# nothing new (a paraphrase that adds a cause or an outcome stays below it).
RESTATES_SHARE = 0.8

# Why an entry was dropped: a check failed, or it is one of seed 004's exclusions.
# dedupe.py adds known_hash and similar.
UNKNOWN_SOURCE = "unknown_source"
EMPTY_CONTENT = "empty_content"
EVIDENCE_TOO_SHORT = "evidence_too_short"
EVIDENCE_NOT_IN_TRANSCRIPT = "evidence_not_in_transcript"
EVIDENCE_FROM_TOOL_OR_SYSTEM = "evidence_from_tool_or_system"
EVIDENCE_NOT_FROM_USER = "evidence_not_from_user"
DUPLICATE = "duplicate"
OVER_TURN_CAP = "over_turn_cap"
RESTATES_KNOWN = "restates_known"
KNOWN_HASH = "known_hash"
SIMILAR = "similar"
CORRECTED_LATER = "corrected_later"
# Seed 004's exclusions, by the kind ``write.exclusions`` names.
EXCLUDED: dict[str, str] = {
    "wish": "wish",
    "objective": "session_objective",
    "preference": "preference",
    "profile": "profile",
    "agent rule": "agent_rule",
    "advice": "generic_advice",
    "pleasantry": "pleasantry",
    "speculation": "speculation",
}
REASONS: tuple[str, ...] = (
    UNKNOWN_SOURCE,
    EMPTY_CONTENT,
    EVIDENCE_TOO_SHORT,
    EVIDENCE_NOT_IN_TRANSCRIPT,
    EVIDENCE_FROM_TOOL_OR_SYSTEM,
    EVIDENCE_NOT_FROM_USER,
    DUPLICATE,
    OVER_TURN_CAP,
    RESTATES_KNOWN,
    KNOWN_HASH,
    SIMILAR,
    CORRECTED_LATER,
    *EXCLUDED.values(),
)


@dataclass(frozen=True, slots=True)
class Entry:
    """One source-backed note. ``evidence`` is quoted from the message ``message_id``;
    ``extractor`` is ``"llm:<model_id>"`` or ``"offline"``."""

    content: str
    source: str
    evidence: str
    message_id: str
    extractor: str


@dataclass(frozen=True, slots=True)
class Dropped:
    """A candidate entry that was not kept, and why (one of ``REASONS``). A preference or
    profile fact keeps its ``evidence`` and the message it quotes (``message_id``): it is
    no entry, but a profile memory of the user."""

    content: str
    reason: str
    detail: str = ""
    evidence: str = ""
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class Extraction:
    entries: tuple[Entry, ...]
    dropped: tuple[Dropped, ...]


def normalise(text: str) -> str:
    """``text`` with every whitespace run collapsed to one space and the ends stripped."""
    return collapse(text)


def content_hash(text: str) -> str:
    """The sha256 hex digest of ``normalise(text)``, casefolded.

    Casefolded because two notes that differ only in case ("Deploy on Friday" / "deploy
    on friday") say the same thing, and this hash exists to catch exact repeats.
    """
    return hashlib.sha256(normalise(text).casefold().encode("utf-8")).hexdigest()


def extract_entries(
    messages: Sequence[Message],
    llm: LLM | None,
    *,
    prompts: Prompts = DEFAULT_PROMPTS,
    max_chars: int = ENTRY_MAX_CHARS,
    per_turn: int = ENTRIES_PER_TURN,
    known: Sequence[str] = (),
) -> Extraction:
    """Source-backed entries from ``messages``, with everything dropped on the way.
    ``known``: the notes already remembered for this user, most relevant first (context
    for the model and for the restatement check, never evidence).

    Never raises for LLM problems: they are logged and the offline extraction returned.
    """
    if max_chars < 1:
        raise InvalidInput("max_chars", f"must be at least 1, got {max_chars}")
    if per_turn < 0:
        raise InvalidInput("per_turn", f"must not be negative, got {per_turn}")
    if not any(m.spoken and m.text.strip() for m in messages):
        return Extraction((), ())  # nothing anyone said: no possible evidence
    notes = [n for n in (normalise(k) for k in known) if n]
    if llm is not None:
        extraction = _extract_with_llm(messages, llm, prompts, max_chars, per_turn, notes)
        if extraction is not None:
            return extraction
    return _extract_offline(messages, max_chars, per_turn, notes)


# -- evidence ------------------------------------------------------------------------------
class Evidence:
    """Finds where a quoted passage occurs in a transcript (whitespace-normalised)."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self._texts = [normalise(m.text) for m in messages]

    def find(self, quote: str, roles: Collection[str]) -> tuple[int | None, Message | None]:
        """The index of the first message of a role in ``roles`` that contains ``quote``,
        and the first message of another role that does (to say why the quote failed)."""
        elsewhere: Message | None = None
        for i, (message, text) in enumerate(zip(self.messages, self._texts, strict=True)):
            if quote in text:
                if message.role in roles:
                    return i, None
                if elsewhere is None:
                    elsewhere = message
        return None, elsewhere


def quotable(quote: str) -> bool:
    """Whether a normalised quote is long enough to mean anything as evidence."""
    return len(quote) >= EVIDENCE_MIN_CHARS and any(c.isalnum() for c in quote)


def evidence_failure(elsewhere: Message | None) -> tuple[str, str]:
    """The reason and detail for a quote not found in a message of the right role;
    ``elsewhere`` is a message of another role that contains it, if any."""
    if elsewhere is None:
        return EVIDENCE_NOT_IN_TRANSCRIPT, ""
    if not elsewhere.spoken:
        return (
            EVIDENCE_FROM_TOOL_OR_SYSTEM,
            f"quoted from a {elsewhere.role} message ({elsewhere.id})",
        )
    return EVIDENCE_NOT_FROM_USER, f"quoted from an {elsewhere.role} message ({elsewhere.id})"


# -- the LLM path --------------------------------------------------------------------------
def _extract_with_llm(
    messages: Sequence[Message],
    llm: LLM,
    prompts: Prompts,
    max_chars: int,
    per_turn: int,
    known: Sequence[str],
) -> Extraction | None:
    transcript = transcript_json(clip_messages(messages, EXTRACT_INPUT_MAX_CHARS))
    user = fill(
        prompts.extract_user,
        memory=memory_block(known),
        transcript=data_block("transcript", transcript),
    )
    try:
        reply = llm.complete_json(
            prompts.extract_system, user, EXTRACT_SCHEMA, max_tokens=EXTRACT_MAX_TOKENS
        )
    except LLMError as exc:
        log.warning("entry extraction failed, extracting offline instead: %s", exc)
        return None
    extractor = f"llm:{llm.model_id}"
    evidence = Evidence(messages)
    dropped: list[Dropped] = []
    candidates: list[tuple[int, Entry]] = []
    for item in reply["entries"]:
        content = normalise(item["content"])
        source = item["source"]
        quote = normalise(item["evidence"])
        if source not in SOURCES:
            dropped.append(Dropped(content, UNKNOWN_SOURCE, f"source {source!r}"))
            continue
        if not content:
            dropped.append(Dropped(content, EMPTY_CONTENT))
            continue
        if not quotable(quote):
            dropped.append(Dropped(content, EVIDENCE_TOO_SHORT, f"evidence {quote!r}"))
            continue
        roles = ("user",) if source in USER_SOURCES else ("user", "assistant")
        at, elsewhere = evidence.find(quote, roles)
        if at is None:
            reason, detail = evidence_failure(elsewhere)
            dropped.append(Dropped(content, reason, detail))
            continue
        kind = note_exclusion(content, split_sentences(quote))
        if kind is not None:
            dropped.append(
                Dropped(
                    cut_words(content, max_chars),
                    EXCLUDED[kind],
                    f"evidence {quote[:80]!r}",
                    cut_words(quote, max_chars),
                    messages[at].id,
                )
            )
            continue
        entry = Entry(
            content=cut_words(content, max_chars),
            source=source,
            evidence=cut_words(quote, max_chars),
            message_id=messages[at].id,
            extractor=extractor,
        )
        candidates.append((at, entry))
    candidates = _without_corrected(candidates, messages, dropped)
    candidates = _without_restatements(candidates, known, dropped)
    entries = _cap(candidates, messages, per_turn, dropped)
    return Extraction(entries, tuple(dropped))


def memory_block(known: Sequence[str]) -> str:
    """The known notes as the prompt's ``<memory>`` data block and a blank line ("" when
    none): the first ``KNOWN_SHOWN``, each cut to ``KNOWN_SHOWN_CHARS``."""
    if not known:
        return ""
    lines = [f"- {cut_words(note, KNOWN_SHOWN_CHARS, ellipsis='…')}" for note in known]
    return data_block("memory", "\n".join(lines[:KNOWN_SHOWN])) + "\n\n"


# -- the offline path ----------------------------------------------------------------------
_QUOTED_LINE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
# Pleasantries and acknowledgements in front of a statement ("Thanks, the build ...",
# "Ok so - ...") are cut off; the rest of the sentence is still quoted verbatim.
_LEADING_FILLER = re.compile(
    r"^(?:(?:(?:hi|hello|hey|wow|whoa|aww|oh|congrats|congratulations|thanks|thank you)"
    # A greeting may name who it greets ("Hey Nate, ...", "Wow Dave! ...").
    r"(?:\s+(?-i:[A-Z][\w'-]+))?"
    r"|thx|ok|okay|so|well|yes|yeah|yep|right|great|cool|sure|alright|anyway|also|ah|hmm|"
    r"awesome|perfect|wonderful|excellent|brilliant|amazing|fantastic|lovely|nice|sweet|"
    r"good|got it|gotcha|noted|understood)\s*[,!.:;—–-]+\s*)+",
    re.IGNORECASE,
)
# Openings of questions without a question mark and of requests to the assistant:
# neither states anything.
_NOT_A_STATEMENT = re.compile(
    r"^(?:who|whom|whose|what|when|where|why|how|which|"
    r"is|are|am|was|were|do|does|did|can|could|would|will|shall|should|may|might|"
    r"have|has|had|isn't|aren't|wasn't|weren't|doesn't|didn't|won't|wouldn't|"
    r"please|pls|let's|let me|tell me|show me|give me|help me|remind me|"
    r"i need you to|i want you to|i'd like you to|i would like you to|"
    r"good (?:morning|afternoon|evening|night)|bye|goodbye|see you|cheers)\b",
    re.IGNORECASE,
)


def _statements(text: str) -> Iterator[tuple[str, str | None]]:
    """The sentences of a user message that state something, verbatim, in order, each
    with the kind of exclusion it is (seed 004: a wish, a preference, a rule, advice ...
    is no entry), None for a possible entry."""
    prose = _QUOTED_LINE.sub("\n", FENCED.sub("\n", text))
    for sentence in split_sentences(prose):
        filler = _LEADING_FILLER.match(sentence)
        if filler:
            sentence = sentence[filler.end() :]
        if not sentence or QUESTION_END.search(sentence) or _NOT_A_STATEMENT.match(sentence):
            continue
        if word_count(sentence) < OFFLINE_MIN_WORDS:
            continue
        if len(content_words(sentence)) < OFFLINE_MIN_CONTENT_WORDS:
            continue
        yield sentence, exclusion(sentence)


def _extract_offline(
    messages: Sequence[Message], max_chars: int, per_turn: int, known: Sequence[str]
) -> Extraction:
    candidates: list[tuple[int, Entry]] = []
    dropped: list[Dropped] = []
    for i, message in enumerate(messages):
        if message.role != "user":
            continue
        for sentence, kind in _statements(message.text):
            text = cut_words(normalise(sentence), max_chars)
            if kind is not None:
                dropped.append(
                    Dropped(
                        text, EXCLUDED[kind], "offline: how the sentence opens", text, message.id
                    )
                )
                continue
            candidates.append(
                (i, Entry(text, "user_assertion", text, message.id, OFFLINE_EXTRACTOR))
            )
    candidates = _without_corrected(candidates, messages, dropped)
    candidates = _without_restatements(candidates, known, dropped)
    entries = _cap(candidates, messages, per_turn, dropped)
    return Extraction(entries, tuple(dropped))


# -- shared checks -------------------------------------------------------------------------
def _stems(text: str) -> set[str]:
    # A plural "s" off, so "refunds" restates "refund".
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in content_words(text)}


def _without_corrected(
    candidates: list[tuple[int, Entry]], messages: Sequence[Message], dropped: list[Dropped]
) -> list[tuple[int, Entry]]:
    """``candidates`` without those a later user or assistant message corrects (seed
    004: an earlier diagnostic branch the same transcript corrects is no entry)."""
    spoken = [(i, m.text) for i, m in enumerate(messages) if m.spoken and m.text.strip()]
    kept: list[tuple[int, Entry]] = []
    for at, entry in candidates:
        later = [(i, text) for i, text in spoken if i > at]
        found = corrected_by(entry.evidence, [text for _, text in later])
        if found is not None:
            by, word = later[found[0]][0], found[1]
            dropped.append(
                Dropped(
                    entry.content,
                    CORRECTED_LATER,
                    f"message {messages[by].id} rules out {word!r}",
                )
            )
            continue
        kept.append((at, entry))
    return kept


def _without_restatements(
    candidates: list[tuple[int, Entry]], known: Sequence[str], dropped: list[Dropped]
) -> list[tuple[int, Entry]]:
    """``candidates`` without those that restate a known note (``RESTATES_SHARE``). A
    note about another case (an identifier, number or name the known one lacks) restates
    nothing, whatever share of its words is known."""
    if not known:
        return candidates
    notes = [_stems(note) for note in known]
    kept: list[tuple[int, Entry]] = []
    for at, entry in candidates:
        words = _stems(entry.content)
        # Cases are compared only where the share would drop the entry: a lower share
        # decides nothing either way.
        share = max(
            (
                len(words & n) / len(words)
                for n, text in zip(notes, known, strict=True)
                if words
                and len(words & n) / len(words) >= RESTATES_SHARE
                and not new_identifiers(entry.content, text)
            ),
            default=0.0,
        )
        if words and share >= RESTATES_SHARE:
            dropped.append(
                Dropped(entry.content, RESTATES_KNOWN, f"{share:.0%} of its words are known")
            )
            continue
        kept.append((at, entry))
    return kept


def turn_of(messages: Sequence[Message]) -> list[int]:
    """For each message, the index of the user message that opened its turn (-1 before
    the first user message)."""
    turns: list[int] = []
    current = -1
    for i, message in enumerate(messages):
        if message.role == "user":
            current = i
        turns.append(current)
    return turns


def _cap(
    candidates: list[tuple[int, Entry]],
    messages: Sequence[Message],
    per_turn: int,
    dropped: list[Dropped],
) -> tuple[Entry, ...]:
    """``candidates`` (message index, entry) without repeats and within the turn cap, in
    order; everything removed is appended to ``dropped``."""
    turns = turn_of(messages)
    seen: dict[str, int] = {}
    per: dict[int, int] = {}
    kept: list[Entry] = []
    for at, entry in candidates:
        digest = content_hash(entry.content)
        if digest in seen:
            dropped.append(
                Dropped(
                    entry.content, DUPLICATE, f"repeats entry {seen[digest]} (sha256 {digest[:12]})"
                )
            )
            continue
        turn = turns[at]
        if per.get(turn, 0) >= per_turn:
            dropped.append(
                Dropped(
                    entry.content,
                    OVER_TURN_CAP,
                    f"turn opened by message {messages[turn].id if turn >= 0 else '(none)'} "
                    f"already has {per_turn} entries",
                )
            )
            continue
        seen[digest] = len(kept)
        per[turn] = per.get(turn, 0) + 1
        kept.append(entry)
    return tuple(kept)
