"""Plain-text helpers shared by the write steps: words, sentences, cuts, prompt-sized input.

Everything here is pure and fast (regexes compiled once at import): the offline write path
runs these on every message of every conversation.

Sentences come back as verbatim substrings of the text they were split from, so a sentence
can be quoted as evidence and found again in its message.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from functools import lru_cache

from episodic.scoring.stopwords import ENGLISH_STOPWORDS
from episodic.write.messages import Message

# A sentence ending in a question mark (closing quotes and brackets after it allowed).
QUESTION_END = re.compile(r"\?[\"'”’)\]]*$")
# A fenced code block, or one left open to the end of the text.
FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)

# A word: letters/digits/underscore, with inner apostrophes, dots, hyphens and slashes kept
# ("don't", "v2.1", "config.yaml", "follow-up", "CI/CD").
TOKEN = re.compile(r"\w+(?:['’.\-/]\w+)*")

# Words that say nothing about what a conversation is about, on top of NLTK's stopwords:
# pleasantries, hedges and the verbs every request uses. They never start or join a
# keyphrase and do not count as content.
_FILLER = """
please pls thanks thank thx ty appreciate appreciated ok okay yes yeah yep yup nope hi hello
hey sure also just really like would could might may shall get got gets let lets let's i'm
i've i'd i'll we're we'll we've we'd you're it's that's there's here's what's can't cannot
won't one thing things something anything everything nothing know think want wants wanted
need needs needed gonna maybe well much many lot lots good great nice cool awesome perfect
fine right actually basically definitely probably still even yet though via per e.g i.e etc
us lol haha hmm oh ah wow kind sort bit
"""
FILLER_WORDS: frozenset[str] = frozenset(_FILLER.split())

STOP_WORDS: frozenset[str] = ENGLISH_STOPWORDS | FILLER_WORDS

_ALNUM = re.compile(r"[^\W_]")
_LETTER = re.compile(r"[^\W\d_]")
_WHITESPACE = re.compile(r"\s+")

# A sentence ends at a run of terminal punctuation (plus closing quotes or brackets)
# followed by whitespace or the end of the text, or at a line break.
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s|$)|\n")
# "e.g. this" and "Dr. Rao" do not end a sentence.
_ABBREVIATED = "e.g i.e etc vs mr mrs ms dr prof st approx cf inc ltd jr sr mt fig al"
_ABBREVIATIONS = frozenset(_ABBREVIATED.split())
_OPENERS = "([\"'“‘"


def stop_key(word: str) -> str:
    """The form a word is looked up in ``STOP_WORDS`` with."""
    return word.casefold().replace("’", "'")


def is_content_word(word: str) -> bool:
    """A word that carries meaning: not a stopword or filler, and not a lone letter."""
    return bool(_content_key(word))


@lru_cache(maxsize=65_536)
def _content_key(word: str) -> str:
    """``stop_key(word)`` when the word carries meaning, else "". Words repeat across a
    conversation, and the offline write path reads each message several times (title,
    summary, keyphrases, extraction): each distinct word is looked up once."""
    key = stop_key(word)
    if key in STOP_WORDS:
        return ""
    return key if len(key) > 1 or key.isdigit() else ""


def content_words(text: str) -> list[str]:
    """The content words of ``text``, casefolded, in order (repeats kept)."""
    return [key for w in TOKEN.findall(text) if (key := _content_key(w))]


def has_content_word(text: str) -> bool:
    """Whether ``text`` holds a content word (reads only as far as the first)."""
    return any(_content_key(m.group()) for m in TOKEN.finditer(text))


def word_count(text: str) -> int:
    """Whitespace-separated tokens that contain a letter or digit ("—" and "-" do not count)."""
    return sum(1 for token in text.split() if _ALNUM.search(token))


def has_letter(text: str) -> bool:
    return _LETTER.search(text) is not None


def collapse(text: str) -> str:
    """Whitespace runs as single spaces, ends stripped."""
    return _WHITESPACE.sub(" ", text).strip()


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, each a stripped, verbatim substring of it, in order.

    Breaks after ``.``, ``!``, ``?`` or ``…`` followed by whitespace, and at line breaks;
    not after common abbreviations, single initials, or a list number opening a line.
    """
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        mark = match.group()
        if mark.startswith(".") and mark.rstrip("\"'”’)]") == ".":
            word_start = max(
                start - 1,
                text.rfind(" ", start, match.start()),
                text.rfind("\t", start, match.start()),
            )
            word = text[word_start + 1 : match.start()].lstrip(_OPENERS).casefold()
            if (
                word in _ABBREVIATIONS
                or (len(word) == 1 and word.isalpha())
                # "1. Install it" as a list item: the number is not a sentence.
                or (word.isdigit() and not text[start : match.start()].strip(" \t")[: -len(word)])
            ):
                continue
        piece = text[start : match.end()].strip()
        if piece:
            out.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def cut_words(text: str, max_chars: int, *, ellipsis: str = "") -> str:
    """``text`` cut to at most ``max_chars`` characters at a word boundary, ``ellipsis``
    appended when anything was cut. A single word longer than the budget is cut inside
    (there is no boundary to cut at)."""
    if len(text) <= max_chars:
        return text
    limit = max_chars - len(ellipsis)
    if limit <= 0:
        return text[:max_chars]
    # Look one character past the limit: a space right there means the words fit exactly.
    window = text[: limit + 1]
    boundary = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
    head = text[:boundary] if boundary > 0 else text[:limit]
    return head.rstrip() + ellipsis


def cut_to_words(text: str, max_words: int) -> str:
    """The first ``max_words`` counted words of ``text`` (see ``word_count``), whitespace
    collapsed."""
    kept: list[str] = []
    counted = 0
    for token in text.split():
        if _ALNUM.search(token):
            if counted == max_words:
                break
            counted += 1
        kept.append(token)
    return " ".join(kept)


def clip_messages(
    messages: Sequence[Message], max_total_chars: int, *, non_spoken_chars: int = 400
) -> list[Message]:
    """``messages`` with texts cut so the whole transcript stays near ``max_total_chars``.

    Every message is kept (prompts number them, so positions must not shift). Tool and
    system messages, context at best, are cut to ``non_spoken_chars`` first; then, if the
    spoken messages are still too long together, the longest are cut to a common length
    (short messages are never cut to pay for long ones).
    """
    clipped = [
        m
        if m.spoken
        else dataclasses.replace(m, text=cut_words(m.text, non_spoken_chars, ellipsis="…"))
        for m in messages
    ]
    budget = max_total_chars - sum(len(m.text) for m in clipped if not m.spoken)
    lengths = sorted(len(m.text) for m in clipped if m.spoken)
    if sum(lengths) <= budget:
        return clipped
    # Water-filling: the largest cap such that sum(min(length, cap)) fits the budget.
    cap = 0
    remaining = max(budget, 0)
    for i, length in enumerate(lengths):
        share = remaining // (len(lengths) - i)
        if length > share:
            cap = share
            break
        remaining -= length
    cap = max(cap, _MIN_MESSAGE_CHARS)
    return [
        dataclasses.replace(m, text=cut_words(m.text, cap, ellipsis="…"))
        if m.spoken and len(m.text) > cap
        else m
        for m in clipped
    ]


# However long a transcript, each message keeps at least this much of its text.
_MIN_MESSAGE_CHARS = 80
