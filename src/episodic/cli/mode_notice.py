"""A sparse-only recall said once per command. The ``episodic.mode`` logger says in full
why recall runs without vectors and how to fix it, once per process (its first
sparse-only observation); the recall's ``warnings`` and an index sweep's ``error`` say
the same again, shorter. A one-shot command is one process, so it prints the full line
and leaves out the short ones that repeat it. Through a server (``EPISODIC_URL``)
nothing is logged here and the short warning is all the user gets: it is printed."""

from __future__ import annotations

import logging
import sys

MODE_LOGGER = "episodic.mode"


class _Notice(logging.Filter):
    """Keeps the last mode line the logger wrote to this command's stderr while recall is
    sparse-only (None once it says the embedder answers again)."""

    def __init__(self) -> None:
        super().__init__()
        self.said: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        line = record.getMessage()
        self.said = line if "sparse-only" in line and _reaches_stderr() else None
        return True


def _reaches_stderr() -> bool:
    """Whether a line logged now is printed on the stderr the command's warnings go to:
    the root handler the CLI sets up writes there, but a host that took logging over (a
    test runner capturing logs, an application calling the CLI in-process) may send it
    elsewhere, and then the short warning is all the user sees."""
    return any(
        isinstance(h, logging.StreamHandler) and h.stream is sys.stderr
        for h in logging.getLogger().handlers
    )


_notice = _Notice()


def watch_mode_line() -> None:
    """Note each line the mode logger writes from now on (the CLI calls it once it has
    set up logging, at the start of every command)."""
    # A mode line is logged once per process: one an earlier command in this process
    # printed is not this command's.
    _notice.said = None
    logger = logging.getLogger(MODE_LOGGER)
    if _notice not in logger.filters:
        logger.addFilter(_notice)


def repeats_mode_line(warning: str) -> bool:
    """Whether ``warning`` says again what the mode line this process logged said: that
    recall is sparse-only, or the embedder's error it quoted."""
    said = _notice.said
    return said is not None and ("sparse-only" in warning or warning.rstrip(". ") in said)
