"""The offline supersession rule: does a new English statement replace an older one?

Pure and deterministic. It is deliberately conservative: a wrong "supersedes" hides a true
memory from recall, while a missed one only leaves two memories side by side, so every
doubt ends in "unrelated".

The rule reads the NEW text only for its change signal (the old text's wording never
makes a change), in four families of phrase rules:

- replacement, naming the old value B: "use A instead of B", "switched from B to A",
  "replace B with A", "B was renamed to A", "B is deprecated, use A";
- corrections: "not B but A", "A, not B" (B named), and "actually, ...", "correction: ...",
  "I meant ...", "that was wrong, ..." followed by a statement;
- a scoped statement: "from now on ...", "starting next week ...", "going forward ...";
  and a restated attribute: "X's new address is W", "X's address is now W", "X moved to W",
  "X now lives/works in W";
- a reversal: "no longer ...", "... not anymore", "stopped ...", "used to ...".

When none of these aligns, two value rules (``write.value_rules``) read the texts as values
of a kind (hosts, versions, times, weekdays, channels, regions, cards, diets, names): the
new text names the old value as left behind ("left B", "B is retired", "not B anymore";
rule ``names-old-value``), or an update cue ("quick update:", "new owner for X:", "is
now", "reassigned") gives the same subject's slot a different value of the same kind (rule
``update-cue``).

What makes two statements fill the same slot: both are reduced to content words (stopwords
dropped, light stemming, a few verb phrases folded into one slot word, such as "lives in",
"moved to" and "is based in" into a residence slot) and aligned. With B named, the old text
must contain B, and the context words of the new statement ("for the analytics service")
must be in the old one. Without B, the two must differ in exactly one place, after a shared
lead of at least two words that names the slot (subject and attribute): "I pay subscriptions
with card A" and "I pay subscriptions with card B" do; "I pay groceries with card A" does
not (two places differ). The two values must be of one kind (both names, numbers or codes,
or both common words), and after a bare "X is" only names, numbers and codes count as
values ("the plumber is coming on Tuesday" is not "the plumber was friendly"). The same
words in both is a duplicate.

Never a change: a question, a conditional or hypothetical ("if we switch to B"), a wish or
plan ("we want to move to Lisbon"), a negated change ("we are not switching to B"), or an
addition ("I also use B").
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from episodic.write.statement_words import (
    BE,
    GENERIC,
    PRONOUNS,
    SLOT_MARKERS,
    VAGUE,
    Word,
    normalised,
    stem,
    to_words,
    word_keys,
)
from episodic.write.text import split_sentences
from episodic.write.value_rules import names_old_value, update_cue

Kind = Literal["supersedes", "duplicate", "unrelated"]

# Each rule name (what ``decided_by`` carries after "offline:") and the family it belongs to.
RULE_FAMILY: dict[str, str] = {
    "instead-of": "replacement",
    "switched-from-to": "replacement",
    "changed-from-to": "replacement",
    "replaced-with": "replacement",
    "renamed": "replacement",
    "deprecated": "replacement",
    "not-but": "correction",
    "actually": "correction",
    "correction": "correction",
    "i-meant": "correction",
    "that-was-wrong": "correction",
    "from-now-on": "from-now-on",
    "starting": "from-now-on",
    "going-forward": "from-now-on",
    "attribute-now": "attribute",
    "attribute-new": "attribute",
    "moved": "attribute",
    "changed-to": "attribute",
    "no-longer": "no-longer",
    "not-anymore": "no-longer",
    "stopped": "no-longer",
    "used-to": "no-longer",
    "names-old-value": "names-old-value",
    "update-cue": "update-cue",
    "same-text": "duplicate",
    "same-statement": "duplicate",
    "no-change-signal": "unrelated",
    "different-slot": "unrelated",
}

# The longest value (in content words) the rule accepts as "the thing that changed".
MAX_VALUE_WORDS = 4
# What a named value or a change's context may span, in words.
_PHRASE_WORDS = 4


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: Kind
    rule: str
    reason: str


# -- guards --------------------------------------------------------------------------------
_QUESTION_START = re.compile(
    r"^\W*(?:do|does|did|is|are|was|were|should|could|would|can|will|shall|have|has|what|"
    r"why|how|when|where|who|which|whose)\b",
    re.IGNORECASE,
)
# A statement about what might, could or is hoped to be, not what is.
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|whether|suppose|supposing|imagine|maybe|perhaps|might|could|would|"
    r"should|consider|considering|thinking|planning\s+to|planned\s+to|want|wants|"
    r"(?:i|we|you|they|he|she)\s+(?:\w+\s+)?plans?\s+to|'d\s+(?:like|love|rather|prefer)|"
    r"wanted|hope|hoping|wish|propose|proposed|suggest|suggested|tempted|"
    r"going\s+to|about\s+to|(?:will|'ll)\s+(?:probably|maybe))\b",
    re.IGNORECASE,
)
# "may" in lower case only: "starting May 1" is a date, not a maybe.
_MAY = re.compile(r"\bmay\b")
_ADDITION = re.compile(
    r"\b(?:also|as\s+well|another|additionally|in\s+addition|besides)\b|\btoo\s*(?:[.!,;]|$)",
    re.IGNORECASE,
)
_OLD_CLAUSE_BREAK = re.compile(r";|\s—\s|\bbut\b|\bwhereas\b")
_CLAUSE_BREAK = re.compile(r"[,;]|\s—\s|\bbut\b|\bwhereas\b")
_NEGATION = re.compile(r"\b(?:not|never|no|didn't|don't|doesn't|won't|isn't|aren't)\b|n't\b")


def _reasons_to_skip(sentence: str) -> str | None:
    """Why a sentence of the new text cannot signal a change, or None."""
    if sentence.rstrip().endswith("?") or _QUESTION_START.match(sentence):
        return "a question"
    if _HYPOTHETICAL.search(sentence) or _MAY.search(sentence):
        return "a hypothetical, plan or wish"
    if _ADDITION.search(sentence):
        return "an addition, not a replacement"
    return None


# -- signals -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Signal:
    rule: str
    statement: str  # what the new text now says (for a reversal: what is no longer so)
    old_value: str = ""  # B, when the new text names what it replaces
    new_value: str = ""  # A, when named
    negated: bool = False  # the statement is what is no longer so


_P = r"[\w'.\-/:$£€#@]+"
_PHRASE = rf"(?:{_P}\s+){{0,{_PHRASE_WORDS - 1}}}?{_P}"
# A value ends at punctuation (not the dot of "Dr.") or at a word that starts a qualifier.
_NOT_ABBREVIATED = r"(?<!\bDr)(?<!\bMr)(?<!\bMs)(?<!\bMrs)(?<!\bSt)(?<!\bProf)"
_END = (
    _NOT_ABBREVIATED
    + r"(?=\s*(?:[,;.!)]|$)|\s+(?:for|in|on|at|because|since|as|when|after|by|so|and|but|from|"
    r"to|every|each)\b)"
)


def _named(rule: str, pattern: str) -> tuple[str, re.Pattern[str]]:
    return rule, re.compile(pattern, re.IGNORECASE)


# Patterns that name the old value B (and the new value A). Order matters: the first match
# in a sentence wins.
_REPLACEMENTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    _named(
        "switched-from-to",
        rf"\bswitch(?:ed|ing|es)?\s+(?:over\s+)?(?:[\w'-]+\s+){{0,3}}?from\s+(?P<b>{_PHRASE})\s+to\s+(?P<a>{_PHRASE}){_END}",
    ),
    _named(
        "renamed",
        rf"\brenamed\s+(?:[\w'-]+\s+){{0,3}}?from\s+(?P<b>{_PHRASE})\s+to\s+(?P<a>{_PHRASE}){_END}",
    ),
    _named(
        "changed-from-to",
        rf"\b(?:changed|change|went|moved|migrated|upgraded|downgraded|converted|updated|"
        rf"transitioned|shifted)\s+(?:[\w'-]+\s+){{0,3}}?from\s+(?P<b>{_PHRASE})\s+to\s+(?P<a>{_PHRASE}){_END}",
    ),
    _named(
        "replaced-with",
        rf"\breplac(?:e|ed|ing)\s+(?P<b>{_PHRASE})\s+(?:with|by)\s+(?P<a>{_PHRASE}){_END}",
    ),
    _named(
        "replaced-with",
        rf"(?P<b>{_PHRASE})\s+(?:was|is|has\s+been|got|have\s+been|were)\s+replaced\s+(?:by|with)\s+(?P<a>{_PHRASE}){_END}",
    ),
    _named(
        "renamed", rf"\brenamed\s+(?!from\b)(?P<b>{_PHRASE})\s+(?:to|as)\s+(?P<a>{_PHRASE}){_END}"
    ),
    _named(
        "renamed",
        rf"(?P<b>{_PHRASE})\s+(?:was|is|has\s+been|got|have\s+been|were)\s+(?:now\s+)?renamed\s+(?:to\s+|as\s+)?(?P<a>{_PHRASE}){_END}",
    ),
    _named(
        "deprecated",
        rf"(?P<b>{_PHRASE})\s+(?:is|was|has\s+been|got|are|were)\s+(?:now\s+)?deprecated"
        rf"(?:\s+\w+)?(?:\s+in\s+favou?r\s+of\s+|\W+(?:so\s+|and\s+)?(?:please\s+)?use\s+)(?P<a>{_PHRASE}){_END}",
    ),
    _named("not-but", rf"\bnot\s+(?P<b>{_PHRASE})\s*,?\s+but\s+(?P<a>{_PHRASE}){_END}"),
    _named(
        "not-but", rf"(?P<a>{_PHRASE})\s*,\s*not\s+(?P<b>{_PHRASE}){_NOT_ABBREVIATED}\s*(?:[.!;]|$)"
    ),
    _named(
        "instead-of", rf"(?P<a>{_PHRASE})\s+(?:instead\s+of|rather\s+than)\s+(?P<b>{_PHRASE}){_END}"
    ),
)

# Openers after which the rest of the sentence is the new state.
_OPENERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    _named(
        "from-now-on",
        r"\b(?:from\s+now\s+on|from\s+today\s+on(?:wards?)?|from\s+here\s+on(?:\s+out)?|henceforth|effective\s+(?:today|immediately|now))\b",
    ),
    _named(
        "starting",
        r"\b(?:starting|beginning|as\s+of)\s+(?:today|tomorrow|now|(?:on|in)\s+\w+|next\s+\w+|"
        r"this\s+\w+|"
        r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
        r"january|february|march|april|may|june|july|august|september|october|november|"
        r"december)(?:\s+\d{1,2}(?:st|nd|rd|th)?)?\b",
    ),
    _named("going-forward", r"\b(?:going|moving)\s+forward\b"),
    _named(
        "correction",
        r"^\W*(?:no|nope|wait)\s*[,:;—-]|"
        r"^\W*(?:sorry\W+)?(?:correction|to\s+correct\s+myself|let\s+me\s+correct\s+that)\b",
    ),
    _named(
        "that-was-wrong",
        r"\b(?:that|this)\s+(?:was|is)\s+(?:wrong|incorrect|a\s+mistake|not\s+right)\b",
    ),
    _named("i-meant", r"\b(?:i|we)\s+meant\b(?:\s+to\s+say)?(?:\s+that)?"),
    _named("actually", r"^\W*actually\b"),
)

_REVERSALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    _named("no-longer", r"\bno\s+longer\b"),
    _named(
        "not-anymore", r"\b(?:not|never|n't|don't|doesn't|didn't|isn't|aren't)\b.*\bany\s*more\b"
    ),
    _named("stopped", r"\b(?:stopped|quit|gave\s+up|has\s+given\s+up|have\s+given\s+up)\b"),
    _named("used-to", r"\bused\s+to\b"),
)
_REVERSAL_WORDS = re.compile(
    r"\b(?:no\s+longer|any\s*more|stopped|quit|gave\s+up|given\s+up|used\s+to|has|have|do\s+not|"
    r"does\s+not|did\s+not|not|don't|doesn't|didn't|isn't|aren't)\b",
    re.IGNORECASE,
)
# The attribute family: the new text restates a slot as changed.
# "now" as in "is now", not "for now", "just now", "until now", "by now" or "now that".
# Nor "now I'll ..." or "now let's ...": a plan or a turn of the talk, not a new state.
_ATTRIBUTE_NOW = re.compile(
    r"\b(?:(?P<not>for|just|until|by|from)\s+)?now\b(?!\s+that\b)"
    r"(?!,?\s+(?:let's|let\s+us|(?:i|we|you|they|he|she|it)(?:'ll|'d|\s+will|\s+would|"
    r"\s+might|\s+could|\s+should|\s+can|\s+(?:am|are|is)\s+going\s+to))\b)",
    re.IGNORECASE,
)
_ATTRIBUTE_NEW = re.compile(r"\bnew\s+\w+(?:\s+\w+)?\s+(?:is|are)\b", re.IGNORECASE)
_MOVED = re.compile(r"\b(?:moved|relocated|moving)\s+(?:back\s+)?to\b", re.IGNORECASE)
_CHANGED_TO = re.compile(
    r"\b(?:changed|updated|switched|changes|switches)\s+(?:it\s+)?to\b", re.IGNORECASE
)


def _negated_before(sentence: str, at: int) -> bool:
    return _NEGATION.search(sentence[:at]) is not None


def _clause_at(sentence: str, at: int) -> str:
    """The clause of ``sentence`` around character ``at`` (clauses end at , ; and "but")."""
    start = 0
    for piece in _CLAUSE_BREAK.split(sentence):
        end = sentence.find(piece, start) + len(piece)
        if at < end:
            return piece
        start = end
    return sentence


def _signals(sentence: str) -> list[_Signal]:
    """Every change signal in one sentence of the new text, strongest first."""
    found: list[_Signal] = []
    for rule, pattern in _REPLACEMENTS:
        for named in pattern.finditer(sentence):
            # "not B but A" is itself a negation; any other "not" before the change
            # ("we are not switching from B to A") takes it back.
            if rule == "not-but" or not _negated_before(sentence, named.start()):
                found.append(_Signal(rule, sentence, named.group("b"), named.group("a")))
    for rule, pattern in _REVERSALS:
        reversal = pattern.search(sentence)
        # "don't quit!" and "never stop" urge on; they tell of nothing that stopped.
        if reversal and rule == "stopped" and _negated_before(sentence, reversal.start()):
            reversal = None
        if reversal:
            # Only the clause that says what stopped: "I used to live in Boston, now I'm in
            # Denver" reverses living in Boston.
            clause = _clause_at(sentence, reversal.start())
            found.append(_Signal(rule, _REVERSAL_WORDS.sub(" ", clause), negated=True))
    for rule, pattern in _OPENERS:
        opener = pattern.search(sentence)
        if opener:
            rest = sentence[opener.end() :].lstrip(" ,:;-—")
            if _NEGATION.match(rest):
                found.append(_Signal(rule, _REVERSAL_WORDS.sub(" ", rest), negated=True))
            else:
                found.append(_Signal(rule, rest))
    for rule, pattern in (
        ("moved", _MOVED),
        ("attribute-new", _ATTRIBUTE_NEW),
        ("changed-to", _CHANGED_TO),
        ("attribute-now", _ATTRIBUTE_NOW),
    ):
        said = pattern.search(sentence)
        if (
            said
            and said.groupdict().get("not") is None
            and not _negated_before(sentence, said.start())
        ):
            found.append(_Signal(rule, sentence))
    return found


# -- comparing statements ------------------------------------------------------------------
def _clauses(text: str) -> list[str]:
    """The old text cut into clauses: sentences, then at ; and at "but" or "whereas"."""
    out: list[str] = []
    for sentence in split_sentences(text):
        out.extend(p for p in _OLD_CLAUSE_BREAK.split(sentence) if p.strip())
    return out


def _attribute(word: Word, lower_keys: frozenset[str]) -> bool:
    """A word that can name a slot: a common word, or a folded verb phrase."""
    if word.key in SLOT_MARKERS:
        return True
    if word.key in PRONOUNS or word.key == BE or word.value:
        return False
    return word.lower or word.key in lower_keys


def _one_change(new: Sequence[Word], old: Sequence[Word], lower: frozenset[str]) -> str:
    """ "same" when the two say the same; "changed" when they differ in exactly one value
    after a shared lead that names the slot; "" otherwise."""
    new_keys, old_keys = word_keys(new), word_keys(old)
    if not new_keys or not old_keys:
        return ""
    if new_keys == old_keys:
        return "same"
    opcodes = [
        op
        for op in difflib.SequenceMatcher(None, new_keys, old_keys, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if len(opcodes) != 1 or opcodes[0][0] != "replace":
        return ""
    _, i1, i2, j1, j2 = opcodes[0]
    if i2 - i1 > MAX_VALUE_WORDS or j2 - j1 > MAX_VALUE_WORDS:
        return ""
    changed = [*new_keys[i1:i2], *old_keys[j1:j2]]
    if any(k in SLOT_MARKERS or k == BE or k in PRONOUNS for k in changed):
        return ""  # a different verb or subject: a different slot, not a different value
    if (
        i2 < len(new_keys)
        and i2 - i1 > 1
        and j2 - j1 > 1
        and all(
            any(_attribute(w, frozenset()) and w.key not in SLOT_MARKERS for w in side)
            for side in (new[i1:i2], old[j1:j2])
        )
    ):
        # A common word changed on each side too, inside a shared frame ("at 10am for the
        # mobile team" and "at 9am for the web team"): a qualifier, not only a value.
        return ""
    new_value, old_value = new[i1:i2], old[j1:j2]
    if new_value[0].value != old_value[0].value:
        # A name or number on one side, a common word on the other ("go to Elm Park
        # Primary", "go to swimming"): two kinds of thing, not two values of one.
        return ""
    lead = new[:i1]
    if len(lead) < 2 or not any(_attribute(w, lower) for w in lead):
        return ""
    if (
        len(lead) == 2
        and lead[-1].key == BE
        and not (any(w.value for w in new_value) and any(w.value for w in old_value))
    ):
        # "The plumber is coming on Tuesday" and "the plumber was friendly": after a bare
        # "X is", only a name, a number or a code is clearly a value of the same slot.
        return ""
    return "changed"


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    return bool(needle) and set(needle) <= set(haystack)


def _lower_keys(*texts: Sequence[Word]) -> frozenset[str]:
    return frozenset(w.key for words in texts for w in words if w.lower)


_CHANGE_VERB_WORDS = """switch switched switching changed change went moved migrated upgraded
downgraded converted updated transitioned shifted replace replaced replacing renamed deprecated
favour favor rather"""
# The verbs of the replacement patterns: they say that something changed, not what.
_CHANGE_VERBS = frozenset(stem(w) for w in _CHANGE_VERB_WORDS.split())


def _used(keys: Sequence[str], value: Sequence[str]) -> bool:
    """Whether ``value`` follows a folded verb phrase in ``keys`` ("use B", "runs on B")."""
    return any(
        keys[i] in SLOT_MARKERS and keys[i + 1 : i + 1 + len(value)] == list(value)
        for i in range(len(keys) - 1)
    )


def _shown(value: str) -> str:
    return value.strip(" \t.,;:!")


def _leftover(keys: Sequence[str], value: Sequence[str]) -> list[str]:
    """What a clause says besides ``value``, who says it and a general verb."""
    return [
        k for k in keys if k not in value and k not in GENERIC and k not in PRONOUNS and k != BE
    ]


def _same_subject(
    context: Sequence[str], said: Sequence[str], keys: Sequence[str], b: Sequence[str]
) -> bool:
    """Whether an old clause ``keys`` that mentions B is about what the new text changes:
    the new text's ``context`` ("for the analytics service") is in it, or, with no context,
    the clause uses B ("we use Slack") or says nothing the new text ``said`` does not."""
    if context:
        return set(context) <= set(keys)
    return _used(keys, b) or set(_leftover(keys, b)) <= set(said)


def _check_named(signal: _Signal, old: str) -> Verdict | None:
    b = word_keys(to_words(signal.old_value))
    a = word_keys(to_words(signal.new_value))
    if not b or set(b) <= set(a):
        return None
    if not [k for k in a if k not in b and k not in GENERIC and k not in VAGUE]:
        return None  # "use whatever you like instead of B" names no new value
    # What the change is about: the sentence's words but the values, the change verb
    # itself and who made it ("we replaced ...").
    said = word_keys(to_words(signal.statement))
    context = [k for k in _leftover(said, [*a, *b]) if k not in _CHANGE_VERBS]
    # The new value, as written: "Teams" is not in "team chat".
    a_surface = [w.surface for w in to_words(signal.new_value) if w.key not in b]
    for clause in _clauses(old):
        clause_words = to_words(clause)
        keys = word_keys(clause_words)
        if not _contains(keys, b) or _contains([w.surface for w in clause_words], a_surface):
            continue
        if _NEGATION.search(clause):
            continue
        # A rename makes every mention of the old name stale; any other change must be
        # about the same thing.
        if signal.rule != "renamed" and not _same_subject(context, said, keys, b):
            continue
        return Verdict(
            "supersedes",
            signal.rule,
            f"the new text replaces {_shown(signal.old_value)!r} with "
            f"{_shown(signal.new_value)!r}, which the old text used",
        )
    return None


def _check_statement(signal: _Signal, old: str) -> Verdict | None:
    new = to_words(signal.statement)
    for clause in _clauses(old):
        old_words = to_words(clause)
        old_negated = _NEGATION.search(clause) is not None
        if signal.negated:
            needed = word_keys(new)
            # Something besides who and the verb must be named: "I no longer care about
            # that" does not say what about.
            if len([k for k in needed if k not in PRONOUNS]) < 2:
                continue
            if not set(needed) <= set(word_keys(old_words)):
                continue
            if not any(_attribute(w, _lower_keys(new, old_words)) for w in new):
                continue
            if old_negated:
                return Verdict("duplicate", "same-statement", "both say this is no longer so")
            return Verdict(
                "supersedes",
                signal.rule,
                "the new text says what the old text states is no longer so",
            )
        if old_negated:
            continue
        outcome = _one_change(new, old_words, _lower_keys(new, old_words))
        if outcome == "same":
            return Verdict("duplicate", "same-statement", "the same slot with the same value")
        if outcome == "changed":
            return Verdict(
                "supersedes", signal.rule, "the new text gives the same slot a different value"
            )
    return None


@dataclass(frozen=True, slots=True)
class _NewText:
    """What ``decide`` reads of the new text alone, the same for every old text it is
    held against."""

    normalised: str
    signals: tuple[_Signal, ...]  # of every sentence that can signal a change, in order
    statement: str  # those sentences, joined
    skipped: str  # why the last sentence that cannot signal a change cannot
    keys: tuple[str, ...]


# A new memory is held against each of its candidates (up to a dozen), and its signals
# are most of a decision's cost (regular expressions over every sentence, ~0.2 ms for 8
# words, ~3 ms for 80): read once per text. Under the 64-client load the sweeper's checks
# were 22% of the server's samples holding the GIL (py-spy), most of it reading the same
# new texts again.
NEW_TEXTS_CACHED = 1024


@lru_cache(maxsize=NEW_TEXTS_CACHED)
def _read_new(new: str) -> _NewText:
    skipped = ""
    said: list[str] = []
    signals: list[_Signal] = []
    for sentence in split_sentences(new):
        reason = _reasons_to_skip(sentence)
        if reason is not None:
            skipped = reason
            continue
        said.append(sentence)
        signals += _signals(sentence)
    return _NewText(
        normalised(new),
        tuple(signals),
        " ".join(said),
        skipped,
        tuple(word_keys(to_words(new))),
    )


def decide(new: str, old: str) -> Verdict:
    """Whether ``new`` supersedes, duplicates or is unrelated to ``old`` (``old`` written
    no later than ``new``)."""
    read = _read_new(new)
    if read.normalised == normalised(old):
        return Verdict("duplicate", "same-text", "the same text")
    for signal in read.signals:
        held_against = _check_named if signal.old_value else _check_statement
        verdict = held_against(signal, old)
        if verdict is not None:
            return verdict
    statement = read.statement
    for rule, check in (("names-old-value", names_old_value), ("update-cue", update_cue)):
        why = check(statement, old) if statement else None
        if why is not None:
            return Verdict("supersedes", rule, why)
    if read.keys and list(read.keys) == word_keys(to_words(old)):
        return Verdict("duplicate", "same-statement", "the same words in the same order")
    if read.skipped:
        return Verdict("unrelated", "no-change-signal", f"the new text is {read.skipped}")
    return Verdict(
        "unrelated", "different-slot", "no change signal in the new text fills the old text's slot"
    )
