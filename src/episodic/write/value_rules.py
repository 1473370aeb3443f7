"""Value-level supersession rules: the old text's value, and whether the new text replaces it.

Used by ``write.change_rules`` after its phrase rules found nothing. Both rules read the
values of a text: spans that name one thing, each of a kind (a host, a version, a time of
day, a weekday, a channel, a region code, a card, a diet, an amount, or a name such as a
person, a company, a city or a product). Two rules:

- ``names-old-value``: the new text names a value B of the old text as being replaced
  ("from B", "instead of B", "no longer B", "not B anymore", "left B", "replaced B",
  "B is retired / expired / outdated / gone", "A, not B", "never B"), offers another value
  A of B's kind, and shares the old text's subject;
- ``update-cue``: the new text does not name B, but an update cue ("from now on",
  "quick update:", "new <slot> for X:", "is now", "reassigned", "moved ... to", "as of
  <date>") restates a slot of the same subject with a different value of the same kind.
  The two texts must share their subject (every name or identifier of the old text but
  its value is in the new one) and must not name two different slots ("owner" and
  "endpoint"); a name value (the loosest kind) needs the slot named the same in both.

Pure and deterministic; every doubt is "no decision" (``None``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from episodic.write.statement_words import stem
from episodic.write.text import STOP_WORDS, split_sentences

__all__ = ["Value", "names_old_value", "update_cue", "values"]


@dataclass(frozen=True, slots=True)
class Value:
    kind: str
    text: str  # casefolded, spaces normalised
    start: int
    end: int


_DAYS = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
_MONTHS = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b"
)
# "May" alone is too often "may"; "in March" is a date.
_MONTH_ALONE = (
    r"(?:january|february|march|april|june|july|august|september|october|november|december)\b"
)
_DIETS = r"""vegan|vegetarian|pescatarian|keto|paleo|halal|kosher|gluten-free|dairy-free|
low-fodmap|low-carb|lactose-free|nut-free|carnivore|flexitarian|raw-food"""
# The shapes of values, most specific first; a span taken by one is not read again.
_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("card", r"\b[A-Za-z]+\s+(?:card\s+)?ending\s+(?:in\s+)?\d{2,6}\b"),
        ("host", r"\b[\w-]+@[\w-]+(?:\.[\w-]+)+|\b[a-z][\w-]*(?:\.[\w-]+)*\.[a-z]{2,}\b(?!\.\w)"),
        ("version", r"\bv\d+(?:\.\d+)*\b|\b\d+\.\d+\.\d+\b"),
        ("time", r"\b\d{1,2}(?::\d{2})(?:\s*[ap]\.?m\b\.?)?|\b\d{1,2}\s*[ap]\.?m\b\.?"),
        ("channel", r"(?<!\w)#[\w-]+"),
        ("region", r"\b[a-z]{2,}(?:-[a-z]+)+-\d+\b"),
        (
            "date",
            rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS}|\b{_MONTHS}\s+\d{{1,2}}\b|\b{_MONTH_ALONE}",
        ),
        ("weekday", rf"\b{_DAYS}\b"),
        ("diet", rf"\b(?:{_DIETS.replace(chr(10), '')})\b"),
        ("amount", r"[$£€]\s?\d[\d,.]*\b|\b\d[\d,.]*\s?(?:dollars|euros|pounds|usd|eur|gbp)\b"),
    )
)
# A name: capitalised words in a row, with a trailing number or size ("Flex 20", "Data
# Lite 2GB"). "I" and "I'm" are not names.
_NAME = re.compile(r"\b[A-Z][\w'-]*(?:\s+(?:[A-Z][\w'-]*|\d+[A-Za-z]*)\b)*")
# A single capitalised word opening a sentence is a name when a verb follows ("Kenji
# moved", "Sanne eats") or it owns something ("Dana's"); "Water the ferns" is no name.
_NAME_LEADS = re.compile(
    r"(?:\s+(?:now|just|also|still|finally|recently|never))?\s+(?:[a-z]+(?:ed|es|s)|is|was|has|had|left|went|quit|took|keeps)\b"
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)\W*$")


def _common(word: str, text: str) -> bool:
    """Whether a capitalised word at the start of a sentence is a common word: a stopword,
    a slot word, or a word the text also writes in lower case."""
    key = word.casefold().removesuffix("'s")
    return (
        key in STOP_WORDS
        or key in _OPENING_WORDS
        or stem(key) in _SLOT_OF
        or re.search(rf"\b{re.escape(key)}\b", text) is not None
    )


# Words a sentence opens with that are not names.
_OPENING = """always never please note questions point charge set order use make when after before
    cutover heads quick update scratch correction instead turns going starting from
    ownership new production our their the send add call ask book remind email text tell
    pay keep put buy bring take give ship route forward water feed check"""
_OPENING_WORDS = frozenset(_OPENING.split())


# One new text is compared with many candidates, sentence by sentence: the same texts are
# read many times in a row.
@functools.lru_cache(maxsize=4096)
def values(text: str) -> tuple[Value, ...]:
    """The values of ``text``, in order."""
    taken: list[Value] = []
    covered = [False] * len(text)
    for kind, pattern in _SHAPES:
        for m in pattern.finditer(text):
            if any(covered[m.start() : m.end()]):
                continue
            taken.append(Value(kind, _norm(m.group()), m.start(), m.end()))
            covered[m.start() : m.end()] = [True] * (m.end() - m.start())
    for m in _NAME.finditer(text):
        words = m.group().split()
        start = m.start()
        if _SENTENCE_START.search(text[: m.start()]) and (
            _common(words[0], text)
            or (
                len(words) == 1
                and not words[0].endswith("'s")
                and not _NAME_LEADS.match(text, m.end())
            )
        ):
            # "Standup for ...", "Charge Viktor's ...": the opening word is no name.
            if len(words) == 1:
                continue
            start = m.start() + len(words[0]) + 1
            words = words[1:]
        while words and words[0].casefold() in STOP_WORDS:
            start += len(words[0]) + 1
            words = words[1:]
        end = start + len(" ".join(words))
        if not words or any(covered[start:end]) or words == ["I"]:
            continue
        taken.append(Value("name", _norm(" ".join(words)), start, end))
    return tuple(sorted(taken, key=lambda v: v.start))


def _short(value: Value) -> str:
    """A value as a reason shows it: a title-cased run of words can be long."""
    return value.text if len(value.text) <= 40 else value.text[:39] + "…"


def _norm(span: str) -> str:
    return " ".join(span.casefold().removesuffix("'s").split())


# -- slots --------------------------------------------------------------------------------
# Words that name a slot; two texts that name slots name the same one only if one is shared.
_SLOT_WORDS: dict[str, str] = {
    "owner": "owner owned owns ownership belongs maintainer maintained maintains handed",
    "endpoint": "endpoint host hostname url address answers listens point clients",
    "meeting": "standup stand-up meeting meets sync",
    "deploy": "deploy deploys deploying",
    "plan": "plan subscription tariff",
    "card": "card pay pays charge subscriptions",
    "channel": "channel page watches on-call",
    "region": "region hosted servers datacenter zone",
    "version": "version release released upgraded bumped rolled",
    "employer": "employer employed job company works",
    "residence": "home lives live flat city apartment rents based",
    "diet": "diet eats eat meals food",
    "editor": "editor editing codes ide",
    "ci": "ci pipeline pipelines builds",
}
_SLOT_OF: dict[str, str] = {
    stem(word): slot for slot, words in _SLOT_WORDS.items() for word in words.split()
}
_WORD = re.compile(r"[A-Za-z][\w-]*")


def _inside(at: int, vals: Sequence[Value]) -> bool:
    return any(v.start <= at < v.end for v in vals)


def _slots(text: str, skip: Sequence[Value]) -> set[str]:
    """The slots ``text`` names, words inside the values ``skip`` aside."""
    out: set[str] = set()
    for m in _WORD.finditer(text):
        if _inside(m.start(), skip):
            continue
        slot = _SLOT_OF.get(stem(m.group().casefold()))
        if slot:
            out.add(slot)
    return out


# -- subject ------------------------------------------------------------------------------
# Heads whose modifiers name who: "the data team", "the notifications service".
_GROUP = re.compile(
    r"\b((?:[a-z][\w-]*\s+){1,2})(?:team|squad|crew|guild|group|department|service|job|"
    r"project|app)\b"
)
# "the reports-exporter", not "check-ups".
_IDENTIFIER = re.compile(r"(?<=\b(?:the|our)\s)[a-z]+(?:-[a-z]+)+\b", re.IGNORECASE)


def _subject(text: str, vals: Sequence[Value]) -> set[str]:
    """Who or what ``text`` is about: its names and identifiers but its values' kinds."""
    # An acronym ("CI", "API") names a kind of thing more often than who.
    found = {
        v.text
        for v in vals
        if v.kind == "name" and not (text[v.start : v.end].isupper() and v.end - v.start <= 4)
    }
    found |= {
        m.group().casefold() for m in _IDENTIFIER.finditer(text) if not _inside(m.start(), vals)
    }
    for m in _GROUP.finditer(text):
        found |= {
            w
            for w in m.group(1).split()
            if w not in STOP_WORDS and stem(w) not in _SLOT_OF and w not in _OPENING_WORDS
        }
    return found


