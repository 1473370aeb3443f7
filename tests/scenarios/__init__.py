"""The scenario suites are a package so that their ``conftest`` is imported as
``scenarios.conftest``: as a plain ``conftest`` it would take the place of
``tests/conftest.py`` in ``sys.modules``, and the test modules that import helpers from
``conftest`` would then fail to collect in a full run. The suites import ``story`` as a
top-level module, so this folder goes on the path (last: it shadows nothing)."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)
