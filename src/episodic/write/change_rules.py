"""The offline supersession rule: does a newer English statement say an older one changed?

Pure and deterministic, and written for precision: a wrong "supersedes" hides a true memory
from every later recall, while a missed one only leaves two memories that recall can still
order (newest first among memories about the same subject). So the rule fires only on plain
change language that any speaker uses, and every doubt ends in "unrelated".

A sentence of the new text signals a change in one of three ways:

- it names the old value B as replaced: "A instead of B", "A rather than B", "switched
  (changed, moved, migrated ...) from B to A", "replace B with A", "B was replaced by A",
  "renamed B to A", "not B but A", "A, not B". The old text must name B, outside a
  negation, and be about the same subject: besides A and B, the two share a content word
  and one says nothing the other does not;
- it says the old state is over: "no longer ...", "not ... anymore". What it says is over
  must hold a name or a number and be all in one sentence of the old text;
- it states a new state from a point on: "from now on", "going forward", "henceforth",
  "starting today", or a bare "instead" closing an instruction. Then either every content
  word of the sentence but its values is in one old sentence (the same subject), the
  sentence has a value A the old text lacks and the old sentence a value B the new text
  lacks (a one-word subject must be all the old sentence says besides its values); or,
  with "instead", the new text names an old value B in another sentence ("Falcon
  Express broke two vases. From now on ship with Heron Logistics instead.") and the old
  sentence with B is about the same subject.

A value is a name (capitalised words inside a sentence, or two or more opening it; a
capital letter inside one, as in "card B"), a number or a code (a word with a digit, "@",
"#", "/", ":" or an inner dot); nothing about what kind of value it is.

Never a change: a question, a hypothetical or plan ("if we switch to B", "should we move
to B"), a temporary stay ("for this week use B", "for now"), an addition ("also B"), being
or getting used to something, a change the sentence takes back ("we are not switching"),
or a reason or outcome in the old text under a new instruction ("the refund failed because
the card had expired", then "refund it to the new card instead": why the refund failed is
still true).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from episodic.write.questions import opens_as_question, stated_before_request
from episodic.write.text import STOP_WORDS, split_sentences

Kind = Literal["supersedes", "duplicate", "unrelated"]

# Each rule name (what ``decided_by`` carries after "offline:") and its family.
RULE_FAMILY: dict[str, str] = {
    "instead-of": "replacement",
    "switched-from-to": "replacement",
    "changed-from-to": "replacement",
    "replaced-with": "replacement",
    "renamed": "replacement",
    "not-but": "replacement",
    "no-longer": "no-longer",
    "not-anymore": "no-longer",
    "from-now-on": "from-now-on",
    "instead": "from-now-on",
    "same-text": "duplicate",
    "same-statement": "duplicate",
    "no-change-signal": "unrelated",
    "reason-or-outcome": "unrelated",
    "says-more": "unrelated",
    "different-subject": "unrelated",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: Kind
    rule: str
    reason: str
    change: str = ""  # the change rule a ``says-more`` verdict declined to apply


# -- what keeps a sentence of the new text from signalling a change -------------------------
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|whether|suppose|supposing|imagine|maybe|perhaps|might|could|would|"
    r"should|consider|considering|thinking\s+(?:about|of)|plan(?:ning|s)?\s+to|want(?:s|ed)?\s+to|"
    r"wish|hope|hoping|propose|suggest|in\s+case|'d\s+(?:like|love|rather|prefer))\b",
    re.IGNORECASE,
)
_TEMPORARY = re.compile(
    r"\bthis\s+(?:week|weekend|month|time|once|trip)\b|\bfor\s+now\b|\bfor\s+the\s+time\s+being\b|"
    r"\bfor\s+(?:today|tonight|tomorrow)\b|\btoday\s+only\b|\buntil\b|\btill\b|\btemporar(?:y|ily)\b|"
    r"\bfor\s+(?:a|the|one|two|three|a\s+few|the\s+next)\s+(?:\w+\s+)?(?:days?|weeks?|nights?|"
    r"trip|visit|holiday|vacation|conference)\b|"
    r"\bwhile\s+(?:\w+\s+(?:is|are|am)|\w+['’](?:s|re|m))\s+(?:away|out|off)\b|"
    r"\bon\s+(?:holiday|vacation|a\s+trip)\b",
    re.IGNORECASE,
)
_USED_TO = re.compile(r"\bused\s+to\b", re.IGNORECASE)
_ADDITION = re.compile(
    r"\b(?:also|as\s+well|additionally|in\s+addition|besides)\b|\btoo\s*(?:[.!,;]|$)",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|never|no|didn't|don't|doesn't|won't|isn't|aren't|wasn't|weren't)\b|n't\b",
    re.IGNORECASE,
)


ADDITION = "an addition, not a replacement"


def sentence_guard(sentence: str) -> str | None:
    """Why a sentence of the new text cannot signal a change, or None."""
    if sentence.rstrip().endswith("?") or opens_as_question(sentence):
        return "a question"
    if _HYPOTHETICAL.search(sentence):
        return "a hypothetical, plan or wish"
    if _TEMPORARY.search(sentence):
        return "a temporary stay, not a change"
    if _USED_TO.search(sentence):
        return "about being or getting used to something"
    if _ADDITION.search(sentence):
        return ADDITION
    return None


# A reason or an outcome: what happened and why stays true when the next step changes.
_REASON = re.compile(
    r"\b(?:because|since|due\s+to|caused\s+by|as\s+a\s+result|the\s+reason|failed|fails|"
    r"failing|failure|expired|broke|broken|crashed|declined|rejected|bounced|timed\s+out|"
    r"went\s+down|error(?:ed)?)\b",
    re.IGNORECASE,
)


def gives_reason(text: str) -> bool:
    """Whether ``text`` tells why something happened or how it turned out."""
    return _REASON.search(text) is not None


def reason_over_instruction(new: str, old: str) -> bool:
    """Whether ``old`` gives a reason or an outcome and ``new`` does not (an instruction or
    a new state): a new step never makes why the last one failed untrue."""
    return gives_reason(old) and not gives_reason(new)


# -- words and values -----------------------------------------------------------------------
# "Dana: ...", "helper: Noted: ...": who speaks and a lead label are not the statement.
_LABEL = re.compile(r"^\s*(?:[\w][\w .'-]{0,30}:\s+){1,2}")
# A word with a digit, "@", "#", "/", ":" or an inner dot: a number, a handle, an address,
# a host, a version or a file name.
_CODE = re.compile(r"[\d@#/:]|\w\.\w")
_WORD = re.compile(r"[#@]?\w+(?:['’.\-/@:]\w+)*")


def _unlabelled(sentence: str) -> str:
    return _LABEL.sub("", sentence, count=1)


def stem(word: str) -> str:
    """A light suffix stem, so "parcels" meets "parcel" and "shipping" meets "ship"."""
    w = word.casefold().replace("’", "'").removesuffix("'s")
    for suffix, keep in (("ies", 3), ("ing", 4), ("ed", 3), ("es", 4), ("s", 3)):
        if w.endswith(suffix) and len(w) - len(suffix) >= keep and not w.endswith(("ss", "us")):
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "ls":
        w = w[:-1]
    return w.removesuffix("e") if len(w) > 3 else w


@dataclass(frozen=True, slots=True)
class _Sentence:
    text: str  # the label dropped
    words: tuple[str, ...]  # content-word stems, in order, values included
    values: frozenset[str]  # names, numbers and codes, casefolded


@lru_cache(maxsize=4096)
def read_sentence(sentence: str) -> _Sentence:
    text = _unlabelled(sentence)
    tokens = [(m.group(), m.start()) for m in _WORD.finditer(text)]
    words: list[str] = []
    values: set[str] = set()
    run: list[str] = []
    run_opens = False

    def close_run() -> None:
        # A capitalised run opening the sentence is a name only with two words or more.
        if run and (not run_opens or len(run) >= 2):
            values.add(" ".join(run).casefold())
        run.clear()

    for n, (raw, _at) in enumerate(tokens):
        key = raw.casefold()
        if _CODE.search(raw):
            close_run()
            values.add(key)
            words.append(key)
            continue
        # "card A", "plan B": a capital letter inside a sentence names one thing.
        letter = len(raw) == 1 and n > 0
        if raw[0].isupper() and raw != "I" and (key not in STOP_WORDS or letter):
            if not run:
                run_opens = n == 0
            run.append(raw)
            words.append(stem(raw))
            continue
        close_run()
        if key in STOP_WORDS or len(key) < 2 or key in _MARKER_WORDS:
            continue
        words.append(stem(key))
    close_run()
    return _Sentence(text, tuple(words), frozenset(values))


def _value_stems(values: Iterable[str]) -> set[str]:
    return {stem(w) for v in values for w in v.split()}


def _frame(sentence: _Sentence) -> set[str]:
    """What a sentence is about: its content words but its values."""
    return set(sentence.words) - _value_stems(sentence.values) - _CHANGE_STEMS


def _has(text_words: Sequence[str], phrase: str) -> bool:
    """Whether the words of ``phrase`` appear in order, side by side, in ``text_words``."""
    needle = _tokens(phrase)
    hay = list(text_words)
    return bool(needle) and any(
        hay[i : i + len(needle)] == needle for i in range(len(hay) - len(needle) + 1)
    )


def _tokens(text: str) -> list[str]:
    return [m.group().casefold() for m in _WORD.finditer(text)]


# -- signals --------------------------------------------------------------------------------
_P = r"[\w'.\-/:$£€#@]+"
_PHRASE = rf"(?:{_P}\s+){{0,3}}?{_P}"
_END = (
    r"(?<!\bDr)(?<!\bMr)(?<!\bMs)(?<!\bSt)(?=\s*(?:[,;.!)]|$)|\s+(?:for|in|on|at|because|since|"
    r"as|when|after|by|so|and|but|from|to|every|each|now|instead)\b)"
)


def _named(rule: str, pattern: str) -> tuple[str, re.Pattern[str]]:
    return rule, re.compile(pattern, re.IGNORECASE)


_CHANGE_VERBS = (
    r"(?:switch(?:ed|ing|es)?|chang(?:e|ed|ing)|mov(?:e|ed|ing)|migrat(?:e|ed|ing)|went|"
    r"shift(?:ed)?|transition(?:ed)?)"
)
# Patterns that name the old value B and the new value A; the first match wins.
_REPLACEMENTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    _named(
        "switched-from-to",
        rf"\b{_CHANGE_VERBS}\s+(?:[\w'-]+\s+){{0,3}}?from\s+(?P<b>{_PHRASE})\s+(?:to|over\s+to)\s+(?P<a>{_PHRASE}){_END}",
    ),
    _named(
        "renamed",
        rf"\brenamed\s+(?:[\w'-]+\s+){{0,3}}?from\s+(?P<b>{_PHRASE})\s+to\s+(?P<a>{_PHRASE}){_END}",
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
        rf"(?P<b>{_PHRASE})\s+(?:was|is|has\s+been|got|were)\s+renamed\s+(?:to\s+|as\s+)?(?P<a>{_PHRASE}){_END}",
    ),
    _named("not-but", rf"\bnot\s+(?P<b>{_PHRASE})\s*,?\s+but\s+(?P<a>{_PHRASE}){_END}"),
    _named("not-but", rf"(?P<a>{_PHRASE})\s*,\s*not\s+(?P<b>{_PHRASE})\s*(?:[.!;]|$)"),
    _named(
        "instead-of", rf"(?P<a>{_PHRASE})\s+(?:instead\s+of|rather\s+than)\s+(?P<b>{_PHRASE}){_END}"
    ),
)
_REVERSALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    _named("no-longer", r"\bno\s+longer\b"),
    _named("not-anymore", r"\b(?:not|n't|never)\b.*\bany\s*more\b"),
)
_FORWARD = re.compile(
    r"\b(?:from\s+now\s+on|from\s+today\s+on(?:wards?)?|from\s+here\s+on(?:\s+out)?|"
    r"henceforth|going\s+forward|moving\s+forward|effective\s+(?:today|immediately|now)|"
    r"starting\s+(?:today|tomorrow|now|next\s+\w+))\b",
    re.IGNORECASE,
)
# A bare "instead" (not "instead of"): the instruction replaces what was said before.
_INSTEAD = re.compile(r"\binstead\b(?!\s+of\b)", re.IGNORECASE)
_MARKERS = "now henceforth forward onwards instead longer anymore new today"
_MARKER_WORDS = frozenset(_MARKERS.split())
_CHANGE_WORDS = """switch switched change changed move moved migrate migrated replace replaced
renamed rename went shift shifted transition transitioned rather going moving starting effective"""
_CHANGE_STEMS = frozenset(stem(w) for w in _CHANGE_WORDS.split())


@dataclass(frozen=True, slots=True)
class _Signal:
    rule: str
    sentence: str
    old_value: str = ""  # B, when named
    new_value: str = ""  # A, when named
    over: str = ""  # for a reversal: the clause that says what is over


def _signals(sentence: str) -> list[_Signal]:
    found: list[_Signal] = []
    for rule, pattern in _REPLACEMENTS:
        for m in pattern.finditer(sentence):
            taken_back = rule != "not-but" and _NEGATION.search(sentence[: m.start()])
            if not taken_back:
                found.append(_Signal(rule, sentence, m.group("b"), m.group("a")))
    for rule, pattern in _REVERSALS:
        if pattern.search(sentence):
            found.append(_Signal(rule, sentence, over=sentence))
    forward = _FORWARD.search(sentence)
    if forward and not _NEGATION.search(sentence[: forward.start()]):
        found.append(_Signal("from-now-on", sentence))
    elif _INSTEAD.search(sentence) and not _NEGATION.search(sentence):
        found.append(_Signal("instead", sentence))
    return found


# -- holding a signal against an old text ---------------------------------------------------
def _old_sentences(old: str) -> list[_Sentence]:
    return [read_sentence(s) for s in split_sentences(old)]


def _check_named(signal: _Signal, old: str, new_text: str) -> Verdict | None:
    b = _tokens(signal.old_value)
    a = _tokens(signal.new_value)
    b_keys = {stem(w) for w in b if w not in STOP_WORDS}
    a_keys = {stem(w) for w in a if w not in STOP_WORDS}
    if not b_keys or b_keys <= a_keys or not a_keys - b_keys:
        return None
    said = read_sentence(signal.sentence)
    context = set(said.words) - a_keys - b_keys - _CHANGE_STEMS
    for sentence in split_sentences(old):
        clause_tokens = _tokens(sentence)
        if not _has(clause_tokens, signal.old_value) or _has(clause_tokens, signal.new_value):
            continue
        if _NEGATION.search(sentence):
            continue
        if reason_over_instruction(signal.sentence, sentence):
            return _reason_verdict()
        if signal.rule != "renamed" and not _same_subject(
            context, set(read_sentence(sentence).words) - b_keys, a_keys
        ):
            continue
        # The old sentence's values the change names as replaced ("card ending 4242").
        replaced = {v for v in read_sentence(sentence).values if _value_stems({v}) & b_keys}
        if _names_more(sentence, replaced, new_text) or _says_more(old, sentence, new_text):
            return _says_more_verdict(signal.rule)
        return Verdict(
            "supersedes",
            signal.rule,
            f"the new text replaces {_shown(signal.old_value)!r} with "
            f"{_shown(signal.new_value)!r}, which the old text used",
        )
    return None


def _check_over(signal: _Signal, old: str, new_text: str) -> Verdict | None:
    said = read_sentence(signal.over)
    if not said.values:
        return None  # "I no longer feel scared": nothing named that a later fact replaces
    needed = set(said.words) - _CHANGE_STEMS
    for sentence in _old_sentences(old):
        if _NEGATION.search(sentence.text) or not needed <= set(sentence.words):
            continue
        if not said.values <= sentence.values:
            continue
        if _names_more(sentence.text, said.values, signal.over, new_text) or _says_more(
            old, sentence.text, signal.over
        ):
            return _says_more_verdict(signal.rule)
        return Verdict(
            "supersedes", signal.rule, "the new text says what the old text states is no longer so"
        )
    return None


def _check_forward(signal: _Signal, old: str, new_text: str) -> Verdict | None:
    said = read_sentence(signal.sentence)
    frame = _frame(said)
    new_all = {v for s in split_sentences(new_text) for v in read_sentence(s).values}
    elsewhere = new_all - said.values
    for sentence in split_sentences(old):
        older = read_sentence(sentence)
        if _NEGATION.search(older.text):
            continue
        fresh = said.values - older.values
        stale = older.values - said.values
        verdict: Verdict | None = None
        same_frame = (len(frame) >= 2 and frame <= set(older.words)) or (
            bool(frame) and frame == _frame(older)
        )
        if same_frame and fresh and stale:
            verdict = Verdict(
                "supersedes",
                signal.rule,
                f"from a point on the new text gives {_first(fresh)!r} where the old text "
                f"had {_first(stale)!r}",
            )
        elif signal.rule == "instead" or _INSTEAD.search(signal.sentence):
            named = (older.values & elsewhere) - said.values
            if named and fresh and _same_subject(frame, _frame(older)):
                verdict = Verdict(
                    "supersedes",
                    "instead",
                    f"the new text names {_first(named)!r} and says to use {_first(fresh)!r} "
                    "instead",
                )
        if verdict is None:
            continue
        if reason_over_instruction(signal.sentence, sentence):
            return _reason_verdict()
        if _says_more(old, sentence, new_text):
            return _says_more_verdict(verdict.rule)
        return verdict
    return None


def _same_subject(change: set[str], old: set[str], new_value: set[str] | None = None) -> bool:
    """Whether a change's words (its values and change verbs aside) and an old sentence's
    are about one subject: they share a word, and one says nothing the other does not
    ("ship my parcels with Heron" and "Falcon Express for all your parcels" do; "Postgres
    for the analytics service" and "the billing service runs on MySQL" do not). The words
    of the new value, when one is named, count on the new side: a value read as a phrase
    can take in a subject word the old sentence also has ("we now land in Tokyo on April
    5 instead of April 3" reads "Tokyo on April 5" as the new value, and "We land in Tokyo
    on April 3" says nothing else; "the standup is at 10:15, not 9:30" takes all its
    words into the new value, and "The standup is at 9:30" says nothing else either)."""
    said = change | new_value if new_value else change
    return (bool(change & old) and change <= old) or (bool(old) and old <= said)


# A sentence says something of its own when it names a value or has this many content
# words: "Hi!", "Thanks a lot." and "Sure." do not, "They handle fragile items well" does.
SAYS_SOMETHING_WORDS = 3


def _says_more(old: str, changed: str, new_text: str) -> bool:
    """Whether ``old`` says something besides its sentence ``changed`` that ``new_text``
    does not say again: then the change makes one sentence of it out of date, not the
    memory, and replacing it would hide the rest ("I'm planning a two-week trip with my
    partner Tomas. We land on April 3." is still half true after "we now land on April 5
    instead of April 3")."""
    said = {w for s in split_sentences(new_text) for w in read_sentence(s).words}
    changed_text = read_sentence(changed).text
    for sentence in split_sentences(old):
        other = read_sentence(sentence)
        if other.text == changed_text:
            continue
        words = set(other.words) - _CHANGE_STEMS
        if (other.values or len(words) >= SAYS_SOMETHING_WORDS) and not words <= said:
            return True
    return False


def _names_more(changed: str, replaced: Iterable[str], *new_texts: str) -> bool:
    """Whether the old sentence ``changed`` names something besides the values the change
    replaces (``replaced``) that the new text (``new_texts``: the change's clause and the
    whole text) does not say again: "The ryokan is the Fuji-ya Inn and costs 240 euros"
    after "the ryokan is 210 euros, not 240" still names the inn, which stays true. A name
    the new text says again in part or as a plain word ("Mark now leads ...": a
    sentence's first word is not read as a name) does not count, nor does an earlier
    value ``changed`` itself names as replaced (its history)."""
    new = [read_sentence(s) for text in new_texts for s in split_sentences(text)]
    named = {v for s in new for v in s.values}
    said = {w for s in new for w in s.words} | _named_before(changed)
    extra = read_sentence(changed).values - named - set(replaced)
    return any(not _value_stems({v}) & said for v in extra)


@lru_cache(maxsize=4096)
def _named_before(sentence: str) -> frozenset[str]:
    """The stems of what ``sentence`` itself names as replaced ("changed from Substack to
    Mailchimp": "substack"); read once per old sentence, as its other readings are."""
    return frozenset(
        _value_stems(
            frozenset(m.group("b") for _, p in _REPLACEMENTS for m in p.finditer(sentence))
        )
    )


def _says_more_verdict(change: str) -> Verdict:
    said = "the change replaces one sentence of the old text, which says more that stays true"
    return Verdict("unrelated", "says-more", said, change)


def _reason_verdict() -> Verdict:
    return Verdict(
        "unrelated",
        "reason-or-outcome",
        "the old text tells why something happened or how it turned out; a new instruction "
        "does not make that untrue",
    )


def _first(values: frozenset[str] | set[str]) -> str:
    return sorted(values)[0]


def _shown(value: str) -> str:
    return value.strip(" \t.,;:!")


def _said(text: str) -> frozenset[str]:
    return frozenset(
        w for s in split_sentences(text) for w in read_sentence(s).words if w not in _CHANGE_STEMS
    )


def normalised(text: str) -> str:
    return " ".join(_tokens(text.replace("’", "'")))


@dataclass(frozen=True, slots=True)
class _NewText:
    signals: tuple[_Signal, ...]
    skipped: str  # why the last sentence that cannot signal a change cannot


# A new memory is held against each of its candidates: read its signals once.
NEW_TEXTS_CACHED = 1024


@lru_cache(maxsize=NEW_TEXTS_CACHED)
def _read_new(new: str) -> _NewText:
    return _read_sentences(split_sentences(new))


def _read_sentences(sentences: Sequence[str]) -> _NewText:
    skipped = ""
    signals: list[_Signal] = []
    for sentence in sentences:
        reason = sentence_guard(sentence)
        if reason == ADDITION:
            # "Also, the ryokan is 210 euros, not 240": an opening "also" adds a remark,
            # and a sentence that names the old value as replaced still replaces it.
            named = [s for s in _signals(sentence) if s.old_value]
            if named:
                signals += named
                continue
        if reason is not None:
            skipped = reason
            continue
        signals += _signals(sentence)
    return _NewText(tuple(signals), skipped)


ChangeKind = Literal["change", "guarded", "plain"]


@lru_cache(maxsize=NEW_TEXTS_CACHED)
def _read_stated(text: str) -> _NewText:
    """``_read_new`` of ``text`` with each sentence's trailing request left out."""
    return _read_sentences([stated_before_request(s) for s in split_sentences(text)])


# Every signal above holds one of these words ("switched from", "renamed", "replace",
# "not ... but", ", not", "instead", "rather than", "no longer", "any more", "from now on",
# "henceforth", "going / moving forward", "effective", "starting"): a text without any
# signals no change, found without reading its sentences (a recall asks of each hit).
_MAY_SIGNAL = re.compile(
    r"\b(?:from|renamed|replac\w*|not|instead|rather\s+than|no\s+longer|any\s*more|"
    r"henceforth|going\s+forward|moving\s+forward|effective|starting)\b",
    re.IGNORECASE,
)


def may_signal_change(text: str) -> bool:
    """False when no sentence of ``text`` can signal a change (``change_kind`` is then not
    ``change``); True says only that one might."""
    return _MAY_SIGNAL.search(text) is not None


def change_kind(text: str) -> ChangeKind:
    """What ``text`` says of change on its own, with no older text to hold it against:
    ``change`` (a sentence signals one: "from now on", "instead of B", "no longer", ...),
    ``guarded`` (none does, and one is a question, hypothetical, temporary stay, habit or
    addition: it does not state a new state) or ``plain``. Recall's soft signal reads it
    to order memories about the same subject; a request a sentence ends with ("..., can
    you help me plan it?") does not make what the sentence states before it a question
    (the supersession rule itself reads every question as one)."""
    read = _read_stated(text)
    if read.signals:
        return "change"
    return "guarded" if read.skipped else "plain"


def decide(new: str, old: str) -> Verdict:
    """Whether ``new`` supersedes, duplicates or is unrelated to ``old`` (``old`` written
    no later than ``new``)."""
    if normalised(new) == normalised(old):
        return Verdict("duplicate", "same-text", "the same text")
    read = _read_new(new)
    for signal in read.signals:
        if signal.old_value:
            verdict = _check_named(signal, old, new)
        elif signal.over:
            verdict = _check_over(signal, old, new)
        else:
            verdict = _check_forward(signal, old, new)
        if verdict is not None:
            return verdict
    if _said(new) == _said(old):
        return Verdict("duplicate", "same-statement", "the same words, a change marker aside")
    if read.skipped and not read.signals:
        return Verdict("unrelated", "no-change-signal", f"the new text is {read.skipped}")
    if not read.signals:
        return Verdict("unrelated", "no-change-signal", "the new text states no change")
    return Verdict(
        "unrelated", "different-subject", "the change the new text states is not the old text's"
    )
