"""A statement that a later message of the same transcript corrects (seed 004: "earlier
diagnostic branches are skipped when the same transcript later corrects or supersedes
them").

"The outage was caused by the Redis cache eviction policy", then, later, "Actually it was
the expired DNS record, not Redis": the first is no entry. A later message corrects an
earlier statement when it both

- says it corrects something (``actually``, ``turned out``, ``in fact``, ``I was wrong``,
  ``scratch that``, ``correction`` ...), and
- rules out a content word of the statement: ``not Redis``, ``it wasn't Redis``, ``Redis
  was not``, ``rather than Redis``, ``instead of Redis``, ``ruled out Redis``.

Both are needed, so a later message that only mentions the same word, or only negates it
in passing ("the dashboard is not loading"), corrects nothing: a missed correction leaves
a stale entry that recall can still order, a wrong one loses a case.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from episodic.write.text import content_words

_CORRECTS = re.compile(
    r"\b(?:actually|in fact|in reality|turns? out|turned out|correction|to correct|"
    r"i was wrong|we were wrong|my mistake|my bad|scratch that|never ?mind|"
    r"on second thought|on closer look|false alarm|update:)",
    re.IGNORECASE,
)
_ARTICLE = r"(?:the |a |an |our |my |that |this )?"


def _rules_out(word: str) -> re.Pattern[str]:
    w = re.escape(word)
    return re.compile(
        rf"\b(?:not|never|wasn't|isn't|was not|is not|weren't|were not|rather than|"
        rf"instead of|ruled out|rule out|rules out|nothing to do with) {_ARTICLE}{w}\b"
        rf"|\b{w}(?:'s| is| was| were)? (?:wasn't|isn't|was not|is not|weren't|were not|"
        rf"had nothing|has nothing|is fine|was fine|was innocent|is innocent|"
        rf"was a red herring|is a red herring)\b",
        re.IGNORECASE,
    )


def corrected_by(statement: str, later: Sequence[str]) -> tuple[int, str] | None:
    """The first of ``later`` (messages after the statement's own, in order) that
    corrects ``statement``, with the word it ruled out; None when none does."""
    words = list(dict.fromkeys(content_words(statement)))
    for i, text in enumerate(later):
        if not _CORRECTS.search(text):
            continue
        for word in words:
            if _rules_out(word).search(text):
                return i, word
    return None
