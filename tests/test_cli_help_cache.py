"""``episodic --help`` is printed from a copy of what typer printed in the same setting:
the same text, without loading typer; another width (or version, or variable rich reads)
is another copy; a cache folder that cannot be written still gets the help."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import episodic
from episodic.cli import help_cache

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import sys
sys.argv = ["episodic", *sys.argv[1:]]
from episodic.cli import main
try:
    main()
finally:
    sys.stderr.write("\\nTYPER " + str("typer" in sys.modules) + "\\n")
"""
# The typer app itself, as main ran it before the copy.
TYPER = "import sys; sys.argv = ['episodic', *sys.argv[1:]]; from episodic.cli import app; app()"


def _run(code: str, cache: Path, columns: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "XDG_CACHE_HOME": str(cache),
            "COLUMNS": columns,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def _typer_loaded(done: subprocess.CompletedProcess[str]) -> bool:
    return done.stderr.rsplit("\nTYPER ", 1)[1].strip() == "True"


@pytest.mark.parametrize("columns", ["80", "120"])
def test_help_is_typers_and_the_second_time_needs_no_typer(tmp_path: Path, columns: str) -> None:
    typers = _run(TYPER, tmp_path / "unused", columns, "--help")
    first = _run(PROBE, tmp_path, columns, "--help")
    second = _run(PROBE, tmp_path, columns, "--help")
    assert first.returncode == second.returncode == typers.returncode == 0
    assert first.stdout == second.stdout == typers.stdout
    assert "recall" in second.stdout and "Usage: episodic" in second.stdout
    assert _typer_loaded(first) and not _typer_loaded(second)


def test_another_width_is_another_copy(tmp_path: Path) -> None:
    narrow = _run(PROBE, tmp_path, "60", "--help")
    wide = _run(PROBE, tmp_path, "140", "--help")
    again = _run(PROBE, tmp_path, "60", "--help")
    assert narrow.stdout != wide.stdout
    assert again.stdout == narrow.stdout and not _typer_loaded(again)
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 60
    assert len(list((tmp_path / "episodic" / "help").glob("*.txt"))) == 2


def test_a_cache_that_cannot_be_written_still_gets_the_help(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    for _ in range(2):
        done = _run(PROBE, blocked, "80", "--help")
        assert done.returncode == 0 and "Usage: episodic" in done.stdout
        assert _typer_loaded(done)


def test_the_setting_holds_the_version_the_width_and_what_rich_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = help_cache.setting(["--help"])
    monkeypatch.setenv("COLUMNS", "61")
    wider = help_cache.setting(["--help"])
    monkeypatch.setenv("NO_COLOR", "1")
    plain = help_cache.setting(["--help"])
    monkeypatch.setattr(episodic, "__version__", "0.0.0-other")
    other = help_cache.setting(["--help"])
    assert len({base, wider, plain, other}) == 4
    assert help_cache.setting(["--help"]) == other
