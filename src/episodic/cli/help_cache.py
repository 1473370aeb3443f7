"""``episodic --help`` printed from a copy of what typer printed last time in the same
setting, so the list of commands answers without loading typer and rich.

Typer draws the help with rich for the terminal it finds (its width, colours, encoding)
and from the command modules' help texts. A copy is kept under the user's cache folder
for each such setting: the key (``setting``) holds the episodic version, the size and
time of every command module, typer's and rich's, the terminal's size and whether
output is a terminal, its encoding, and every variable typer and rich read. Anything
else, or a copy that cannot be read or written, is typer's to print, as before.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from importlib.util import find_spec
from pathlib import Path
from typing import Any, TextIO

import episodic

# The variables typer and rich read to decide width, colour and terminal features.
VARIABLES = (
    "COLUMNS",
    "LINES",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "PY_COLORS",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TERMINAL_WIDTH",
    "GITHUB_ACTIONS",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "DATABRICKS_RUNTIME_VERSION",
)
PREFIXES = ("TYPER", "_TYPER", "RICH", "CLICK")
# Copies kept; the oldest go first (one a terminal width in use, in practice a few).
KEEP = 20


def setting(argv: list[str]) -> str:
    """What the printed help depends on, as one string (its hash names the copy)."""
    parts: list[object] = [argv, Path(sys.argv[0]).name, episodic.__version__, sys.platform]
    with os.scandir(Path(__file__).parent) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.endswith(".py"):
                stat = entry.stat()
                parts.append((entry.name, stat.st_mtime_ns, stat.st_size))
    for package in ("typer", "rich"):
        spec = find_spec(package)
        origin = spec.origin if spec else None
        parts.append((package, origin, os.stat(origin).st_mtime_ns if origin else None))
    parts.append(sorted((k, v) for k, v in os.environ.items() if _read_by_typer_or_rich(k)))
    parts.append((_isatty(sys.stdout), _isatty(sys.stdin), getattr(sys.stdout, "encoding", None)))
    parts.append(_terminal_size())
    return repr(parts)


def _read_by_typer_or_rich(name: str) -> bool:
    return name in VARIABLES or name.startswith(PREFIXES)


def _isatty(stream: TextIO | None) -> bool:
    with suppress(AttributeError, OSError, ValueError):
        return bool(stream and stream.isatty())
    return False


def _terminal_size() -> tuple[int, int] | None:
    for fd in (0, 1, 2):
        with suppress(OSError, ValueError):
            size = os.get_terminal_size(fd)
            return size.columns, size.lines
    return None


def folder() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("episodic", appauthor=False)) / "help"


def _copy(argv: list[str]) -> Path:
    name = hashlib.sha256(setting(argv).encode()).hexdigest()[:32]
    return folder() / f"{name}.txt"


def print_cached(argv: list[str]) -> bool:
    """Print the copy of ``argv``'s help for this setting; whether there was one."""
    try:
        text = _copy(argv).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    sys.stdout.write(text)
    sys.stdout.flush()
    return True


def run_and_keep(argv: list[str], run: Callable[[], Any]) -> None:
    """``run()`` (typer printing ``argv``'s help), keeping a copy of what it printed when
    it ends as help does (exit status 0)."""
    copy = _copy(argv)
    with _teed() as printed:
        try:
            run()
        except SystemExit as exc:
            if exc.code in (0, None):
                _keep(copy, "".join(printed))
            raise
        _keep(copy, "".join(printed))


def _keep(copy: Path, text: str) -> None:
    if not text:
        return
    with suppress(OSError):  # a cache: without a writable folder, typer prints next time too
        copy.parent.mkdir(parents=True, exist_ok=True)
        part = copy.with_suffix(f".{os.getpid()}.part")
        part.write_text(text, encoding="utf-8")
        os.replace(part, copy)
        kept = sorted(copy.parent.glob("*.txt"), key=lambda p: p.stat().st_mtime)
        for old in kept[:-KEEP]:
            old.unlink(missing_ok=True)


class _Tee:
    """stdout, also keeping what is written (rich asks it for the rest: isatty, encoding)."""

    def __init__(self, stream: TextIO, printed: list[str]) -> None:
        self._stream = stream
        self._printed = printed

    def write(self, text: str) -> int:
        written = self._stream.write(text)  # refuses bytes, as click's probe expects
        self._printed.append(text)
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def _teed() -> Iterator[list[str]]:
    printed: list[str] = []
    stdout = sys.stdout
    sys.stdout = _Tee(stdout, printed)
    try:
        yield printed
    finally:
        sys.stdout = stdout
