"""`make stress`: fuzzing at full size.

Four atheris harnesses (tests/stress/fuzz/), each a subprocess running at least a million
inputs under libFuzzer with the episodic modules instrumented, while schemathesis sends
the HTTP API thousands of generated requests per operation on a real server over SQLite
(with the real local MiniLM embedder) and over PostgreSQL. The checks are those of
tests/test_fuzz.py (tests/fuzz_checks.py, tests/fuzz_api.py). Sizes can be lowered for a
quick look: EPISODIC_FUZZ_RUNS (inputs per harness), EPISODIC_FUZZ_API_EXAMPLES (valid
requests per operation over SQLite; a quarter as many invalid ones, and a quarter of
both over PostgreSQL).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from results import record

from episodic import Episodic, Settings
from episodic.embed.local import MiniLMEmbedder
from episodic.http import asgi
from episodic.store import open_store
from fuzz_api import ApiFigures, fuzz_api, seed_server
from servers import serve

HERE = Path(__file__).parent
FUZZ_DIR = HERE / "fuzz"
TESTS = HERE.parent
RUNS = int(os.environ.get("EPISODIC_FUZZ_RUNS", "1000000"))
API_EXAMPLES = int(os.environ.get("EPISODIC_FUZZ_API_EXAMPLES", "1000"))
# Longest input per harness: queries are short; files and JSON lines may be long.
MAX_LEN = {"fts": 256, "jsonl": 4096, "markdown": 4096, "render": 4096}
TARGETS = {
    "fts": "FTS query escaper",
    "jsonl": "JSON-lines ingester",
    "markdown": "markdown/frontmatter importer",
    "render": "render escaper",
}
# Past this a harness is stuck, not slow (each input takes milliseconds).
INPUT_TIMEOUT_S = 60
DONE = re.compile(r"^Done (\d+) runs in (\d+) second", re.M)
EXECUTED = re.compile(r"^stat::number_of_executed_units:\s*(\d+)", re.M)


def start_harness(target: str, workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    sys.path.insert(0, str(FUZZ_DIR))
    import corpus

    corpus_dir, dictionary = corpus.write(target, workdir)
    log = workdir / "libfuzzer.log"
    command = [
        sys.executable,
        str(FUZZ_DIR / f"fuzz_{target}.py"),
        f"-runs={RUNS}",
        f"-max_len={MAX_LEN[target]}",
        f"-dict={dictionary}",
        f"-timeout={INPUT_TIMEOUT_S}",
        f"-artifact_prefix={workdir}/",
        "-print_final_stats=1",
        str(corpus_dir),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(FUZZ_DIR)])}
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, env=env
        )
    return process, log


def run_api(url: str, embedder: MiniLMEmbedder | None, examples: int) -> ApiFigures:
    mem = Episodic(store=open_store(url), embedder=embedder, settings=Settings())
    try:
        keys, ids = seed_server(mem)
        with serve(asgi(mem)) as base:
            return fuzz_api(base, keys, ids, examples=examples, negative_examples=examples // 4)
    finally:
        mem.close()


def test_fuzz_at_full_size(tmp_path: Path, pg_url: str) -> None:
    started = time.monotonic()
    harnesses = {}
    for target in TARGETS:
        workdir = tmp_path / target
        workdir.mkdir()
        harnesses[target] = (*start_harness(target, workdir), workdir)
    try:
        api = {
            "SQLite, MiniLM": run_api(
                f"sqlite:///{tmp_path / 'api.db'}", MiniLMEmbedder(), API_EXAMPLES
            ),
            # The same routes over the other backend, at a quarter of the examples: each
            # call costs the same and the machine is shared with the harnesses.
            "PostgreSQL, sparse-only": run_api(pg_url, None, API_EXAMPLES // 4),
        }
        api_seconds = time.monotonic() - started
    except BaseException:
        for process, _, _ in harnesses.values():
            process.kill()
        raise
    finally:
        for process, _, _ in harnesses.values():
            process.wait()

    figures: dict[str, object] = {}
    problems: list[str] = []
    for target, (process, log, workdir) in harnesses.items():
        output = log.read_text(errors="replace")
        done = DONE.search(output)
        # A harness stopped by a failing input prints no "Done" line, only its stats.
        executed = EXECUTED.search(output)
        runs = int(done.group(1)) if done else int(executed.group(1)) if executed else 0
        crashes = len(list(workdir.glob("crash-*"))) + len(list(workdir.glob("timeout-*")))
        exceptions = output.count("Uncaught Python exception")
        name = TARGETS[target]
        figures[f"{name}: inputs run"] = f"{runs:,}" + (f" in {done.group(2)} s" if done else "")
        figures[f"{name}: crashes"] = crashes
        figures[f"{name}: unexpected exceptions"] = exceptions
        if process.returncode != 0 or runs < RUNS or crashes or exceptions:
            problems.append(f"{target}: exit {process.returncode}, {runs} runs\n{output[-4000:]}")
    for backend, result in api.items():
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(result.statuses.items()))
        figures[f"API ({backend}): operations tested"] = result.operations
        figures[f"API ({backend}): calls made"] = f"{result.calls:,} ({codes})"
        figures[f"API ({backend}): 5xx"] = result.server_errors
        figures[f"API ({backend}): schema mismatches"] = result.schema_mismatches
        problems += [f"API ({backend}) {line}" for line in result.failures]
    figures["wall time"] = (
        f"{time.monotonic() - started:.0f} s (API {api_seconds:.0f} s, beside the harnesses)"
    )

    record(
        "fuzz",
        "Fuzzing: atheris on four parsers, schemathesis on the HTTP API",
        f"EPISODIC_FUZZ_RUNS={RUNS} EPISODIC_FUZZ_API_EXAMPLES={API_EXAMPLES} "
        "pytest -q tests/stress/test_fuzz.py (make stress: 1000000 and 1000)",
        figures,
        notes=(
            "atheris 3 (libFuzzer) runs each harness of tests/stress/fuzz/ in its own process "
            "with the episodic modules instrumented, from a small seed corpus and dictionary; "
            "the properties are tests/fuzz_checks.py: FTS5 MATCH expressions valid on a real "
            "FTS5 table and finding their own text, every JSON line an event or an error "
            "naming its field with the good lines stored (in-memory SQLite store), every "
            "markdown file a memory that survives export and re-import or InvalidInput naming "
            "its field, every rendered block with exactly its own wrapper tags and no line "
            "breaks from the text. schemathesis 4 generates valid and invalid requests from "
            "the server's /openapi.json under keys of every role (and a forged one) against "
            "a real uvicorn server (per operation: N valid and N/4 invalid requests over SQLite, "
            "N/4 and N/16 over PostgreSQL), checking not_a_server_error, "
            "status_code_conformance and response_schema_conformance."
        ),
    )
    if problems:
        pytest.fail("\n".join(problems[:40]))