# People named through someone else: "Omar's brother" is not Omar.
_RELATIVE = re.compile(
    r"\b(?:brother|sister|mother|mom|mum|father|dad|parents?|cousin|wife|husband|partner|"
    r"son|daughter|kids?|child|children|friend|boss|manager|colleague|neighbou?r|aunt|uncle|"
    r"roommate|flatmate|grand(?:mother|father|ma|pa)|dog|cat|pet|puppy|kitten|horse)s?\b",
    re.IGNORECASE,
)


def _relatives(text: str) -> set[str]:
    return {m.group().casefold() for m in _RELATIVE.finditer(text)}


_POSSESSED = (
    r"'s\s+(?:(?:new|old|current|preferred|usual|main|regular|favou?rite)\s+)?([a-z][\w-]*)"
)


def _possessed(text: str, owner: str) -> set[str]:
    """What ``text`` says belongs to ``owner``: "Ewa's rent" -> {"rent"}."""
    pattern = rf"(?<![\w-]){re.escape(owner)}{_POSSESSED}"
    return {stem(m.group(1)) for m in re.finditer(pattern, text.casefold())}


def _same_heads(new_heads: set[str], old_heads: set[str], new: str, old: str) -> bool:
    """Whether what the two texts say belongs to the subject is one thing: one text's word
    is in the other ("Viktor's subscriptions", "Viktor's streaming subscriptions") or both
    name one slot ("Yara's card", "charge Yara's subscriptions")."""
    new_slots = {_SLOT_OF[h] for h in new_heads if h in _SLOT_OF}
    old_slots = {_SLOT_OF[h] for h in old_heads if h in _SLOT_OF}
    return (
        bool(new_heads & _stems(old))
        or bool(old_heads & _stems(new))
        or bool(new_slots & _slots(old, ()))
        or bool(old_slots & _slots(new, ()))
    )


