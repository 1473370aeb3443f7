"""Deterministic parsing of time expressions in recall queries (pure, no I/O, stdlib only).

``parse_time_expressions(text, reference)`` finds every time expression in a query and
resolves it against the query's reference time into ``TimeWindow``s (``[start, end)``,
timezone-aware UTC, defined in ``episodic.scoring.temporal``). ``strip_time_expressions``
cuts the matched spans out so the lexical legs search "what broke", not "what broke last
week".

Conventions
-----------
- Calendar arithmetic (midnights, weeks, months) happens in the reference's own timezone,
  then converts to UTC: "yesterday" for a reference at 01:00+02:00 is that zone's yesterday.
  A naive reference is taken as UTC.
- Weeks run Monday to Monday (ISO). The weekend is Saturday 00:00 to Monday 00:00.
- "last week/month/quarter/year" is the previous calendar unit; "the last/past week" and
  "past week" (with "the", or with "past") are rolling windows ending at the reference.
  "the next day/week", "the last minute/second/day" do not fire: they narrate another
  moment ("the next day we rolled back") or are idioms ("a last minute change").
- Rolling windows of days or longer start at the midnight that begins the first day:
  "the past 3 days" at Wed 15:00 is [Sun 00:00, Wed 15:00). Shorter units are exact.
- "N units ago" is the calendar unit holding that point: "3 days ago" is one whole day,
  "2 weeks ago" a Monday-to-Monday week, "2 months ago" a whole month. Minutes and hours
  get a tolerance of one unit or a quarter of the distance, whichever is larger
  ("30 minutes ago" = 37.5 to 22.5 minutes before the reference).
- Numbers: digits (up to three), one..twelve, "a"/"an" = 1, "a couple (of)" = 2,
  "a few"/"few"/"several" = 3 but fuzzy: they cover 2..5 units (see the table).
- Year-less dates, bare months and bare seasons resolve to the most recent occurrence that
  has started by the reference (its start <= reference): on 2023-05-24, "in May" is May 2023,
  "in June" June 2022, "8 June" 2022-06-08. The same rule applies under "since"/"before"/
  "after": "before June" is before June 2022. Memories are records of the past, so the
  past reading is the useful one.
- "last <month>"/"last <season>": the most recent one that has fully ended; "this" = the
  one of the current year; "next" = the first one starting after the reference.
- Weekdays: "Friday", "on Friday", "last Friday", "past Friday" = the most recent Friday
  strictly before today (on a Friday, "Friday" is a week ago: today would be "today").
  "this Friday" = the Friday of the current week (past or future); "next Friday" = the
  first Friday strictly after today.
- Seasons are northern-hemisphere meteorological: spring = Mar-May, summer = Jun-Aug,
  autumn/fall = Sep-Nov, winter = Dec-Feb. "winter 2023" is the winter *starting* in
  December 2023.
- early/mid/late (also "the start/beginning/middle/end of"): thirds. A month splits at days
  10/20 (1-10, 11-20, 21-end), a year into four-month thirds, anything else into thirds
  rounded to whole days (or exact thirds when shorter than three days).
- Open-ended windows: "before X" = [X.start - OPEN_SPAN, X.start), "after X" = [X.end,
  X.end + OPEN_SPAN), "until/till/up to X" = [X.start - OPEN_SPAN, X.end), with OPEN_SPAN a
  century (clamped at the calendar's ends). "since X" = [X.start, reference); if X starts
  after the reference, X itself is kept.
- "between X and Y", "from X to/until/through Y": [min start, max end).
- "the week of D": the Monday-start week holding D, except when D is a Sunday, where it is
  the week starting D (people naming a week by a Sunday mean the week starting then).
  "the week starting/beginning/commencing D": the seven days from D.
- "N units before/after X" with a dated X: the day(s) that far before X's first day or after
  its last day ("the day before yesterday", "two days after 8 May 2023").
- Numeric dates: ISO first (YYYY-MM-DD, YYYY/MM/DD, optional time; YYYY-MM is a month).
  ``08/05/2023`` and ``08-05-2023`` are ambiguous, so BOTH readings are returned as two
  windows with the same text, day-first (8 May) first, then month-first (5 August); one
  window when the readings agree or only one is a valid date. ``08.05.2023`` is day-first
  only (dotted dates are a day-first convention). Two-digit years and "8/5" are ignored.
- Years are recognised only between 1970 and 2100 (dates in any form included). A bare
  year, a bare month name and a bare season need a temporal lead-in right before them:
  in, during, over, throughout, within, around, since, before, after, prior to, until,
  till, up to, early/mid/late, the start/beginning/middle/end of, (the ...) week of, an
  offset ("two days before"), or a from/between range. "on"/"at" are absorbed into the
  span but do not count ("look at June"). A year next to a month or a day counts without
  one ("May 2023"). So "port 2022", "2022 rows", "in 2000 ms" and "after 2000 requests"
  are not dates (a bare year followed by a unit or count noun is a quantity).
- "May"/"March"/"Mar" must be capitalised unless a year follows: "May I ask", "march
  forward", "in march formation", "this may take a while" do not fire; "in May" does.
  Lower-case "in may" is therefore missed on purpose.
- "spring" and "fall" additionally need "the", a modifier or a year ("in the fall", "last
  spring"; not "in spring boot"). So "Summer is a name", "ask Summer" and "Summer's notes"
  never fire while "in the summer", "in Summer" and "Summer 2022" do: a capitalised
  season after a preposition is read as the season.
- Weekday names fire on their own ("Friday"), except after "every"/"each". Abbreviated
  weekdays (sat, sun, wed) are never read as days.
- Matching is ASCII-only for digits, letters and case folding (re.ASCII), so exotic
  characters never fold onto a month or number word.
- Anchored: "N units before/after <event>", "the day/week before/after <event>" and
  "since/before/after/until <determiner> <event>" ("after the deploy") become kind
  "anchored" windows. The event phrase is an optional determiner and up to three words,
  optionally continued by "of" and up to two more ("the end of the sprint"); it stops at
  pronouns, auxiliaries (was/did/will), conjunctions, prepositions and the next time
  expression. Offsets are centred on the anchor's timestamp t, one unit wide:
  "two days before X" resolves to [t - 2.5 days, t - 1.5 days), fuzzy counts widen the
  span. Months count 30 days, quarters 91, years 365. Open forms use OPEN_SPAN. The bare
  open form requires a determiner (the/our/my/this/that/...), so "before we ship" is not
  an anchor.
- "the first/second/third/fourth week of X": days 1-7, 8-14, ... of X; "the last week of X":
  its last seven days.
- Not handled (left in the text): clock times ("at 3pm"), durations ("for two weeks",
  "in 3 days"), ordinal day words ("the second of May"), quarters by name ("Q1"),
  decades ("the 90s"), recurrences ("every Friday" does not fire), "a week ago today"
  (gives two windows: a week ago, and today).

Fuzzy and colloquial expressions
--------------------------------
=====================================  =============================================
expression                             window (``today`` = local midnight of the day)
=====================================  =============================================
just now, a moment ago                 [ref - 15 min, ref)
recently, lately                       [ref - 14 days, ref)
the other day                          [today - 7 days, today)  (1..7 days ago)
a few / several days ago               [today - 5 days, today - 1 day)  (2..5 days ago)
a few weeks / months / years ago       the calendar units 2..5 back, whole
a few hours / minutes ago              [ref - 6.25 h, ref - 0.75 h] (2..5 units +/- 1.25)
past / last few days (weeks, ...)      rolling 5 units back to ref
in recent days / weeks / months        same as "past few ..."
a while ago, a while back              [today - 6 months, today - 14 days)
some time ago                          same as "a while ago"
this morning / afternoon / evening     today 05-12 / 12-18 / 18-24
tonight, last night                    18:00 to 06:00 next day (today / yesterday)
earlier today / this week / ...        [start of the day/week/month/quarter/year, ref)
later today / this week / ...          [ref, end of that unit)
=====================================  =============================================
"""

