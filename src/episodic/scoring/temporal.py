"""Temporal fit: how well a memory's timestamp matches the time windows a query names.

``TimeWindow`` lives here rather than in ``episodic.recall.timeparse`` so that scoring keeps
depending on nothing but the standard library (recall imports scoring, never the reverse).

``time_boost`` formula, per usable window ``w`` (``start`` inclusive, ``end`` exclusive)::

    distance = 0                        if w.start <= ts <= w.end
             = w.start - ts             if ts < w.start
             = ts - w.end               if ts > w.end
    scale    = max(decay_days, min(MAX_SCALE_DAYS, SCALE_RATIO x length_days(w)))
    fit(w)   = exp(-distance_days / scale)
    boost    = inside x (floor + (1 - floor) x max_w fit(w))

- ``ts == end`` counts as distance 0, so the curve is continuous at both edges.
- The scale grows with the window: "yesterday" (1 day) decays over ``decay_days`` (1 day by
  default), "last week" over 3.5 days, "May 2023" over 15.5 days, "in 2022" over 90 days
  (the cap). The cap keeps open-ended windows ("before June", a century wide) from making
  every timestamp look nearly inside.
- ``floor`` keeps a memory far outside every window from being zeroed: a misread time
  expression should demote, never erase. ``inside`` scales the whole curve, so the result
  lies in ``[inside x floor, inside]``.
- Several windows: the best fit wins (a query naming two periods is satisfied by either).
- No usable window: exactly 1.0, neutral as a multiplier. Anchored windows whose anchor has
  not been resolved (``kind == "anchored"``) are not usable: their start/end is only the
  range the anchor is searched in. Resolve them first with ``TimeWindow.resolve``.
- Naive datetimes (memory timestamps or window bounds) are taken as UTC rather than raising.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Literal

TimeKind = Literal["absolute", "relative", "anchored"]

SCALE_RATIO = 0.5  # decay scale as a fraction of the window length
MAX_SCALE_DAYS = 90.0
DEFAULT_DECAY_DAYS = 1.0  # smallest decay scale, reached by windows of two days or less
DEFAULT_FLOOR = 0.1  # same floor as seed 000's recency decay

MIN_UTC = datetime.min.replace(tzinfo=UTC)
MAX_UTC = datetime.max.replace(tzinfo=UTC)
_DAY = timedelta(days=1)
_MIN_SCALE = 1e-9  # guards a caller passing decay_days <= 0


def as_utc(dt: datetime) -> datetime:
    """``dt`` in UTC; a naive datetime is taken to already be UTC."""
    if dt.tzinfo is UTC:  # as stored timestamps are read: nothing to convert
        return dt
    if dt.tzinfo is None or dt.utcoffset() is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def clamped_add(dt: datetime, delta: timedelta) -> datetime:
    """``dt + delta``, pinned to the representable range instead of raising OverflowError:
    open-ended windows are a century wide and references may sit near the calendar's ends."""
    try:
        return dt + delta
    except OverflowError:
        return MAX_UTC if delta > timedelta(0) else MIN_UTC


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A span of time named in a query: ``[start, end)``, timezone-aware UTC.

    ``kind``:

    - ``"absolute"``: fully specified by the text ("May 2023", "2023-05-08", "in 2022");
    - ``"relative"``: resolved against the query's reference time ("last week", "in May");
    - ``"anchored"``: relative to an event the parser cannot date ("two days before the
      conference"). ``anchor`` is the event phrase as written; the caller searches memories
      for it, takes the best hit's timestamp ``t`` and calls ``resolve(t)``, which yields
      ``[t + offset, t + offset + span)``. Until then ``start``/``end`` only bound where
      the anchor may lie (the reference time +/- a century) and scoring ignores the window.

    ``pos`` is the ``(begin, end)`` character span of ``text`` in the parsed string, so the
    span can be cut out exactly even when the same words occur twice.
    """

    start: datetime
    end: datetime
    text: str
    kind: TimeKind
    anchor: str | None = None
    offset: timedelta | None = None
    span: timedelta | None = None
    pos: tuple[int, int] | None = None

    @property
    def resolved(self) -> bool:
        return self.kind != "anchored"

    def resolve(self, anchor_time: datetime) -> TimeWindow:
        """The concrete window once the anchor event is dated (kind becomes "relative";
        anchor, offset and span are kept for tracing). Non-anchored windows come back
        unchanged."""
        if self.kind != "anchored" or self.offset is None or self.span is None:
            return self
        start = clamped_add(as_utc(anchor_time), self.offset)
        end = clamped_add(start, self.span)
        if end <= start:
            return self
        return replace(self, start=start, end=end, kind="relative")


def window_fit(memory_ts: datetime, window: TimeWindow, *, decay_days: float) -> float:
    """``exp(-distance_days / scale)`` for one window (1.0 inside); see the module docstring."""
    ts = as_utc(memory_ts)
    start, end = as_utc(window.start), as_utc(window.end)
    if ts < start:
        distance = start - ts
    elif ts > end:
        distance = ts - end
    else:
        return 1.0
    length_days = max(0.0, (end - start) / _DAY)
    scale = max(decay_days, min(MAX_SCALE_DAYS, SCALE_RATIO * length_days), _MIN_SCALE)
    return math.exp(-(distance / _DAY) / scale)


def time_boost(
    memory_ts: datetime,
    windows: Sequence[TimeWindow],
    *,
    inside: float = 1.0,
    decay_days: float = DEFAULT_DECAY_DAYS,
    floor: float = DEFAULT_FLOOR,
) -> float:
    """Multiplier for a memory stamped ``memory_ts`` given the query's time windows:
    ``inside`` within a window, decaying smoothly towards ``inside x floor`` with the
    distance outside, 1.0 when no window is usable. Formula in the module docstring."""
    return time_booster(windows, inside=inside, decay_days=decay_days, floor=floor)(memory_ts)


def time_booster(
    windows: Sequence[TimeWindow],
    *,
    inside: float = 1.0,
    decay_days: float = DEFAULT_DECAY_DAYS,
    floor: float = DEFAULT_FLOOR,
) -> Callable[[datetime], float]:
    """``time_boost`` against ``windows`` as a function of a memory's time, each window's
    bounds and decay scale worked out once: a recall boosts up to a few hundred
    candidates against the same windows. The same arithmetic as ``window_fit``, so the
    same values."""
    usable = [w for w in windows if w.kind != "anchored"]
    if not usable:
        return _neutral
    spans: list[tuple[datetime, datetime, float]] = []
    for w in usable:
        start, end = as_utc(w.start), as_utc(w.end)
        length_days = max(0.0, (end - start) / _DAY)
        spans.append(
            (
                start,
                end,
                max(decay_days, min(MAX_SCALE_DAYS, SCALE_RATIO * length_days), _MIN_SCALE),
            )
        )
    exp = math.exp

    def boost(memory_ts: datetime) -> float:
        ts = as_utc(memory_ts)
        best = 0.0
        for start, end, scale in spans:
            if ts < start:
                fit = exp(-((start - ts) / _DAY) / scale)
            elif ts > end:
                fit = exp(-((ts - end) / _DAY) / scale)
            else:
                return inside * (floor + (1.0 - floor) * 1.0)
            if fit > best:
                best = fit
        return inside * (floor + (1.0 - floor) * best)

    return boost


def _neutral(memory_ts: datetime) -> float:
    return 1.0
