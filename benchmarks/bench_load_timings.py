"""Where a request's time goes inside the server under the 64-client mixed load.

    .venv/bin/python benchmarks/bench_load_timings.py [--db URL] [--seconds 120]
        [--clients 64] [--keep FILE.jsonl]

Runs tests/stress/load.py (the driver of `make stress`'s load test) against a server that
times each request's steps (server_timings/sitecustomize.py: the lanes' slots, the key
lookup, the write methods, and on SQLite the read connections, the writer and the WAL
checkpoints). Prints the driver's own figures, then per kind of request (writes: events,
messages, notes; forgets; recalls and renders) p50/p95/p99 of the server's total and of
each step, the mean of each step over the slowest 5%, the forgets' longest checkpoints,
and the event loop's lag. The default database is a new SQLite file in a temporary folder.

The wrappers slow every request a little (and lengthen what waits on a slow request), so
compare figures of runs that both have them, not with `make stress`'s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HOOK = Path(__file__).resolve().parent / "server_timings"
WRITES = {"/v1/events": "events", "/v1/messages": "messages", "/v1/memories": "notes"}
READS = {"/v1/recall": "recalls", "/v1/render": "renders"}


def kind(line: dict[str, Any]) -> str | None:
    path, method = line["path"], line["method"]
    if method == "POST" and path in WRITES:
        return WRITES[path]
    if path.startswith("/v1/conversations/") and path.endswith("/messages") and method == "POST":
        return "messages"
    if path == "/v1/forget":
        return "forgets"
    return READS.get(path)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def report(lines: list[dict[str, Any]]) -> None:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    lags: list[float] = []
    for line in lines:
        if "lag" in line:
            lags += line["lag"]
            continue
        name = kind(line)
        if name is not None:
            groups[name].append(line)
            if name in ("events", "messages", "notes"):
                groups["all writes"].append(line)
    for name in ("all writes", "events", "messages", "notes", "forgets", "recalls", "renders"):
        group = groups.get(name, [])
        if not group:
            continue
        steps = sorted({k for g in group for k, v in g.items() if isinstance(v, float)})
        steps.remove("total")
        steps.insert(0, "total")
        slowest = sorted(group, key=lambda g: g["total"])[-max(1, len(group) // 20) :]
        print(f"\n{name}: {len(group)} requests (ms)")
        print("| step | p50 | p95 | p99 | mean of the slowest 5% |")
        print("|---|---|---|---|---|")
        for step in steps:
            values = [g.get(step, 0.0) for g in group]
            slow = statistics.mean(g.get(step, 0.0) for g in slowest)
            print(
                f"| {step} | {pct(values, 0.5):.1f} | {pct(values, 0.95):.1f} | "
                f"{pct(values, 0.99):.1f} | {slow:.1f} |"
            )
    checkpoints = sorted(g.get("checkpoint", 0.0) for g in groups.get("forgets", []))
    if checkpoints:
        print(f"\nforgets' longest WAL checkpoints (ms): {[round(c) for c in checkpoints[-8:]]}")
    if lags:
        print(
            f"\nevent loop lag (ms, {len(lags)} beats): p50 {pct(lags, 0.5):.1f}, "
            f"p95 {pct(lags, 0.95):.1f}, p99 {pct(lags, 0.99):.1f}, max {max(lags):.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="sqlite:///path.db or postgresql://... (default: new)")
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--keep", type=Path, help="keep the timings (JSON lines) here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="episodic-timings-") as tmp:
        db = args.db or f"sqlite:///{tmp}/load.db"
        out = args.keep or Path(tmp) / "timings.jsonl"
        out.unlink(missing_ok=True)
        path = os.pathsep.join(p for p in (str(HOOK), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path, "EPISODIC_TIMINGS_OUT": str(out)}
        command = [
            sys.executable,
            str(ROOT / "tests" / "stress" / "load.py"),
            "--db",
            db,
            "--seconds",
            str(args.seconds),
            "--clients",
            str(args.clients),
        ]
        print(f"$ {' '.join(command)}   (load average before: {os.getloadavg()[0]:.2f})")
        subprocess.run(command, env=env, check=False)
        if not out.exists():
            sys.exit("the server wrote no timings: was it started with `serve`?")
        report([json.loads(line) for line in out.read_text().splitlines() if line.strip()])


if __name__ == "__main__":
    main()
