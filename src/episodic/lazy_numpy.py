"""numpy, imported when first used. An agent's hook runs a keyword-only recall in a new
process before every turn, and that recall computes with no vector: importing numpy was
a third of its time. The modules on that path that compute with numpy elsewhere take it
from here::

    if TYPE_CHECKING:
        import numpy as np
    else:
        from episodic.lazy_numpy import np

so type checkers see numpy itself, and at run time the first ``np.<name>`` imports it.
Module-level names built from numpy (``npt.NDArray`` aliases, dtypes) would import it
with the module: those are written as strings or plain values instead."""

from __future__ import annotations

import importlib
import types
from typing import Any


class _Lazy(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        module = importlib.import_module(self.__name__)
        # From now on names are found in this object's own namespace, without this hook:
        # as fast as the module's.
        self.__dict__.update(vars(module))
        return getattr(module, name)


np = _Lazy("numpy")
