"""For ``bench_http.py --variants``: with this folder on ``PYTHONPATH``, the modules named
in ``EPISODIC_BENCH_WITHOUT`` (comma-separated) cannot be imported in any process that
starts, the server's recall processes included, as on an install without them."""

import os
import sys

for _name in filter(None, os.environ.get("EPISODIC_BENCH_WITHOUT", "").split(",")):
    sys.modules[_name.strip()] = None  # type: ignore[assignment]
