"""Two versions of episodic measured side by side: the ``src/`` of a git revision
(``git archive``) and this checkout's, each benchmark child in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent


def extract_src(rev: str, into: Path) -> Path:
    """``src/`` of ``rev`` written under ``into``; its path."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def run_child(
    src: Path, code: str, args: Sequence[str], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Run ``code`` (Python that prints one JSON object last, ``sys.argv[1:]`` its
    ``args``) with ``src`` and the benchmarks first on the path; the object."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**os.environ, **(env or {}), "PYTHONPATH": f"{src}:{HERE}"},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
