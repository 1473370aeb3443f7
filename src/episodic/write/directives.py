"""What a rule sounds like: "always", "never", "make sure", "from now on" ...

Two readings, for two uses:

- ``DIRECTIVE``: a sentence that uses a word of obligation anywhere. The offline
  learnings pass reads a finished session's user sentences with it (one becomes a
  ``directive`` learning); a misreading there costs one learning of middling importance.
- ``states_standing_rule``: a sentence that *lays a rule down*: it opens with an
  imperative of always or never ("Always ...", "Never ...", "Don't ...", "Make sure ..."),
  makes something last ("from now on", "going forward"), or tells the listener to always
  or never do something ("I want you to always ..."); or it states a preference ("I
  prefer ...", "I'd rather ..."), also inside a request. Recall moves such a memory over
  others (``policy.rule_keep_margin``), so it takes only these forms: "you should
  totally go" and "I never liked it" in a chat between people lay down nothing.

Pure and fast: the patterns are compiled once, and a text is read only as far as its
first rule.
"""

from __future__ import annotations

import re
from functools import lru_cache

from episodic.scoring.stopwords import ENGLISH_STOPWORDS
from episodic.write.text import FENCED, QUESTION_END, has_content_word, split_sentences

# Seed 001's directive: a rule to follow. The words English uses to lay one down, not
# any data set's: a modal of obligation, an adverb of always or never, or a phrase that
# makes the rule last.
DIRECTIVE = re.compile(
    r"\b(?:always|never|must|mustn't|must not|should|shouldn't|should not|don't|do not|"
    r"make sure|be sure to|ensure|remember to|avoid|from now on|going forward|"
    r"in (?:the )?future|no more)\b",
    re.IGNORECASE,
)
# A speaker's label as a transcript writes it ("user: ...", "Dana: ..."): not the
# speaker's words, so it is read past.
LABEL = re.compile(r"^[^\s:]{1,40}:\s+")
# An imperative that opens a sentence (after a bullet or "please"), a phrase that makes a
# rule last wherever it stands, or the listener told to always or never do something.
STANDING = re.compile(
    r"^(?:[-*•]\s*)?(?:please[,\s]+)?"
    r"(?:always|never|don't|do not|make sure|be sure to|remember to|avoid|from now on|"
    r"going forward|in (?:the )?future|no more)\b"
    r"|\b(?:from now on|going forward)\b"
    r"|\byou (?:must|should|to) (?:always|never)\b",
    re.IGNORECASE,
)
# Speech drops its "I" as readily as a rule has none: "Never been there", "Always happy
# to help", "Don't know why" tell of the speaker and lay nothing down. An imperative's
# "always" or "never" is followed by a verb in its plain form; followed by a past form, a
# word of feeling, an "-ing" form ("Always rooting for you") or a small word other than
# "be", "do" or "have" ("Always a joy", "Always up for it"), it opens such a statement, as
# "don't" does before a verb of mind.
_OPENER = re.compile(r"^(?:always|never)\s+([\w']+)", re.IGNORECASE)
# What follows "always" / "never" in a statement: a past form or a word of feeling.
_STATEMENT_TEXT = """been had seen saw heard done did gone went came made found took said
thought felt knew known got gotten tried used liked loved wanted imagined expected happy
glad ready proud grateful thankful good great fun nice welcome"""
_STATEMENT_WORDS = frozenset(_STATEMENT_TEXT.split())
_DONT_OF_MIND = re.compile(
    r"^(?:don't|do not)\s+"
    r"(?:know|think|feel|care|mind|remember|get|believe|understand|worry|hesitate)\b",
    re.IGNORECASE,
)
_PLAIN_VERBS = frozenset({"be", "do", "have"})
# The verbs whose plain form ends in "-ing" ("Always bring a charger").
_ING_VERBS = frozenset(
    {"bring", "sing", "ring", "sting", "swing", "string", "spring", "cling", "fling", "wring"}
)


def _elided_i(words: str) -> bool:
    """Whether ``words`` (a sentence, its label read past) opens a statement with its
    "I" dropped rather than an imperative."""
    opener = _OPENER.match(words)
    if opener is None:
        return _DONT_OF_MIND.match(words) is not None
    after = opener.group(1).casefold()
    if after in _STATEMENT_WORDS or (after.endswith("ing") and after not in _ING_VERBS):
        return True
    return after in ENGLISH_STOPWORDS and after not in _PLAIN_VERBS


# A stated preference is a standing rule too, and people state one inside a request ("I
# prefer plain SQL, can you show me the query?"): it counts in a question as well.
PREFERS = re.compile(
    r"\bi(?: (?:really |strongly |much |always )?(?:prefer|would rather)|'d (?:much )?rather)\b",
    re.IGNORECASE,
)
# A rule can be short ("Never push to main."), but not shorter than this many words.
MIN_WORDS = 3


def is_standing_rule(sentence: str) -> bool:
    """Whether one sentence of at least ``MIN_WORDS`` words states a preference
    (``PREFERS``) or lays a rule down (``STANDING``, not a statement with its "I"
    dropped, not a question, with a content word); a speaker's label opening it is read
    past."""
    words = LABEL.sub("", sentence, count=1)
    if len(words.split()) < MIN_WORDS:
        return False
    if PREFERS.search(words) is not None:
        return True
    return (
        STANDING.search(words) is not None
        and not _elided_i(words)
        and QUESTION_END.search(words) is None  # a question lays down no rule
        and has_content_word(words)
    )


# Recall reads the same few memories' texts query after query: each reading once.
_READS = 4096


def _prose(text: str) -> list[str]:
    """The sentences of ``text`` outside fenced code."""
    if "```" in text:
        text = FENCED.sub("\n", text)
    return split_sentences(text)


@lru_cache(maxsize=_READS)
def states_standing_rule(text: str) -> bool:
    """Whether some sentence of ``text`` (outside fenced code) lays a rule down."""
    if DIRECTIVE.search(text) is None and PREFERS.search(text) is None:  # most texts
        return False
    return any(is_standing_rule(sentence) for sentence in _prose(text))


# The speaker in their own words. A rule that names them says how they want to be
# answered ("... when I ask about errors", "Always remind me ..."); advice between people
# ("Don't give up!", "Make sure to rest") is about the listener and names no speaker.
_SPEAKER = re.compile(r"\b(?:i|me|my|mine|myself)\b|\bi'(?:m|ve|d|ll)\b", re.IGNORECASE)


@lru_cache(maxsize=_READS)
def states_own_rule(text: str) -> bool:
    """Whether some sentence of ``text`` (outside fenced code) lays a rule down in the
    imperative ("Always ...", "Never ...", "From now on ...") and names its speaker. A
    preference ("I prefer ...") is not read here: stated inside a request about one task,
    it is less often a rule for every answer."""
    if DIRECTIVE.search(text) is None:  # most texts
        return False
    return any(
        PREFERS.search(sentence) is None
        and _SPEAKER.search(LABEL.sub("", sentence, count=1)) is not None
        and is_standing_rule(sentence)
        for sentence in _prose(text)
    )
