"""docs/grafana/episodic.json queries only metrics the server exposes: a renamed or
dropped metric fails here, not on an operator's empty panel."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from episodic import metrics
from episodic.store import open_store

DASHBOARD = Path(__file__).resolve().parents[1] / "docs" / "grafana" / "episodic.json"
SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def queried() -> set[str]:
    panels = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    exprs = [t["expr"] for p in panels for t in p["targets"]]
    return {name for e in exprs for name in re.findall(r"\bepisodic_[a-z_]+", e)}


def family(name: str) -> str:
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def test_every_metric_the_dashboard_queries_exists(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/m.db")
    try:
        page = metrics.exposition(metrics.StoreFigures(store)).decode()
    finally:
        store.close()
    exposed = {f.name for f in text_string_to_metric_families(page)}
    names = queried()
    assert len(names) >= 8
    missing = {n for n in names if family(n) not in exposed}
    assert missing == set()
    # The check can fail: a name the server does not expose is caught.
    assert family("episodic_no_such_metric_total") not in exposed