def _stems(text: str) -> set[str]:
    return {stem(m.group().casefold()) for m in _WORD.finditer(text)}


def _mentions(text: str, words: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(words)}(?![\w-])", text.casefold()) is not None


def _same_subject(new: str, old: str, old_vals: Sequence[Value], b: Value) -> bool:
    """Every name or identifier of the old text but B is in the new text, and there is one;
    a name B comes after one of them ("Ayla codes in Zed": Ayla is who, not which)."""
    subject = {s for s in _subject(old, old_vals) if s != b.text and b.text not in s}
    if not subject or not all(_mentions(new, s) for s in subject):
        return False
    if _relatives(new) != _relatives(old):
        return False  # "Omar lives in Cairo", "Omar's brother lives in Alexandria"
    for s in subject:
        new_heads, old_heads = _possessed(new, s), _possessed(old, s)
        if new_heads and old_heads and not _same_heads(new_heads, old_heads, new, old):
            return False  # "Ewa's rent" and "Ewa's phone bill": two things of one subject
    return b.kind != "name" or any(_mentions(old[: b.start], s) for s in subject)


# Words that make a second slot of the same kind: the staging host is not the host, the
# docs' owner is not the service's owner.
_QUALIFIER = re.compile(
    r"\b(?:admin|console|dashboard|docs|documentation|status|staging|test|testing|dev|"
    r"development|backup|mirror|replica|secondary|primary|fallback|internal|external|public|"
    r"private|metrics|logs|logging|monitoring|sandbox|preview|sidecar|cdn|cache|proxy|dns|"
    r"smtp|vpn|ssh|database|db|replica)\b",
    re.IGNORECASE,
)


def _qualifiers(text: str, vals: Sequence[Value]) -> set[str]:
    return {m.group().casefold() for m in _QUALIFIER.finditer(text) if not _inside(m.start(), vals)}


# "the water bill": a modifier that tells one thing of a kind from another.
_MODIFIED = re.compile(
    r"\b(?:the|a|an|its|their|his|her|our|my|your)\s+([a-z][a-z-]*)\s+([a-z][a-z-]*)\b"
)


