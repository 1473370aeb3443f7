"""A sparse-only recall said once per command. The ``episodic.mode`` logger says in full
why recall runs without vectors and how to fix it, once per process (its first
sparse-only observation); the recall's ``warnings`` and an index sweep's ``error`` say
the same again, shorter. A one-shot command is one process, so it prints the full line
and leaves out the short ones that repeat it. Through a server (``EPISODIC_URL``)
nothing is logged here and the short warning is all the user gets: it is printed."""

from __future__ import annotations

import logging

MODE_LOGGER = "episodic.mode"


class _Notice(logging.Filter):
    """Keeps the last mode line the logger wrote while recall is sparse-only (None once
    it says the embedder answers again)."""

    def __init__(self) -> None:
        super().__init__()
        self.said: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        line = record.getMessage()
        self.said = line if "sparse-only" in line else None
        return True


_notice = _Notice()


def watch_mode_line() -> None:
    """Note each line the mode logger writes from now on (the CLI calls it once it has
    set up logging)."""
    logger = logging.getLogger(MODE_LOGGER)
    if _notice not in logger.filters:
        logger.addFilter(_notice)


def repeats_mode_line(warning: str) -> bool:
    """Whether ``warning`` says again what the mode line this process logged said: that
    recall is sparse-only, or the embedder's error it quoted."""
    said = _notice.said
    return said is not None and ("sparse-only" in warning or warning.rstrip(". ") in said)
