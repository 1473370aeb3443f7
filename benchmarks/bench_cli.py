"""How long an ``episodic`` command takes from a fresh process: ``--version``, ``--help``,
``recall`` and ``render`` keyword-only (EPISODIC_EMBEDDER=none), the same with the local
model (its first call in a new process loads it), and ``render`` through a running server
(EPISODIC_URL and EPISODIC_KEY), side by side with a git revision's ``src/``.

Each command runs ``--runs`` times per tree, the trees in turns, each run a new Python
process started as the ``episodic`` script starts (``episodic.cli.main``). Both trees are
byte-compiled first and the children may read the bytecode (``PYTHONDONTWRITEBYTECODE`` is
dropped from their environment), as ``pip install`` leaves an installed package: without
it every run would compile every module it imports from source. Reports the
median wall time and the median CPU time (user + system) of the process: CPU time moves
less with the machine's load. Each tree gets its own databases, made by its own
``episodic demo`` (keyword-only and, with the model, with vectors).

    .venv/bin/python benchmarks/bench_cli.py                  # against main
    .venv/bin/python benchmarks/bench_cli.py --base main --runs 10
    .venv/bin/python benchmarks/bench_cli.py --base main --this HEAD   # a commit, not edits
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from side_by_side import ROOT, extract_src

ENTRY = "import sys; sys.argv[0] = 'episodic'; from episodic.cli import main; main()"
QUERY = "OOM in checkout after a cache change"
ADMIN = ("--role", "admin", "--json")
QUIET = ("--log-level", "warning")
GOALS = {
    "--version": 0.2,
    "--help": 0.2,
    "recall, keyword-only": 0.6,
    "render, keyword-only": 0.6,
    "recall, local model": 1.5,
    "render, local model": 1.5,
    "render via EPISODIC_URL": 0.3,
}


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    db: str | None  # "sparse" or "vector": the tree's database it needs; None: none
    server: bool = False  # only the tree with the fast path has it


def episodic(src: Path, args: Sequence[str], env: Mapping[str, str]) -> tuple[float, float]:
    """Run ``episodic ARGS`` with ``src`` first on the path: (wall s, CPU s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        env={**child_env(), **env, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"episodic {' '.join(args)} failed: {done.stderr[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_tree(src: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)


def demo_db(src: Path, path: Path, embedder: str) -> str:
    url = f"sqlite:///{path}"
    env = {"EPISODIC_EMBEDDER": embedder}
    episodic(src, ["--db", url, "demo"], env)
    return url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def server(src: Path, url: str) -> Iterator[dict[str, str]]:
    """``episodic serve`` of ``src`` over ``url``; the variables that point a command at it."""
    env = {**child_env(), "PYTHONPATH": str(src), "EPISODIC_EMBEDDER": "none"}
    made = subprocess.run(
        [sys.executable, "-c", ENTRY, "--db", url, "keys", "create", "-w", "acme-shop", *ADMIN],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    secret = json.loads(made.stdout)["key"]
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "--db", url, "serve", "--port", str(port), *QUIET],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("episodic serve did not start")
            time.sleep(0.2)
        yield {"EPISODIC_URL": base, "EPISODIC_KEY": secret}
    finally:
        proc.terminate()
        proc.wait(30)


def cases(model: bool) -> list[Case]:
    sparse = {"EPISODIC_EMBEDDER": "none"}
    local = {"EPISODIC_EMBEDDER": "local"}
    where = ("-w", "acme-shop")
    out = [
        Case("--version", ("--version",), {}, None),
        Case("--help", ("--help",), {}, None),
        Case("recall, keyword-only", ("recall", QUERY, *where), sparse, "sparse"),
        Case("render, keyword-only", ("render", QUERY, *where), sparse, "sparse"),
    ]
    if model:
        out += [
            Case("recall, local model", ("recall", QUERY, *where), local, "vector"),
            Case("render, local model", ("render", QUERY, *where), local, "vector"),
        ]
    out.append(Case("render via EPISODIC_URL", ("render", QUERY, *where), {}, None, server=True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="git revision to compare with")
    parser.add_argument(
        "--this", help="git revision to measure instead of the working tree (edits go on)"
    )
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-model", action="store_true", help="skip the local-model cases")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        work = Path(tmp)
        (work / "base").mkdir()
        trees = {"base": extract_src(args.base, work / "base"), "this": ROOT / "src"}
        if args.this:
            (work / "this").mkdir()
            trees["this"] = extract_src(args.this, work / "this")
        dbs: dict[str, dict[str, str]] = {}
        for name, src in trees.items():
            compile_tree(src)
            dbs[name] = {"sparse": demo_db(src, work / f"{name}-sparse.db", "none")}
            if not args.no_model:
                dbs[name]["vector"] = demo_db(src, work / f"{name}-vector.db", "local")
        load_before = os.getloadavg()
        with server(trees["this"], dbs["this"]["sparse"]) as via:
            table = measure(cases(not args.no_model), trees, dbs, via, args.runs)
        load_after = os.getloadavg()
    base_rev = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.base],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(
        f"episodic commands, fresh process each, median of {args.runs}; base {args.base} "
        f"({base_rev}) vs {args.this or 'this tree'}; load average {load_before[0]:.2f} -> "
        f"{load_after[0]:.2f} on {os.cpu_count()} CPUs"
    )
    print()
    print("| command | base wall s | this wall s | this/base | base CPU s | this CPU s | goal |")
    print("|---|---|---|---|---|---|---|")
    for name, row in table.items():
        b_wall, b_cpu = row.get("base", (None, None))
        t_wall, t_cpu = row["this"]
        ratio = f"{t_wall / b_wall:.2f}" if b_wall else "-"
        print(
            f"| {name} | {_s(b_wall)} | {_s(t_wall)} | {ratio} | {_s(b_cpu)} | {_s(t_cpu)} "
            f"| <= {GOALS[name]:g} |"
        )


def measure(
    todo: Sequence[Case],
    trees: Mapping[str, Path],
    dbs: Mapping[str, Mapping[str, str]],
    via: Mapping[str, str],
    runs: int,
) -> dict[str, dict[str, tuple[float, float]]]:
    """Per case and tree: (median wall, median CPU), the trees run in turns."""
    table: dict[str, dict[str, tuple[float, float]]] = {}
    for case in todo:
        samples: dict[str, list[tuple[float, float]]] = {}
        for _ in range(runs):
            for name, src in trees.items():
                if case.server and name != "this":
                    continue  # the base has no fast path to ask
                db = ("--db", dbs[name][case.db]) if case.db else ()
                env = {**case.env, **(via if case.server else {})}
                samples.setdefault(name, []).append(episodic(src, [*db, *case.args], env))
        table[case.name] = {
            name: (
                statistics.median(w for w, _ in got),
                statistics.median(c for _, c in got),
            )
            for name, got in samples.items()
        }
        print(f"  {case.name}: {table[case.name]}", file=sys.stderr)
    return table


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main()
