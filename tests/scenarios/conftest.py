"""Fixtures every seed's scenario suite shares: a simulated clock and an ``Episodic`` opened
the way a new user opens it (default settings, the real MiniLM model, no LLM)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest
from story import SimClock

from episodic import Episodic

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def pytest_plugin_registered(plugin: object) -> None:
    # pytest imports every conftest.py outside a package as the module "conftest", so
    # loading this one took the name from tests/conftest.py, whose helpers other test
    # modules import (``from conftest import raw_rows``). Registering this file replays
    # this hook for every plugin already loaded, the root conftest among them: give the
    # name back to it.
    if isinstance(plugin, ModuleType) and Path(plugin.__file__ or "").resolve() == ROOT_CONFTEST:
        sys.modules["conftest"] = plugin


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every story runs on the real model: the thresholds the seeds fix are calibrated for it.
    for item in items:
        if "scenarios" in item.nodeid:
            item.add_marker(pytest.mark.model)


@pytest.fixture
def clock() -> SimClock:
    start = (datetime.now(UTC) - timedelta(days=60)).replace(minute=0, second=0, microsecond=0)
    return SimClock(start)


@pytest.fixture
def default_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No EPISODIC_* setting from the machine leaks in: the defaults are what is tested.
    Only the embedding cache goes to the test's own folder."""
    for name in list(os.environ):
        if name.startswith("EPISODIC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("EPISODIC_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def memory(db_url: str, clock: SimClock, default_env: None) -> Iterator[Episodic]:
    """The service as ``Episodic.open(url)`` gives it: every setting at its default."""
    mem = Episodic.open(db_url, clock=clock)
    yield mem
    mem.close()
