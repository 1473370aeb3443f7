"""Typed learnings from a finished session (seed 001's post-session pass).

A learning says what should change how future work is done, typed as ``declarative``
(a fact), ``procedural`` (how to do something), ``directive`` (a rule) or ``corrective``
(the user set the assistant right), in the ``task`` or ``team`` domain, with an importance
in [0, 1] and evidence quoted from the session.

With an LLM: one call; every learning is checked in code like an extracted entry: known
type and domain, evidence verbatim (whitespace-normalised) in a user or assistant message,
never in a tool or system message; importance clamped to [0, 1]. A learning that fails a
check is dropped (and logged); an ``LLMError`` falls back to the offline rules.

Offline: deterministic rules over the user's sentences, first match wins:

- ``corrective``: the user contradicts an earlier assistant message ("no, ...",
  "actually ...", "that's wrong", "instead", "not X but Y", "I meant ...");
- ``directive``: a rule ("always", "never", "must", "should", "don't", "make sure",
  "from now on" ...);
- ``procedural``: steps ("first ... then", "step", "to X, do Y", a numbered list, kept
  whole as one learning).

Declarative learnings need judgement; offline they are left to ``extract_entries``.
Importance comes from the type (``IMPORTANCE_BY_TYPE``); the domain is ``team`` when the
sentence talks about the team or its process, ``task`` otherwise.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from episodic.errors import InvalidInput, LLMError
from episodic.llm.base import LLM
from episodic.llm.prompts import (
    DEFAULT_PROMPTS,
    LEARNING_DOMAINS,
    LEARNING_MAX_CHARS,
    LEARNING_TYPES,
    LEARNINGS_SCHEMA,
    Prompts,
    data_block,
    fill,
)
from episodic.write.directives import DIRECTIVE, MIN_WORDS
from episodic.write.extract import (
    OFFLINE_EXTRACTOR,
    Evidence,
    content_hash,
    evidence_failure,
    normalise,
    quotable,
)
from episodic.write.messages import Message, transcript_json
from episodic.write.text import (
    FENCED,
    QUESTION_END,
    clip_messages,
    content_words,
    cut_words,
    split_sentences,
)

__all__ = [
    "DOMAINS",
    "IMPORTANCE_BY_TYPE",
    "LEARNINGS_LIMIT",
    "LEARNING_TYPES",
    "Learning",
    "extract_learnings",
]

log = logging.getLogger("episodic.write")

DOMAINS: tuple[str, ...] = LEARNING_DOMAINS
LEARNINGS_LIMIT = 10
# Our constants (seed 001 gives none): a correction is the strongest signal a session has
# (the human had to step in), a stated rule comes next, a recipe after it; a plain fact
# starts at the middle of the scale.
IMPORTANCE_BY_TYPE: dict[str, float] = {
    "corrective": 0.8,
    "directive": 0.7,
    "procedural": 0.6,
    "declarative": 0.5,
}
LEARNINGS_INPUT_MAX_CHARS = 24_000
LEARNINGS_MAX_TOKENS = 2048
# A rule can be short ("Never push to main."), but not shorter than this.
OFFLINE_MIN_WORDS = MIN_WORDS


@dataclass(frozen=True, slots=True)
class Learning:
    """What a session taught. ``evidence`` is quoted from the message ``message_id``;
    ``extractor`` is ``"llm:<model_id>"`` or ``"offline"``; ``phase`` is filled in by the
    caller, who knows the session (``write.episodes``)."""

    content: str
    type: str  # one of LEARNING_TYPES
    domain: str  # one of DOMAINS
    importance: float  # in [0, 1]
    evidence: str
    message_id: str | None
    extractor: str
    # The project phase (stage) the session was in where it was learned, when the
    # session's messages said (``payload.phase``); stage retirement (seed 001) needs it.
    phase: str | None = None


def extract_learnings(
    messages: Sequence[Message],
    llm: LLM | None,
    *,
    prompts: Prompts = DEFAULT_PROMPTS,
    limit: int = LEARNINGS_LIMIT,
) -> list[Learning]:
    """At most ``limit`` learnings from the session, most important first (ties keep the
    order they were found in). Never raises for LLM problems: they are logged and the
    offline rules applied."""
    if limit < 0:
        raise InvalidInput("limit", f"must not be negative, got {limit}")
    if limit == 0 or not any(m.spoken and m.text.strip() for m in messages):
        return []
    found: list[Learning] | None = None
    if llm is not None:
        found = _learn_with_llm(messages, llm, prompts)
    if found is None:
        found = list(_learn_offline(messages))
    return _best(found, limit)


def _best(found: list[Learning], limit: int) -> list[Learning]:
    seen: set[str] = set()
    unique: list[Learning] = []
    for learning in found:
        digest = content_hash(learning.content)
        if digest not in seen:
            seen.add(digest)
            unique.append(learning)
    # sorted() is stable: equal importance keeps the order of discovery.
    return sorted(unique, key=lambda learning: -learning.importance)[:limit]


# -- the LLM path --------------------------------------------------------------------------
def _learn_with_llm(
    messages: Sequence[Message], llm: LLM, prompts: Prompts
) -> list[Learning] | None:
    transcript = transcript_json(clip_messages(messages, LEARNINGS_INPUT_MAX_CHARS))
    user = fill(prompts.learnings_user, transcript=data_block("transcript", transcript))
    try:
        reply = llm.complete_json(
            prompts.learnings_system, user, LEARNINGS_SCHEMA, max_tokens=LEARNINGS_MAX_TOKENS
        )
    except LLMError as exc:
        log.warning("learning extraction failed, applying the offline rules instead: %s", exc)
        return None
    extractor = f"llm:{llm.model_id}"
    evidence = Evidence(messages)
    out: list[Learning] = []
    for item in reply["learnings"]:
        content = cut_words(normalise(item["content"]), LEARNING_MAX_CHARS)
        kind, domain, quote = item["type"], item["domain"], normalise(item["evidence"])
        problem = ""
        at: int | None = None
        if kind not in LEARNING_TYPES:
            problem = f"unknown type {kind!r}"
        elif domain not in DOMAINS:
            problem = f"unknown domain {domain!r}"
        elif not content:
            problem = "empty content"
        elif not quotable(quote):
            problem = f"evidence too short: {quote!r}"
        else:
            at, elsewhere = evidence.find(quote, ("user", "assistant"))
            if at is None:
                reason, detail = evidence_failure(elsewhere)
                problem = f"{reason} {detail}".strip()
        if problem or at is None:
            log.info("dropped a learning from %s (%s): %r", llm.model_id, problem, content[:80])
            continue
        out.append(
            Learning(
                content=content,
                type=kind,
                domain=domain,
                importance=_clamp(item["importance"], IMPORTANCE_BY_TYPE[kind]),
                evidence=cut_words(quote, LEARNING_MAX_CHARS),
                message_id=messages[at].id,
                extractor=extractor,
            )
        )
    return out


def _clamp(value: float, default: float) -> float:
    if not math.isfinite(value):  # JSON from a careless server can carry NaN
        return default
    return min(1.0, max(0.0, float(value)))


# -- the offline rules ---------------------------------------------------------------------
_I = re.IGNORECASE
_CORRECTIVE = re.compile(
    r"^(?:no|nope|nah|wrong|incorrect)\b\s*[,.!:;—–-]"
    r"|^actually\b"
    r"|\b(?:that's|that is|this is|it's|it is|you're|you are)\s+(?:not\s+)?"
    r"(?:wrong|incorrect|not right|not correct|not what i)"
    r"|\bnot what i (?:asked|wanted|meant|said)\b"
    r"|\bi (?:said|meant|asked for)\b"
    r"|\binstead\b"
    r"|\bnot\s+[^,.;!?]{1,60}?,?\s+but\b"
    r"|\brather than\b"
    r"|\byou (?:forgot|missed|should have|shouldn't have)\b",
    _I,
)
_PROCEDURAL = re.compile(
    r"\bfirst\b.{0,200}?\bthen\b"
    r"|\bsteps?\b"
    r"|^(?:in order )?to\s+\w+[^,]{0,80},\s*\w+"
    r"|\bafter that\b|\bfinally\b",
    _I,
)
_NUMBERED = re.compile(r"^[ \t]*(?:\d{1,2}[.)]|step \d{1,2}\b[.:)]?)[ \t]+\S.*$", _I | re.MULTILINE)
_TEAM = re.compile(
    r"\b(?:team|teams|teammates?|colleagues?|process|workflow|reviews?|reviewers?|"
    r"code review|pull requests?|PRs?|standups?|stand-ups?|meetings?|sprints?|retro|"
    r"handoffs?|hand-offs?|on-call|rota|approvals?|approve|sign-off|escalat\w*|"
    r"communicat\w*|coordinat\w*|owners?|ownership|roles?|responsib\w*)\b",
    _I,
)


def _domain(text: str) -> str:
    return "team" if _TEAM.search(text) else "task"


def _learning(text: str, kind: str, message: Message) -> Learning:
    content = cut_words(normalise(text), LEARNING_MAX_CHARS)
    return Learning(
        content=content,
        type=kind,
        domain=_domain(content),
        importance=IMPORTANCE_BY_TYPE[kind],
        evidence=content,
        message_id=message.id,
        extractor=OFFLINE_EXTRACTOR,
    )


def _learn_offline(messages: Sequence[Message]) -> Iterator[Learning]:
    assistant_spoke = False
    for message in messages:
        if message.role == "assistant" and message.text.strip():
            assistant_spoke = True
        if message.role == "user":
            found = sorted(_learn_from(message, assistant_spoke), key=lambda pair: pair[0])
            yield from (learning for _, learning in found)


def _learn_from(message: Message, assistant_spoke: bool) -> Iterator[tuple[int, Learning]]:
    """The learnings of one user message with their offsets in it."""
    text = FENCED.sub(lambda fence: "\n" * len(fence.group()), message.text)
    # A numbered list is one procedure: kept whole, in the words of the message.
    for start, end in _numbered_lists(text):
        yield start, _learning(text[start:end], "procedural", message)
        text = text[:start] + "\n" * (end - start) + text[end:]
    cursor = 0
    for sentence in split_sentences(text):
        at = text.find(sentence, cursor)
        cursor = at + len(sentence)
        if QUESTION_END.search(sentence) or len(sentence.split()) < OFFLINE_MIN_WORDS:
            continue
        if not content_words(sentence):
            continue
        if assistant_spoke and _CORRECTIVE.search(sentence):
            yield at, _learning(sentence, "corrective", message)
        elif DIRECTIVE.search(sentence):
            yield at, _learning(sentence, "directive", message)
        elif _PROCEDURAL.search(sentence):
            yield at, _learning(sentence, "procedural", message)


def _numbered_lists(text: str) -> list[tuple[int, int]]:
    """Spans of two or more consecutive numbered lines ("1. ...", "2) ...", "Step 3: ..."),
    nothing but line breaks between them."""
    spans: list[tuple[int, int]] = []
    start = end = -1
    count = 0
    for match in _NUMBERED.finditer(text):
        if count and text[end : match.start()].strip() == "":
            end, count = match.end(), count + 1
            continue
        if count >= 2:
            spans.append((start, end))
        start, end, count = match.start(), match.end(), 1
    if count >= 2:
        spans.append((start, end))
    return spans
