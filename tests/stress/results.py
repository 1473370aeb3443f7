"""Each stress run writes its figures into one section of tests/stress/RESULTS.md.

A section is replaced whole on every run (between its two markers), so the file always
holds the latest figures of every suite with the date and the command that produced them.
Several suites may finish at once: a lock file serialises the read-modify-write.
"""

from __future__ import annotations

import fcntl
import os
import platform
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADER = (
    "# Stress results\n\n"
    "Written by `make stress` (tests/stress); each section is replaced by its suite's latest\n"
    "run. Counts are what the run observed, not targets.\n"
)


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def record(
    section: str,
    title: str,
    command: str,
    figures: Mapping[str, object],
    notes: str = "",
) -> None:
    """Replace ``section`` in RESULTS.md with a table of ``figures`` (name -> value)."""
    start, end = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = "\n".join(f"| {name} | {value} |" for name, value in figures.items())
    body = (
        f"{start}\n## {title}\n\n"
        f"{when} · `{command}` · {machine()}\n\n"
        f"| figure | value |\n|---|---|\n{rows}\n"
        + (f"\n{notes.strip()}\n" if notes.strip() else "")
        + f"{end}"
    )
    lock = RESULTS.with_suffix(".lock")
    with lock.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        text = RESULTS.read_text() if RESULTS.exists() else HEADER
        if start in text and end in text:
            head, rest = text.split(start, 1)
            _, tail = rest.split(end, 1)
            text = head + body + tail
        else:
            text = text.rstrip("\n") + "\n\n" + body + "\n"
        RESULTS.write_text(text)
