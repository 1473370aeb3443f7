"""A long memory read as passages: overlapping windows of its text, each short enough for
the embedder to read whole.

MiniLM reads at most 256 word pieces, about 1,000 characters of English (fewer of code);
a memory's own vector sees only its beginning. The rest of a long memory is cut into
windows of ``PASSAGE_CHARS`` that overlap by ``PASSAGE_OVERLAP`` (so a sentence cut at one
window's edge is whole in the next), their edges moved back to the nearest line break or
space when one is near. The first window is the memory's own vector; a memory scores by
its best passage. Pure functions over text and offsets: no I/O.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

# A window: about 200-250 word pieces of prose, within what MiniLM reads.
PASSAGE_CHARS = 1000
# Each window starts this far before the previous one ends.
PASSAGE_OVERLAP = 200
# An edge moves back to a line break or space at most this far.
PASSAGE_SNAP = 120


@dataclass(frozen=True, slots=True)
class Span:
    """A passage of a memory: ``content[start:stop]``, its ``n``-th (0 is the start)."""

    n: int
    start: int
    stop: int


def passage_spans(
    content: str, size: int = PASSAGE_CHARS, overlap: int = PASSAGE_OVERLAP
) -> list[Span]:
    """The passages of ``content``, in order; one (the whole text) when it fits in
    ``size``. Each later one starts ``overlap`` characters (moved to a word's start)
    before the previous one stops; together they cover every character."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"need 0 <= overlap < size, got size={size} overlap={overlap}")
    length = len(content)
    if length <= size:
        return [Span(0, 0, length)]
    spans: list[Span] = []
    start = 0
    while True:
        stop = min(start + size, length)
        if stop < length:
            stop = _snap_back(content, start, stop)
        spans.append(Span(len(spans), start, stop))
        if stop >= length:
            return spans
        nxt = _snap_forward(content, stop - overlap, stop)
        start = nxt if nxt > start else stop


def extra_spans(content: str) -> list[Span]:
    """The passages a memory's own vector does not read: all but the first."""
    return passage_spans(content)[1:]


def _snap_back(content: str, start: int, stop: int) -> int:
    """``stop`` moved back to just after a line break (else a space) within ``PASSAGE_SNAP``."""
    floor = max(start + 1, stop - PASSAGE_SNAP)
    for sep in ("\n", " "):
        at = content.rfind(sep, floor, stop)
        if at >= 0:
            return at + 1
    return stop


def _snap_forward(content: str, start: int, limit: int) -> int:
    """``start`` moved forward to the start of a word (after a space or line break)
    before ``limit``; unchanged when none is near."""
    if start <= 0 or content[start - 1].isspace():
        return max(start, 0)
    for i in range(start, min(limit, start + PASSAGE_SNAP)):
        if content[i].isspace():
            return i + 1
    return start


_WORD = re.compile(r"[a-z0-9_]+")


def words(text: str) -> frozenset[str]:
    """The distinct lower-case words of ``text`` (letters, digits, underscores)."""
    return frozenset(_WORD.findall(text.lower()))


def passage_words(content: str) -> list[tuple[Span, frozenset[str]]]:
    """Each passage of ``content`` with its words."""
    return [(s, words(content[s.start : s.stop])) for s in passage_spans(content)]


def span_for_words(
    content: str,
    wanted: frozenset[str],
    read: list[tuple[Span, frozenset[str]]] | None = None,
) -> Span:
    """The passage of ``content`` holding the most of ``wanted`` (the query's words): what
    a long memory found by its words is shown by. The first passage wins a tie, and stands
    when no word is found. ``read``: ``passage_words(content)``, when already made."""
    read = passage_words(content) if read is None else read
    best, best_count = read[0][0], -1
    for span, held in read:
        count = len(wanted & held)
        if count > best_count:
            best, best_count = span, count
    return best


class PassageWords:
    """Each long memory's passages with their words, made once and kept for the next
    queries (the most recent ``size``), keyed by the memory's id and its text's hash."""

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._kept: OrderedDict[tuple[str, int], list[tuple[Span, frozenset[str]]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, memory_id: str, content: str) -> list[tuple[Span, frozenset[str]]]:
        key = (memory_id, hash(content))
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        made = passage_words(content)
        with self._lock:
            self._kept[key] = made
            if len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return made
