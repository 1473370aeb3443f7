"""Decay and reinforcement: the nightly recompute of every active memory's importance.

Two formulas, both pure functions in ``episodic.scoring.decay`` that the store evaluates
set-based in SQL (one UPDATE per chunk of rows, never a Python loop over memories):

- ``crewship`` (seed 000, the default):
  ``clamp01(base x max(0.1, 1 - age_days / 180) x (1 + log2(references + 1) / 8))``;
- ``prominence`` (seed 001, ``prominence_importance``):
  ``clamp01(base x max(0.1, exp(-ln 2 / 90 x age_days)) x (1 + reinforcement_count))``.

``base`` is the memory's base importance (admission's type, severity and priority
bonuses) and ``age_days`` is ``now - ts``. Two signals of use, kept apart as their seeds
keep them: ``references`` is seed 000's reference count, which every recall that returns
the memory raises by one (``Store.mark_referenced``); ``reinforcement_count`` (payload)
is seed 001's, raised by one at the end of each session (conversation) that retrieved
the memory, however often it did (``Store.reinforce_session``). Stored importance stays
in [0, 1] under both formulas. The job is idempotent for the same ``now``; a second run
writes nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from episodic.errors import InvalidInput
from episodic.store.upkeep import DECAY_FORMULAS, UpkeepStore

JOB = "decay"


def check_formula(formula: str) -> str:
    if formula not in DECAY_FORMULAS:
        raise InvalidInput(
            "formula", f"unknown decay formula {formula!r}; use {' or '.join(DECAY_FORMULAS)}"
        )
    return formula


def run_decay(
    store: UpkeepStore, now: datetime, *, formula: str = "crewship", workspace: str | None = None
) -> dict[str, Any]:
    """Recompute importance; returns what changed (for the run log and ``--json``)."""
    check_formula(formula)
    changed = store.decay_importance(now, formula=formula, workspace_id=workspace)
    return {"formula": formula, "changed": changed, "now": now.isoformat()}
