"""What ``episodic --version`` prints, in a module of its own: ``episodic.cli.main``
answers ``--version`` from here before it loads typer and the commands."""

from __future__ import annotations

import episodic
from episodic.extras import DISTRIBUTION


def version_text() -> str:
    """The version, and the name to install it by."""
    return f"episodic {episodic.__version__} ({DISTRIBUTION})"
