"""Workspace isolation, stress-sized: the state machine of tests/isolation_machine.py
explores random (not derandomized) sequences until each backend has run
EPISODIC_STRESS_STEPS steps (default 3000), then writes its counts to RESULTS.md.

    make stress                                  # every stress suite
    .venv/bin/pytest -q tests/stress/test_isolation.py
    EPISODIC_STRESS_STEPS=20000 .venv/bin/pytest -q tests/stress/test_isolation.py
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path
from typing import Any

import pytest
from results import record

from isolation_machine import (
    AGENTS,
    CONVERSATIONS,
    OPS,
    RESOURCES,
    SHARED_IDS,
    STEPS,
    WORKSPACES,
    Backend,
    postgres_backend,
    run,
    sqlite_backend,
)

TARGET = int(os.environ.get("EPISODIC_STRESS_STEPS", "3000"))
STEP_COUNT = 50  # hypothesis' steps per example (a fresh database each)
ROUND = 10  # examples per hypothesis run; runs repeat until the target is reached


def test_isolation_under_thousands_of_random_steps(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    backends: list[Backend] = [
        sqlite_backend(tmp_path),
        postgres_backend(request.getfixturevalue("pg_server").get_uri()),
    ]
    OPS.clear()
    STEPS.clear()
    figures: dict[str, Any] = {}
    failures: list[str] = []
    for backend in backends:
        started = time.monotonic()
        runs = 0
        while STEPS[backend.name] < TARGET and not failures:
            runs += 1
            try:
                run(backend, examples=ROUND, steps=STEP_COUNT, derandomize=False)
            except Exception:  # the falsifying example goes into the notes, then fails
                failures.append(f"{backend.name}:\n{traceback.format_exc()[-3000:]}")
        elapsed = time.monotonic() - started
        figures[f"{backend.name}: steps run"] = STEPS[backend.name]
        figures[f"{backend.name}: examples (fresh databases)"] = runs * ROUND
        figures[f"{backend.name}: seconds"] = round(elapsed, 1)
    recalls = {k.split(":", 1)[1]: v for k, v in OPS.items() if k.startswith("recall:")}
    forgets = {k.split(":", 1)[1]: v for k, v in OPS.items() if k.startswith("forget:")}
    plain = {k: v for k, v in OPS.items() if ":" not in k}
    figures["recalls by policy"] = ", ".join(f"{k} {v}" for k, v in sorted(recalls.items()))
    figures["forgets by kind"] = ", ".join(f"{k} {v}" for k, v in sorted(forgets.items()))
    figures["other operations and outcomes"] = ", ".join(
        f"{k} {v}" for k, v in sorted(plain.items())
    )
    figures["workspaces / agents / resources / conversations / shared ids"] = (
        f"{len(WORKSPACES)} / {len(AGENTS)} / {len(RESOURCES)} / {len(CONVERSATIONS)} / "
        f"{len(SHARED_IDS)} (same names and texts in every workspace)"
    )
    figures["violations found"] = len(failures)
    record(
        "isolation",
        "Workspace isolation (hypothesis state machine, both backends)",
        f"EPISODIC_STRESS_STEPS={TARGET} .venv/bin/pytest -q tests/stress/test_isolation.py "
        "(part of make stress)",
        figures,
        notes=(
            "After every step the raw tables are checked (edges, sources, vectors, "
            "compactions, reviews, episode links, consolidated evidence, every stored text's "
            "owner tag), and each operation's own result: hits, walked hits and rendered "
            "blocks belong to the caller (and its agent under own), dedupe drops match the "
            "caller's own entries, exports hold exactly the workspace, forgets touch no "
            "other workspace and forgotten text never comes back, an id another workspace "
            "holds is refused. Figures are totals over both backends unless named."
            + ("\n\nFirst failure:\n\n```\n" + failures[0] + "\n```" if failures else "")
        ),
    )
    assert not failures, failures[0]
