"""Names a package hands out without importing their modules up front: a package's
``__getattr__`` asks ``load`` for a name it does not hold yet, so ``import episodic`` and
each command load only the modules they go on to use."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any


def load(module: str, homes: Mapping[str, str], namespace: dict[str, Any], name: str) -> Any:
    """``name`` from the module ``homes`` names for it, kept in ``namespace`` (the asking
    module's globals) so the next lookup is a plain attribute."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    value = getattr(import_module(home), name)
    namespace[name] = value
    return value