from __future__ import annotations

import bisect
import calendar
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

from episodic.scoring.temporal import TimeKind, TimeWindow, clamped_add

__all__ = [
    "OPEN_SPAN",
    "YEAR_MAX",
    "YEAR_MIN",
    "TimeWindow",
    "parse_time_expressions",
    "strip_time_expressions",
]

YEAR_MIN = 1970
YEAR_MAX = 2100
OPEN_SPAN = timedelta(days=36525)  # "before X" / "after X": a century is "forever" here
RECENT_SPAN = timedelta(days=14)
JUST_NOW_SPAN = timedelta(minutes=15)
OTHER_DAY_DAYS = 7
WHILE_AGO_MONTHS = 6
WHILE_AGO_MIN_DAYS = 14
FEW = (2, 5)  # "a few"/"several" units: nominally 3, read as anywhere from 2 to 5

_DAY = timedelta(days=1)
_TIME_UNITS = {
    "second": timedelta(seconds=1),
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
}
_APPROX_UNITS = {  # calendar units as fixed lengths, only for anchored offsets
    **_TIME_UNITS,
    "day": timedelta(days=1),
    "week": timedelta(days=7),
    "month": timedelta(days=30),
    "quarter": timedelta(days=91),
    "year": timedelta(days=365),
}
_CALENDAR_UNITS = ("week", "month", "quarter", "year", "weekend")
_PARTS = {"morning": (5, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH_FULL = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_MONTH_ABBR = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7,
    "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTHS = {**{name: i + 1 for i, name in enumerate(_MONTH_FULL)}, **_MONTH_ABBR}
_MUST_CAPITALISE = frozenset({"may", "march", "mar"})  # modal verb / verb when lower-case
_NUM_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip

_DAY_WORDS = frozenset({"today", "yesterday", "tomorrow"})
_PART_WORDS = frozenset({"morning", "afternoon", "evening", "night", "tonight"})
_MOD_WORDS = frozenset({"last", "past", "previous", "next", "coming", "this", "current"})
_MONTH_WORDS = frozenset(_MONTHS)
_UNIT_WORDS = frozenset(
    {
        "second", "seconds", "sec", "secs", "minute", "minutes", "min", "mins", "hour",
        "hours", "hr", "hrs", "day", "days", "week", "weeks", "wk", "wks", "fortnight",
        "fortnights", "month", "months", "quarter", "quarters", "year", "years", "yr", "yrs",
        "weekend",
    }
)  # fmt: skip
_ANCHOR_OFFSET_WORDS = frozenset({"before", "after", "prior"})
_ANCHOR_OPEN_WORDS = frozenset({"since", "before", "after", "prior", "until", "till"})
_TOKEN = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"[0-9]")

# --- regex building blocks -------------------------------------------------------------

# ASCII: \d, \w, \s and case folding stay ASCII, so a matched month or number word is
# always a key of the tables above ("ſept" must not fold onto "sept").
_I = re.IGNORECASE | re.ASCII
_WD = "|".join(_WEEKDAYS)
_NUM = (
    r"(?:\d{1,3}|a\s+couple(?:\s+of)?|couple(?:\s+of)?|a\s+few|few|several|an?|one|two|"
    r"three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
)
_UNIT = (
    r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|fortnights?|months?|"
    r"quarters?|years?|yrs?)\b"
)
_MON = (
    r"(?P<mon>(?:" + "|".join(_MONTH_FULL) + r")\b"
    r"|(?:jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\b\.?)"
)
_MON_FULL = r"(?P<mon>(?:" + "|".join(_MONTH_FULL) + r"))\b"
_YEAR = r"(?P<year>19[7-9]\d|20\d\d|2100)(?!\d)"
_DAYN = r"(?P<day>(?:[12]\d|3[01]|0?[1-9])(?!\d))(?:st|nd|rd|th)?\b"
_MOD = r"(?P<mod>last|this|next|past|previous|coming)"
# words that, right after a bare year, make it a quantity rather than a date
_QUANTITY = (
    r"ms|s|secs?|seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|items?|"
    r"rows?|records?|requests?|lines?|tokens?|bytes?|[kmgt]i?b|users?|people|events?|"
    r"errors?|calls?|times|steps?|iterations?|files?|tests?|entries|points?|px|words?|"
    r"chars?|characters?|messages?|memories|results?|queries|documents?|docs?|units?|"
    r"dollars?|usd|eur|euros?|ports?|retries|attempts?|epochs?|samples?"
)

# --- context ---------------------------------------------------------------------------


class _Ctx:
    """The reference time in UTC plus the timezone its calendar is read in."""

    __slots__ = ("ref", "today", "tz")

    def __init__(self, reference: datetime) -> None:
        tz = reference.tzinfo
        if tz is None or reference.utcoffset() is None:
            tz = UTC
            reference = reference.replace(tzinfo=UTC)
        self.tz: tzinfo = tz
        self.ref = reference.astimezone(UTC)
        self.today = reference.date()

    def at(self, d: date, hour: int = 0) -> datetime:
        """Local ``hour`` o'clock on ``d`` (hours past 23 roll into the next days), in UTC."""
        days, hour = divmod(hour, 24)
        if days:
            d = d + timedelta(days=days)
        return datetime(d.year, d.month, d.day, hour, tzinfo=self.tz).astimezone(UTC)

    def days(self, first: date, stop: date) -> tuple[datetime, datetime]:
        return self.at(first), self.at(stop)

    def local_date(self, dt: datetime) -> date:
        return dt.astimezone(self.tz).date()

    def last_local_date(self, end: datetime) -> date:
        """The local day holding the last instant before an exclusive ``end``."""
        return self.local_date(end - timedelta(microseconds=1))


# --- calendar helpers ------------------------------------------------------------------


def _add_months(d: date, n: int) -> date:
    years, month0 = divmod(d.month - 1 + n, 12)
    year = d.year + years
    if not 1 <= year <= 9999:
        raise OverflowError("year out of range")
    day = min(d.day, calendar.monthrange(year, month0 + 1)[1])
    return date(year, month0 + 1, day)


def _shift(d: date, unit: str, n: int) -> date:
    if unit == "day":
        return d + timedelta(days=n)
    if unit == "week":
        return d + timedelta(days=7 * n)
    if unit == "month":
        return _add_months(d, n)
    if unit == "quarter":
        return _add_months(d, 3 * n)
    return _add_months(d, 12 * n)


def _unit_start(d: date, unit: str) -> date:
    if unit == "day":
        return d
    if unit == "week":
        return d - timedelta(days=d.weekday())
    if unit == "month":
        return d.replace(day=1)
    if unit == "quarter":
        return date(d.year, (d.month - 1) // 3 * 3 + 1, 1)
    return date(d.year, 1, 1)


def _calendar_unit(d: date, unit: str, n: int) -> tuple[date, date]:
    """The calendar ``unit`` holding ``d``, moved ``n`` units: (first day, day after last)."""
    first = _shift(_unit_start(d, unit), unit, n)
    return first, _shift(first, unit, 1)


def _weekend(today: date, n: int) -> tuple[date, date]:
    saturday = today - timedelta(days=today.weekday()) + timedelta(days=5 + 7 * n)
    return saturday, saturday + timedelta(days=2)


def _month_instance(month: int, year: int) -> tuple[date, date]:
    first = date(year, month, 1)
    return first, _add_months(first, 1)


def _season_instance(season: str, year: int) -> tuple[date, date]:
    first = date(year, _SEASON_START[season], 1)
    return first, _add_months(first, 3)


def _latest_started(instance: Callable[[int], tuple[date, date]], today: date) -> tuple[date, date]:
    year = today.year
    first, stop = instance(year)
    return (first, stop) if first <= today else instance(year - 1)


def _latest_ended(instance: Callable[[int], tuple[date, date]], today: date) -> tuple[date, date]:
    for year in (today.year, today.year - 1, today.year - 2):
        first, stop = instance(year)
        if stop <= today:
            return first, stop
    return instance(today.year - 2)


def _next_starting(instance: Callable[[int], tuple[date, date]], today: date) -> tuple[date, date]:
    first, stop = instance(today.year)
    return (first, stop) if first > today else instance(today.year + 1)


def _relative_instance(
    instance: Callable[[int], tuple[date, date]], mod: str | None, today: date, this_year: int
) -> tuple[date, date]:
    if mod in ("last", "past", "previous"):
        return _latest_ended(instance, today)
    if mod in ("next", "coming"):
        return _next_starting(instance, today)
    if mod == "this":
        return instance(this_year)
    return _latest_started(instance, today)


def _count(token: str) -> tuple[int, int] | None:
    word = " ".join(token.lower().split())
    if word.isdigit():
        n = int(word)
        return n, n
    if "few" in word or word == "several":
        return FEW
    if "couple" in word:
        return 2, 2
    if word == "the":
        return 1, 1
    n = _NUM_WORDS.get(word, -1)
    return (n, n) if n >= 0 else None


def _unit(token: str) -> tuple[str, int]:
    """Canonical unit and multiplier ("fortnight" is two weeks)."""
    word = token.lower()
    if word.startswith("fortnight"):
        return "week", 2
    if word.startswith("sec"):
        return "second", 1
    if word.startswith("min"):
        return "minute", 1
    if word.startswith("h"):
        return "hour", 1
    if word.startswith("d"):
        return "day", 1
    if word.startswith("w"):
        return "week", 1
    if word.startswith("mo"):
        return "month", 1
    if word.startswith("q"):
        return "quarter", 1
    return "year", 1


def _capital_ok(word: str, has_year: bool) -> bool:
    return has_year or word.lower() not in _MUST_CAPITALISE or word[:1].isupper()


def _month_number(word: str) -> int:
    return _MONTHS[word.lower().rstrip(".")]


def _year_ok(y: int) -> bool:
    return YEAR_MIN <= y <= YEAR_MAX


# --- expressions -----------------------------------------------------------------------

_OK, _NEEDS_PREP, _RANGE_ONLY = 0, 1, 2
_Win = tuple[datetime, datetime]


@dataclass(slots=True)
class _Expr:
    s: int
    e: int
    wins: list[_Win]
    relative: bool
    need: int = _OK
    range_s: int | None = None  # where "between"/"from" starts, when one precedes


_Handler = Callable[[re.Match[str], _Ctx], _Expr | None]


def _ex(m: re.Match[str], wins: list[_Win], relative: bool, need: int = _OK) -> _Expr:
    return _Expr(m.start(), m.end(), wins, relative, need)


def _part_of_day(ctx: _Ctx, d: date, part: str) -> _Win:
    lo, hi = _PARTS[part.lower()]
    return ctx.at(d, lo), ctx.at(d, hi)


def _h_day_word(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    word = m.group("w").lower()
    d = ctx.today + timedelta(days={"today": 0, "yesterday": -1, "tomorrow": 1}[word])
    return _ex(m, [ctx.days(d, d + _DAY)], True)


def _h_part_of_day(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    if m.group("tonight"):
        return _ex(m, [_part_of_day(ctx, ctx.today, "night")], True)
    rel, part = m.group("rel").lower(), m.group("part").lower()
    if rel == "last" and part != "night":
        return None
    offset = {"yesterday": -1, "last": -1, "tomorrow": 1}.get(rel, 0)
    return _ex(m, [_part_of_day(ctx, ctx.today + timedelta(days=offset), part)], True)


def _h_ago(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    count = _count(m.group("num"))
    if count is None:
        return None
    unit, mult = _unit(m.group("unit"))
    lo, hi = count[0] * mult, count[1] * mult
    if unit in _TIME_UNITS:
        step = _TIME_UNITS[unit]
        tol = step * max(1.0, hi / 4)
        start = ctx.ref - step * hi - tol
        end = min(ctx.ref, ctx.ref - step * lo + tol)
        return _ex(m, [(start, end)], True)
    first, _ = _calendar_unit(ctx.today, unit, -hi)
    _, stop = _calendar_unit(ctx.today, unit, -lo)
    return _ex(m, [ctx.days(first, stop)], True)


def _rolling(ctx: _Ctx, unit: str, n: int, forward: bool) -> _Win:
    if unit in _TIME_UNITS:
        step = _TIME_UNITS[unit] * n
        return (ctx.ref, ctx.ref + step) if forward else (ctx.ref - step, ctx.ref)
    if forward:
        return ctx.ref, ctx.at(_shift(ctx.today, unit, n) + _DAY)
    return ctx.at(_shift(ctx.today, unit, -n)), ctx.ref


def _h_unit_phrase(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    """last/this/next/past (N) unit, with or without "the"; see the module docstring."""
    mod = m.group("mod").lower()
    the = m.group("the") is not None
    word = m.group("unit").lower()
    backward = mod in ("last", "past", "previous")
    forward = mod in ("next", "coming")
    if word == "weekend":
        if m.group("num"):
            return None
        n = -1 if backward else 1 if forward else 0
        return _ex(m, [ctx.days(*_weekend(ctx.today, n))], True)
    unit, mult = _unit(word)
    if m.group("num"):
        count = _count(m.group("num"))
        if count is None or not (backward or forward):
            return None
        return _ex(m, [_rolling(ctx, unit, count[1] * mult, forward)], True)
    if the:
        # "the next day" / "the last minute" narrate another moment or are idioms
        if mod == "past" or (backward and unit not in ("second", "minute", "day")):
            return _ex(m, [_rolling(ctx, unit, mult, False)], True)
        if mod in ("this", "current") and unit in _CALENDAR_UNITS:
            return _ex(m, [ctx.days(*_calendar_unit(ctx.today, unit, 0))], True)
        return None
    if mod == "past" or (mult > 1 and backward):
        return _ex(m, [_rolling(ctx, unit, mult, False)], True)
    if unit not in _CALENDAR_UNITS or mult > 1:
        return None  # "last minute", "next day": idioms or relative to another event
    n = -1 if backward else 1 if forward else 0
    return _ex(m, [ctx.days(*_calendar_unit(ctx.today, unit, n))], True)


def _h_earlier_later(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    word = m.group("unit").lower()
    unit = "day" if word == "today" else word
    first, stop = _calendar_unit(ctx.today, unit, 0)
    if m.group("mod").lower() == "earlier":
        return _ex(m, [(ctx.at(first), ctx.ref)], True)
    return _ex(m, [(ctx.ref, ctx.at(stop))], True)


def _h_fuzzy(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    word = " ".join(m.group("w").lower().split())
    if m.group("unit"):
        unit, _ = _unit(m.group("unit"))
        return _ex(m, [_rolling(ctx, unit, FEW[1], False)], True)
    if word in ("recently", "lately"):
        return _ex(m, [(ctx.ref - RECENT_SPAN, ctx.ref)], True)
    if word in ("just now", "a moment ago"):
        return _ex(m, [(ctx.ref - JUST_NOW_SPAN, ctx.ref)], True)
    if word == "the other day":
        return _ex(m, [ctx.days(ctx.today - timedelta(days=OTHER_DAY_DAYS), ctx.today)], True)
    first = _add_months(ctx.today, -WHILE_AGO_MONTHS)
    return _ex(m, [ctx.days(first, ctx.today - timedelta(days=WHILE_AGO_MIN_DAYS))], True)


def _h_weekday(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    target = _WEEKDAYS.index(m.group("wd").lower())
    mod = (m.group("mod") or "").lower()
    today = ctx.today
    if mod == "this":
        d = today - timedelta(days=today.weekday() - target)
    elif mod in ("next", "coming"):
        d = today + timedelta(days=(target - today.weekday()) % 7 or 7)
    else:
        d = today - timedelta(days=(today.weekday() - target) % 7 or 7)
    part = m.group("part")
    win = _part_of_day(ctx, d, part) if part else ctx.days(d, d + _DAY)
    return _ex(m, [win], True)


def _resolve_day(ctx: _Ctx, month: int, day: int, year: int | None) -> _Win | None:
    if year is not None:
        d = date(year, month, day)
        return ctx.days(d, d + _DAY)
    for y in range(ctx.today.year, ctx.today.year - 9, -1):  # eight years always holds a 29 Feb
        try:
            d = date(y, month, day)
        except ValueError:
            continue
        if d <= ctx.today:
            return ctx.days(d, d + _DAY)
    return None


def _h_written_date(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    word = m.group("mon")
    year_s = m.group("year")
    if not _capital_ok(word, year_s is not None):
        return None
    year = int(year_s) if year_s else None
    win = _resolve_day(ctx, _month_number(word), int(m.group("day")), year)
    return None if win is None else _ex(m, [win], year is None)


def _h_month_year(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    first, stop = _month_instance(_month_number(m.group("mon")), int(m.group("year")))
    return _ex(m, [ctx.days(first, stop)], False)


def _h_month(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    word = m.group("mon")
    if not _capital_ok(word, False):
        return None
    month = _month_number(word)
    mod = (m.group("mod") or "").lower() or None
    first, stop = _relative_instance(
        lambda y: _month_instance(month, y), mod, ctx.today, ctx.today.year
    )
    return _ex(m, [ctx.days(first, stop)], True, _OK if mod else _NEEDS_PREP)


def _h_season(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    word = m.group("s")
    season = word.lower()
    mod = (m.group("mod") or "").lower() or None
    if m.group("year"):
        first, stop = _season_instance(season, int(m.group("year")))
        return _ex(m, [ctx.days(first, stop)], False)
    if season in ("spring", "fall") and not (mod or m.group("the")):
        return None
    today = ctx.today
    this_year = today.year - 1 if season == "winter" and today.month <= 2 else today.year
    first, stop = _relative_instance(lambda y: _season_instance(season, y), mod, today, this_year)
    return _ex(m, [ctx.days(first, stop)], True, _OK if mod else _NEEDS_PREP)


def _h_the_weekend(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    n = 0 if ctx.today.weekday() >= 5 else -1
    return _ex(m, [ctx.days(*_weekend(ctx.today, n))], True)


def _h_year(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    y = int(m.group("year"))
    return _ex(m, [ctx.days(date(y, 1, 1), date(y + 1, 1, 1))], False, _NEEDS_PREP)


def _h_iso(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    y = int(m.group("y"))
    if not _year_ok(y):
        return None
    d = date(y, int(m.group("m")), int(m.group("d")))
    return _ex(m, [ctx.days(d, d + _DAY)], False)


def _h_iso_month(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    y = int(m.group("y"))
    if not _year_ok(y):
        return None
    first, stop = _month_instance(int(m.group("m")), y)
    return _ex(m, [ctx.days(first, stop)], False)


def _h_numeric(m: re.Match[str], ctx: _Ctx) -> _Expr | None:
    y = int(m.group("y"))
    if not _year_ok(y):
        return None
    a, b = int(m.group("a")), int(m.group("b"))
    readings = [(b, a)] if m.group("sep") == "." else [(b, a), (a, b)]
    wins: list[_Win] = []
    for month, day in readings:
        try:
            d = date(y, month, day)
        except ValueError:
            continue
        win = ctx.days(d, d + _DAY)
        if win not in wins:
            wins.append(win)
    return _ex(m, wins, False) if wins else None


class _LazyPattern:
    """A pattern compiled when first used: a rule whose words a query lacks (most
    queries hold no time expression) never pays for compiling its pattern, which is
    most of what importing this module cost a command that recalls once."""

    __slots__ = ("_compiled", "flags", "source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source = source
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def _pattern(self) -> re.Pattern[str]:
        if self._compiled is None:  # two threads may both compile it: the same pattern
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def finditer(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        return self._pattern().finditer(text, pos, endpos)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._pattern().search(text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._pattern().fullmatch(text, pos, endpos)


@dataclass(frozen=True, slots=True)
class _Rule:
    """A pattern, its handler, and the cheap test that decides whether to run it at all:
    most queries hold no time expression, and a set lookup is far cheaper than a scan."""

    pattern: _LazyPattern
    handler: _Handler
    words: frozenset[str] = frozenset()  # at least one of these tokens must occur
    digit: bool = False  # the text must hold a digit
    units: bool = False  # the text must hold a unit word (day, weeks, ...)

    def applies(self, tokens: set[str], has_digit: bool) -> bool:
        return (
            (not self.words or not self.words.isdisjoint(tokens))
            and (has_digit or not self.digit)
            and (not self.units or not _UNIT_WORDS.isdisjoint(tokens))
        )


_RULES: tuple[_Rule, ...] = (
    _Rule(_LazyPattern(r"\b(?P<w>today|yesterday|tomorrow)\b", _I), _h_day_word, _DAY_WORDS),
    _Rule(
        _LazyPattern(
            r"\b(?:(?P<rel>yesterday|today|tomorrow|this|last)\s+"
            r"(?P<part>morning|afternoon|evening|night)|(?P<tonight>tonight))\b",
            _I,
        ),
        _h_part_of_day,
        _PART_WORDS,
    ),
    _Rule(
        _LazyPattern(rf"\b(?P<num>{_NUM})\s+(?P<unit>{_UNIT})\s+(?:ago|back)\b", _I),
        _h_ago,
        frozenset({"ago", "back"}),
        units=True,
    ),
    _Rule(
        _LazyPattern(
            rf"\b(?P<the>the\s+|this\s+(?=past\b))?"
            rf"(?P<mod>last|past|previous|next|coming|this|current)\s+"
            rf"(?:(?P<num>{_NUM})\s+)?(?P<unit>{_UNIT}|weekend\b)(?!\s+of\b)",
            _I,
        ),
        _h_unit_phrase,
        _MOD_WORDS,
        units=True,
    ),
    _Rule(
        _LazyPattern(
            r"\b(?P<mod>earlier|later)\s+(?:in\s+)?(?:(?:this|the)\s+)?"
            r"(?P<unit>today|week|month|quarter|year)\b",
            _I,
        ),
        _h_earlier_later,
        frozenset({"earlier", "later"}),
    ),
    _Rule(
        _LazyPattern(
            r"\b(?P<w>recently|lately|the\s+other\s+day|a\s+(?:little\s+)?while\s+(?:ago|back)"
            r"|some\s+time\s+ago|just\s+now|a\s+moment\s+ago"
            r"|recent\s+(?P<unit>days|weeks|months|years))\b",
            _I,
        ),
        _h_fuzzy,
        frozenset({"recently", "lately", "other", "while", "time", "just", "moment", "recent"}),
    ),
    _Rule(
        _LazyPattern(
            rf"\b(?<!every\s)(?<!each\s)(?:(?P<mod>last|this|next|past|previous|coming)\s+)?"
            rf"(?P<wd>{_WD})"
            rf"(?:\s+(?P<part>morning|afternoon|evening|night))?\b",
            _I,
        ),
        _h_weekday,
        frozenset(_WEEKDAYS),
    ),
    _Rule(
        _LazyPattern(
            rf"(?<![\w./:-])(?:(?:{_WD}),?\s+)?(?:the\s+)?{_DAYN}\s+(?:of\s+)?{_MON}"
            rf"(?:,?\s+{_YEAR})?",
            _I,
        ),
        _h_written_date,
        _MONTH_WORDS,
        digit=True,
    ),
    _Rule(
        _LazyPattern(
            rf"\b(?:(?:{_WD}),?\s+)?{_MON}\s+(?:the\s+)?{_DAYN}(?!:\d)(?:,?\s+{_YEAR})?",
            _I,
        ),
        _h_written_date,
        _MONTH_WORDS,
        digit=True,
    ),
    _Rule(
        _LazyPattern(rf"\b{_MON},?\s+(?:of\s+)?{_YEAR}", _I),
        _h_month_year,
        _MONTH_WORDS,
        digit=True,
    ),
    _Rule(_LazyPattern(rf"\b(?:{_MOD}\s+)?{_MON_FULL}", _I), _h_month, frozenset(_MONTH_FULL)),
    _Rule(
        _LazyPattern(
            rf"\b(?:{_MOD}\s+)?(?P<the>the\s+)?(?P<s>spring|summer|autumn|fall|winter)"
            rf"(?:\s+(?:of\s+)?{_YEAR})?\b(?!\s+boot\b)",
            _I,
        ),
        _h_season,
        frozenset(_SEASON_START),
    ),
    _Rule(_LazyPattern(r"\bthe\s+weekend\b", _I), _h_the_weekend, frozenset({"weekend"})),
    _Rule(
        _LazyPattern(
            rf"(?<![\w.$€£#/:])(?<!\d-){_YEAR}"
            rf"(?![\w%]|[.,:/-]\d|\s*%|\s+(?:{_QUANTITY})\b)",
            _I,
        ),
        _h_year,
        digit=True,
    ),
    _Rule(
        _LazyPattern(
            r"(?<![\w./:-])(?P<y>\d{4})(?P<sep>[-/])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})"
            r"(?:(?:T|\s+)\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
            r"(?![\w/-]|[.:]\d)",
            _I,
        ),
        _h_iso,
        digit=True,
    ),
    _Rule(
        _LazyPattern(r"(?<![\w./:-])(?P<y>\d{4})-(?P<m>\d{2})(?![\w/-]|[.:]\d)", _I),
        _h_iso_month,
        digit=True,
    ),
    _Rule(
        _LazyPattern(
            r"(?<![\w./:-])(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4})"
            r"(?![\w/-]|[.:]\d)",
            _I,
        ),
        _h_numeric,
        digit=True,
    ),
)

# --- combinators: patterns matched against the text just before an expression ----------

_TAIL = 64  # longest prefix worth looking at; every pattern below is far shorter
_P_EDGE = _LazyPattern(
    r"(?<![\w-])(?P<w>early|mid|late|(?:at\s+)?(?:the\s+)?(?:very\s+)?"
    r"(?P<pos>start|beginning|middle|end)\s+of)(?:\s+|\s*-\s*)$",
    _I,
)
_P_WEEK_OF = _LazyPattern(
    r"(?<![\w-])(?:the\s+)?(?:(?P<ord>first|second|third|fourth|last|final)\s+)?"
    r"week\s+(?P<w>of|starting|beginning|commencing)\s+(?:the\s+)?$",
    _I,
)
_ORDINAL_WEEKS = {"first": 0, "second": 1, "third": 2, "fourth": 3}
_P_OFFSET = _LazyPattern(
    rf"(?<![\w-])(?P<num>{_NUM}|the)\s+(?P<unit>{_UNIT})\s+"
    rf"(?P<dir>before|after|prior\s+to|earlier\s+than|later\s+than)\s+$",
    _I,
)
_P_OPEN = _LazyPattern(
    r"(?<![\w-])(?P<w>ever\s+since|since|before|after|prior\s+to|until|till|up\s+until"
    r"|up\s+till|up\s+to|earlier\s+than|later\s+than)\s+$",
    _I,
)
_P_PREP = _LazyPattern(
    r"(?<![\w-])(?P<w>(?:sometime\s+|some\s+time\s+|back\s+)?in|during|over|throughout"
    r"|within|around|on|at)\s+$",
    _I,
)
_P_RANGE_OPEN = _LazyPattern(r"(?<![\w-])(?:between|from)\s+$", _I)
_RANGE_GAP = _LazyPattern(r"\s*(?:and|to|until|till|through|thru|-|–|—)\s*", _I)
_NON_SATISFYING_PREPS = frozenset({"on", "at"})  # "look at June", "on May's team"
_POSSESSIVE = ("'s", "’s")


def _edge(ctx: _Ctx, win: _Win, which: str) -> _Win:
    start, end = win
    ds, de = ctx.local_date(start), ctx.local_date(end)
    aligned = ctx.at(ds) == start and ctx.at(de) == end
    cuts: tuple[datetime, datetime]
    if aligned and ds.day == 1 and de == _add_months(ds, 1):
        cuts = ctx.at(ds.replace(day=11)), ctx.at(ds.replace(day=21))
    elif aligned and (ds.month, ds.day) == (1, 1) and de == date(ds.year + 1, 1, 1):
        cuts = ctx.at(ds.replace(month=5)), ctx.at(ds.replace(month=9))
    elif aligned and (de - ds).days >= 3:
        n = (de - ds).days
        cuts = (
            ctx.at(ds + timedelta(days=round(n / 3))),
            ctx.at(ds + timedelta(days=round(2 * n / 3))),
        )
    else:
        third = (end - start) / 3
        cuts = start + third, start + 2 * third
    if which == "early":
        return start, cuts[0]
    if which == "mid":
        return cuts
    return cuts[1], end


def _edge_kind(m: re.Match[str]) -> str:
    pos = (m.group("pos") or "").lower()
    word = m.group("w").lower()
    if pos in ("start", "beginning") or word == "early":
        return "early"
    if pos == "middle" or word == "mid":
        return "mid"
    return "late"


def _week_of(ctx: _Ctx, win: _Win, how: str, ordinal: str | None) -> _Win:
    if ordinal is not None:
        if ordinal in _ORDINAL_WEEKS:
            first = ctx.local_date(win[0]) + timedelta(days=7 * _ORDINAL_WEEKS[ordinal])
        else:
            first = ctx.last_local_date(win[1]) - timedelta(days=6)
        return ctx.days(first, first + timedelta(days=7))
    d = ctx.local_date(win[0])
    first = d if how != "of" or d.weekday() == 6 else d - timedelta(days=d.weekday())
    return ctx.days(first, first + timedelta(days=7))


def _offset(ctx: _Ctx, win: _Win, m: re.Match[str]) -> _Win | None:
    count = _count(m.group("num"))
    if count is None:
        return None
    unit, mult = _unit(m.group("unit"))
    lo, hi = count[0] * mult, count[1] * mult
    before = m.group("dir").lower().startswith(("before", "prior", "earlier"))
    if unit in _TIME_UNITS:
        step = _TIME_UNITS[unit]
        if before:
            return win[0] - step * hi, win[0] - step * lo + step
        return win[1] + step * (lo - 1), win[1] + step * hi
    if before:
        base = ctx.local_date(win[0])
        return ctx.at(_shift(base, unit, -hi)), ctx.at(_shift(base, unit, -lo) + _DAY)
    base = ctx.last_local_date(win[1])
    return ctx.at(_shift(base, unit, lo)), ctx.at(_shift(base, unit, hi) + _DAY)


def _open(ctx: _Ctx, win: _Win, word: str) -> tuple[_Win, bool]:
    """The open-ended window and whether it now depends on the reference."""
    start, end = win
    word = " ".join(word.lower().split())
    if word in ("since", "ever since"):
        return ((start, ctx.ref), True) if start < ctx.ref else (win, False)
    if word in ("after", "later than"):
        return (end, clamped_add(end, OPEN_SPAN)), False
    if word in ("before", "prior to", "earlier than"):
        return (clamped_add(start, -OPEN_SPAN), start), False
    return (clamped_add(start, -OPEN_SPAN), end), False


def _extend_left(text: str, x: _Expr, floor: int, ctx: _Ctx) -> None:
    """Grow ``x`` leftwards over the modifiers in front of it, innermost first
    ("since | the week of | 12 March", "in | early | May")."""
    for _ in range(6):
        lo = max(floor, x.s - _TAIL)
        tail = text[lo : x.s]
        if not tail or (not tail[-1].isspace() and not tail.endswith("-")):
            break
        m = _P_EDGE.search(tail)
        if m:
            which = _edge_kind(m)
            x.wins = [_edge(ctx, w, which) for w in x.wins]
        elif m := _P_WEEK_OF.search(tail):
            how = m.group("w").lower()
            ordinal = m.group("ord").lower() if m.group("ord") and how == "of" else None
            x.wins = [_week_of(ctx, w, how, ordinal) for w in x.wins]
        elif m := _P_OFFSET.search(tail):
            shifted = [_offset(ctx, w, m) for w in x.wins]
            x.wins = [w for w in shifted if w is not None]
        elif m := _P_OPEN.search(tail):
            word = m.group("w")
            opened = [_open(ctx, w, word) for w in x.wins]
            x.wins = [w for w, _ in opened]
            x.relative = x.relative or any(rel for _, rel in opened)
        elif m := _P_PREP.search(tail):
            x.s = lo + m.start()
            if m.group("w").lower() not in _NON_SATISFYING_PREPS:
                x.need = _OK
            break
        else:
            break
        x.s = lo + m.start()
        x.need = _OK
    m = _P_RANGE_OPEN.search(text, max(floor, x.s - _TAIL), x.s)
    if m:
        x.range_s = m.start()
        if x.need == _NEEDS_PREP:
            x.need = _RANGE_ONLY


def _merge_ranges(text: str, exprs: list[_Expr]) -> list[_Expr]:
    out: list[_Expr] = []
    i = 0
    while i < len(exprs):
        a = exprs[i]
        if i + 1 < len(exprs) and a.range_s is not None and a.wins:
            b = exprs[i + 1]
            if b.wins and _RANGE_GAP.fullmatch(text, a.e, b.s):
                (a0, a1), (b0, b1) = a.wins[0], b.wins[0]
                out.append(
                    _Expr(a.range_s, b.e, [(min(a0, b0), max(a1, b1))], a.relative or b.relative)
                )
                i += 2
                continue
        out.append(a)
        i += 1
    return out


def _longest_first(spans: Sequence[tuple[int, int]]) -> list[int]:
    """Indices of a non-overlapping subset of ``spans``, longest (then leftmost) first, in
    text order. Bisection keeps pathological inputs with thousands of hits near n log n."""
    starts: list[int] = []  # chosen spans, sorted by start; they never overlap
    ends: list[int] = []
    picked: list[tuple[int, int]] = []
    for i in sorted(range(len(spans)), key=lambda i: (spans[i][0] - spans[i][1], spans[i][0])):
        s, e = spans[i]
        k = bisect.bisect_right(starts, s)
        if (k > 0 and ends[k - 1] > s) or (k < len(starts) and starts[k] < e):
            continue
        starts.insert(k, s)
        ends.insert(k, e)
        picked.append((s, i))
    return [i for _, i in sorted(picked)]


def _pick_longest(cands: list[_Expr]) -> list[_Expr]:
    return [cands[i] for i in _longest_first([(c.s, c.e) for c in cands])]


# --- anchored expressions --------------------------------------------------------------

_DET = r"(?:the|our|my|your|their|his|her|its|this|that|these|those)"
_STOP = (
    r"a|an|the|and|or|but|nor|so|yet|then|than|when|whenever|while|where|which|who|whom|"
    r"whose|what|why|how|that|this|these|those|if|because|as|is|are|was|were|be|been|"
    r"being|am|do|does|did|done|has|have|had|will|would|shall|should|can|could|may|might|"
    r"must|i|me|we|us|you|he|him|she|her|it|they|them|there|here|not|no|to|of|in|on|at|"
    r"by|for|from|with|about|into|onto|over|under|between|through|during|since|before|"
    r"after|until|till|up|down|out|off|again|also|just|only|very|ago|last|next|every|each|"
    r"any|some|all|my|our|your|their|his|its"
)
_W = rf"(?!(?:{_STOP})\b)[^\W_][\w'’.-]*(?<![.'’-])"
_ANCHOR = (
    rf"(?P<anchor>(?:{_DET}\s+)?{_W}(?:\s+{_W}){{0,2}}"
    rf"(?:\s+of\s+(?:{_DET}\s+)?{_W}(?:\s+{_W})?)?)"
)
_ANCHORED_OFFSET = _LazyPattern(
    rf"\b(?P<num>{_NUM}|the)\s+(?P<unit>{_UNIT})\s+(?P<dir>before|after|prior\s+to)\s+{_ANCHOR}",
    re.IGNORECASE,  # unicode: event names may be "the Zürich offsite"
)
_ANCHORED_OPEN = _LazyPattern(
    rf"\b(?P<dir>ever\s+since|since|before|after|prior\s+to|until|till)\s+"
    rf"(?=(?:{_DET})\s){_ANCHOR}",
    re.IGNORECASE,
)


def _anchored_offset(m: re.Match[str]) -> tuple[timedelta, timedelta] | None:
    count = _count(m.group("num"))
    if count is None:
        return None
    unit, mult = _unit(m.group("unit"))
    step = _APPROX_UNITS[unit]
    lo, hi = count[0] * mult, count[1] * mult
    span = step * (hi - lo + 1)
    if m.group("dir").lower().startswith(("before", "prior")):
        return -(step * hi) - step / 2, span
    return step * lo - step / 2, span


def _anchored(
    text: str, lo: int, hi: int, ctx: _Ctx, with_offset: bool
) -> list[tuple[int, int, TimeWindow]]:
    cands: list[tuple[int, int, TimeWindow]] = []
    bounds = (clamped_add(ctx.ref, -OPEN_SPAN), clamped_add(ctx.ref, OPEN_SPAN))
    patterns = (_ANCHORED_OFFSET, _ANCHORED_OPEN) if with_offset else (_ANCHORED_OPEN,)
    for pattern in patterns:
        for m in pattern.finditer(text, lo, hi):
            if pattern is _ANCHORED_OFFSET:
                offset_span = _anchored_offset(m)
                if offset_span is None:
                    continue
                offset, span = offset_span
            elif m.group("dir").lower() in ("before", "prior to", "until", "till"):
                offset, span = -OPEN_SPAN, OPEN_SPAN
            else:
                offset, span = timedelta(0), OPEN_SPAN
            window = TimeWindow(
                start=bounds[0],
                end=bounds[1],
                text=m.group(0),
                kind="anchored",
                anchor=m.group("anchor"),
                offset=offset,
                span=span,
                pos=(m.start(), m.end()),
            )
            cands.append((m.start(), m.end(), window))
    return [cands[i] for i in _longest_first([(c[0], c[1]) for c in cands])]


# --- public API ------------------------------------------------------------------------


def parse_time_expressions(text: str, reference: datetime) -> list[TimeWindow]:
    """Every time expression in ``text``, resolved against ``reference``, in text order.

    Never raises: unparseable or out-of-range pieces are skipped. Every window has
    ``start < end``, both timezone-aware UTC. An ambiguous numeric date yields two windows
    with the same ``text``/``pos``. See the module docstring for the rules.
    """
    if not text:
        return []
    tokens = set(_TOKEN.findall(text.lower()))
    has_digit = _DIGIT.search(text) is not None
    rules = [rule for rule in _RULES if rule.applies(tokens, has_digit)]
    anchored = not _ANCHOR_OPEN_WORDS.isdisjoint(tokens)
    if not rules and not anchored:
        return []
    try:
        ctx = _Ctx(reference)
    except (OverflowError, ValueError):
        return []

    atoms: list[_Expr] = []
    for rule in rules:
        for m in rule.pattern.finditer(text):
            try:
                x = rule.handler(m, ctx)
            except (ValueError, OverflowError):
                continue
            if x is not None and x.wins:
                atoms.append(x)

    exprs = _pick_longest(atoms)
    floor = 0
    for x in exprs:
        try:
            _extend_left(text, x, floor, ctx)
        except (ValueError, OverflowError):
            x.wins = []
        floor = x.e
    exprs = [x for x in _merge_ranges(text, exprs) if x.need == _OK and x.wins]
    for x in exprs:
        if text.startswith(_POSSESSIVE, x.e):
            x.e += 2

    found: list[tuple[int, int, TimeWindow]] = []
    for x in exprs:
        kind: TimeKind = "relative" if x.relative else "absolute"
        for start, end in x.wins:
            if start < end:
                window = TimeWindow(start, end, text[x.s : x.e], kind, pos=(x.s, x.e))
                found.append((x.s, x.e, window))

    if anchored:
        with_offset = not _ANCHOR_OFFSET_WORDS.isdisjoint(tokens) and not _UNIT_WORDS.isdisjoint(
            tokens
        )
        gaps = [0, *(p for x in exprs for p in (x.s, x.e)), len(text)]
        for lo, hi in zip(gaps[::2], gaps[1::2], strict=True):
            if hi - lo > 8:
                found.extend(_anchored(text, lo, hi, ctx, with_offset))
    found.sort(key=lambda f: f[0])
    return [window for _, _, window in found]


_WS = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
_REPEATED_SEPARATORS = re.compile(r"([,;:])(?:\s*[,;:])+")


def strip_time_expressions(text: str, windows: Sequence[TimeWindow]) -> str:
    """``text`` without the spans of ``windows``, whitespace collapsed and separators left
    dangling by a removed span tidied ("Yesterday, what broke?" -> "what broke?").

    Spans come from ``TimeWindow.pos`` when it still matches ``text``; otherwise the first
    occurrence of ``TimeWindow.text`` is cut. Pass only the windows you act on: an
    anchored window you could not resolve may be worth keeping in the query."""
    spans: list[tuple[int, int]] = []
    for w in windows:
        p = w.pos
        if p is not None and 0 <= p[0] < p[1] <= len(text) and text[p[0] : p[1]] == w.text:
            spans.append(p)
        elif w.text:
            i = text.find(w.text)
            if i >= 0:
                spans.append((i, i + len(w.text)))
    if not spans:
        return _WS.sub(" ", text).strip()
    pieces: list[str] = []
    cursor = 0
    for s, e in sorted(spans):
        if s > cursor:
            pieces.append(text[cursor:s])
        cursor = max(cursor, e)
    pieces.append(text[cursor:])
    out = _WS.sub(" ", " ".join(pieces)).strip()
    out = _SPACE_BEFORE_PUNCT.sub(r"\1", out)
    out = _REPEATED_SEPARATORS.sub(r"\1", out)
    return out.strip(" ,;:")