def _modifiers(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m in _MODIFIED.finditer(text):
        modifier, noun = m.group(1), m.group(2)
        if modifier not in STOP_WORDS and noun not in STOP_WORDS:
            out.setdefault(stem(noun), set()).add(stem(modifier))
    return out


def _modifiers_clash(new: str, old: str) -> bool:
    """Whether one noun is told apart differently: "the electricity bill", "the water bill"."""
    new_mods, old_mods = _modifiers(new), _modifiers(old)
    return any(not new_mods[n] & old_mods[n] for n in new_mods.keys() & old_mods.keys())


def _slots_agree(new: str, old: str, a: Value, b: Value) -> bool:
    """Whether A in ``new`` and B in ``old`` fill one slot: no qualifier or modifier tells
    them apart, the slot words do not differ, and a name has its slot named in both."""
    if _qualifiers(new, (a,)) != _qualifiers(old, (b,)) or _modifiers_clash(new, old):
        return False
    new_slots = _slots(new, (a,))
    old_slots = _slots(old, (b,))
    if new_slots and old_slots and not new_slots & old_slots:
        return False  # "owner" and "endpoint": two slots of one subject
    if a.kind == "name":
        return bool(new_slots & old_slots)  # a name could fill any slot: it must be named
    return True


# -- the rules ----------------------------------------------------------------------------
# What, written just before B, says B is being left: "from B", "instead of B", "no longer
# B", "left B", "replaced B", "the note about B", "what I said about B".
_BEFORE_B = re.compile(
    r"(?:\b(?:switch|chang|mov|migrat|upgrad|downgrad|roll\w*\s+back|transition|shift|"
    r"convert|went|go|away|reschedul|took\s+over|bump|push)\w*\s+(?:[\w'-]+\s+){0,3}?from|"
    r"\b(?:mov|relocat|migrat)\w*\s+(?:[\w'-]+\s+){0,3}?out\s+of|\binstead\s+of|\brather\s+than|\bno\s+longer(?:\s+\w+){0,2}|\bnot|\bnever|"
    r"\bleft|\bquit|\bdropped|\bditched|\bcancell?ed|\bretired|\bdecommissioned|\breplaced|"
    r"\bblocked|\bgave\s+up(?:\s+on)?|\bstopped\s+\w+ing|\bshut\s+down|\bnote\s+about|"
    r"\bsaid\s+about|\bprefer\w*\s+(?:[\w'-]+\s+){1,3}?over|\bmoved\s+off|\bmoved\s+away\s+from|\bmigrated\s+off)"
    r"(?:\s+(?:the|a|an|its|his|her|their|our|my|on))?\s*$",
    re.IGNORECASE,
)
# What, written just after B, says it is gone: "B is retired", "the B flat is gone", "B
# anymore".
_AFTER_B = re.compile(
    r"^(?:\s+\w+)?\s+(?:(?:is|was|are|were|has\s+been|have\s+been|got)\s+(?:now\s+)?)?"
    r"(?:retired|decommissioned|expired|outdated|deprecated|gone|dropped|cancell?ed|"
    r"discontinued|obsolete|closed|blocked|archived|shut\s+down|out\s+of\s+date|"
    r"no\s+longer\b)|"
    r"^(?:\s+\w+)?\s+any\s*more\b",
    re.IGNORECASE,
)
# The clause B is in ends at these.
_CLAUSE_END = re.compile(r"[,;:.!?]|\s—\s|\bbut\b|\band\b", re.IGNORECASE)


def _left_behind(text: str, at: Value) -> bool:
    """Whether the new ``text`` says the value at ``at`` is no longer so."""
    before = text[: at.start]
    cut = max((m.end() for m in _CLAUSE_END.finditer(before)), default=0)
    if _BEFORE_B.search(before[max(cut, at.start - 40) :]):
        return True
    after = text[at.end :]
    end = _CLAUSE_END.search(after)
    return _AFTER_B.search(after[: end.start() if end else len(after)]) is not None


_NEGATED = re.compile(r"\b(?:not|never|no\s+longer)\s+(?:\w+\s+){0,2}$", re.IGNORECASE)


# A stay, not a change: "in Vienna this week for a conference".
_TEMPORARY = re.compile(
    r"\bthis\s+(?:week|weekend|month)\b|\bfor\s+(?:a|the)\s+(?:conference|trip|visit|"
    r"holiday|vacation|week|weekend|few\s+days|summit|meeting)\b|\b(?:visiting|visited|landed|flew|flying|trip|"
    r"travel(?:l?ing|l?ed)?|temporarily|"
    r"today\s+only|for\s+now|on\s+(?:holiday|vacation|a\s+trip)|until)\b",
    re.IGNORECASE,
)


def _strangers(new_vals: Sequence[Value], old_vals: Sequence[Value], a: Value) -> bool:
    """Whether the new text names someone or something besides A the old text does not
    ("Ben now lives in Oslo with Kim" is about Ben, not Kim)."""
    olds = {v.text for v in old_vals}
    return any(v.kind == "name" and v.text not in olds and v.text != a.text for v in new_vals)


_HEAD = re.compile(r"\s+([a-z][\w-]*)")
_GONE_WORDS = """retired decommissioned expired outdated deprecated gone dropped cancelled
canceled discontinued obsolete closed blocked archived shut anymore behind"""
_GONE = frozenset(_GONE_WORDS.split())


def _same_thing(new: str, old: str, b: Value) -> bool:
    """Whether the noun the new text puts after B is the old text's ("the 9:15 bus is gone"
    is not "the gym class at 9:15"): the word itself or one of its slot."""
    head = _HEAD.match(new, b.end)
    if head is None or head.group(1) in STOP_WORDS or head.group(1) in _GONE:
        return True
    key = stem(head.group(1))
    return key in _stems(old) or (key in _SLOT_OF and _SLOT_OF[key] in _slots(old, ()))


def names_old_value(new: str, old: str) -> str | None:
    """Why ``new`` replaces ``old`` because it names the old value as left behind, or None.
    The old value, its subject and its slot are read in one sentence of the old text: a
    long message has many values, and one sentence's subject is not another's."""
    if _TEMPORARY.search(new):
        return None
    for sentence in split_sentences(old):
        why = _names_old_value(new, sentence)
        if why is not None:
            return why
    return None


def _names_old_value(new: str, old: str) -> str | None:
    old_vals, new_vals = values(old), values(new)
    for b in old_vals:
        if _NEGATED.search(old[: b.start]):
            continue  # the old text itself says "not B"
        named = [v for v in new_vals if v.text == b.text]
        if not named or not all(_left_behind(new, v) for v in named):
            continue  # not named, or named as still so too ("... still lives in B")
        olds = {v.text for v in old_vals}
        fresh = [
            a
            for a in new_vals
            if a.kind == b.kind and a.text not in olds and not _left_behind(new, a)
        ]
        if fresh and _same_subject(new, old, old_vals, b):
            if _strangers(new_vals, old_vals, fresh[0]) or not _same_thing(new, old, named[0]):
                continue
            return f"the new text leaves {_short(b)!r} behind for {_short(fresh[0])!r}"
    return None


# An update cue: the new text restates the slot as changed.
_CUE = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|moving\s+forward|quick\s+update|update\s*:|"
    r"heads\s+up|new\s+\w+(?:\s+\w+)?\s+(?:for|of|is)\b|is\s+the\s+new|now|reassigned|"
    r"handed\s+over|took\s+over|moved|went|switched\s+to|changed\s+to|updated\s+to|as\s+of|"
    r"starting|effective|turns\s+out|scratch\s+that|correction|permanently|"
    r"(?:bumped|pushed|upgraded|downgraded|rolled\s+back)\b.*\bto|(?:started|began)\s+a\s+new)(?!\w)",
    re.IGNORECASE,
)
_NOT_NOW = re.compile(
    r"\b(?:for|just|until|by)\s+now\b|\bfrom\s+now\b(?!\s+on)|\bnow\s+that\b", re.IGNORECASE
)
# A cue taken back: "we are not moving it to B".
_CUE_NEGATED = re.compile(r"\b(?:not|never|no)\b|n't\b", re.IGNORECASE)


