"""What every area of the service shares: the store, the settings, the clock and the
models. One instance per ``Episodic``; the areas read it at call time, so a clock the
facade is given later (a test's simulated day) is every area's clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from episodic.config import Settings
from episodic.service.models import Models
from episodic.store.base import Store


@dataclass(slots=True)
class Context:
    store: Store
    settings: Settings
    clock: Callable[[], datetime]
    models: Models
