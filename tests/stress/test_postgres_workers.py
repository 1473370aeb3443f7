"""The multi-worker indexing scenario of tests/test_postgres_workers.py with the real
local model: 4 worker processes, 20,000 memories, one worker SIGKILLed mid-sweep while it
holds a claim through a real embedding batch."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from results import record

from test_postgres_workers import MEMORIES, WORKERS, four_workers_one_killed


def test_four_workers_with_the_local_model(pg_url: str, tmp_path: Path) -> None:
    four_workers_one_killed(pg_url, tmp_path, "local")
    record(
        "workers",
        "PostgreSQL: four indexing workers, one killed",
        "make stress (pytest tests/stress/test_postgres_workers.py)",
        {
            "memories": f"{MEMORIES:,}",
            "worker processes (real local model)": WORKERS,
            "workers SIGKILLed mid-sweep": 1,
            "memories indexed twice": 0,
            "memories missing a vector": 0,
        },
    )