def update_cue(new: str, old: str) -> str | None:
    """Why ``new`` restates ``old``'s slot with another value after an update cue, or None.
    Sentence by sentence on both sides: the cue, the new value, the subject and the slot
    in one sentence of the new text, the old value with its subject and slot in one of the
    old text."""
    for said in split_sentences(new):
        cue = _CUE.search(_NOT_NOW.sub(" ", said))
        if cue is None or _CUE_NEGATED.search(said[: cue.start()]) or _TEMPORARY.search(said):
            continue
        for sentence in split_sentences(old):
            why = _update_cue(said, sentence)
            if why is not None:
                return why
    return None


def _update_cue(new: str, old: str) -> str | None:
    old_vals, new_vals = values(old), values(new)
    new_texts = {v.text for v in new_vals}
    old_texts = {v.text for v in old_vals}
    for b in old_vals:
        if b.text in new_texts or _NEGATED.search(old[: b.start]):
            continue
        for a in new_vals:
            if a.kind != b.kind or a.text in old_texts or _strangers(new_vals, old_vals, a):
                continue
            if _same_subject(new, old, old_vals, b) and _slots_agree(new, old, a, b):
                return (
                    f"an update cue gives the slot that held {_short(b)!r} the value {_short(a)!r}"
                )
    return None
