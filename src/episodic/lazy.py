"""Imports made when a name is first used, so a command loads only the modules it goes
on to use.

- A package's ``__getattr__`` asks ``load`` for a name it does not hold yet: ``import
  episodic`` imports none of the modules behind its public names.
- ``np`` is numpy, imported at its first ``np.<name>``. An agent's hook runs a
  keyword-only recall in a new process before every turn, and that recall computes with
  no vector: importing numpy was a third of its time. The modules on that path that
  compute with numpy elsewhere take it from here::

      if TYPE_CHECKING:
          import numpy as np
      else:
          from episodic.lazy import np

  so type checkers see numpy itself. Module-level names built from numpy (``npt.NDArray``
  aliases, dtypes) would import it with the module: those are written as strings or
  plain values instead.
"""

from __future__ import annotations

import types
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


class _LazyModule(types.ModuleType):
    """A stand-in for the module of its name, imported at the first attribute asked."""

    def __getattr__(self, name: str) -> Any:
        module = import_module(self.__name__)
        # From now on names are found in this object's own namespace, without this hook:
        # as fast as the module's.
        self.__dict__.update(vars(module))
        return getattr(module, name)


np = _LazyModule("numpy")
