"""What the supersession suites share: the workspace, the start time and a clock the test
moves (a supersession's times come from it)."""

from __future__ import annotations

from datetime import UTC, datetime

WS = "acme"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now
