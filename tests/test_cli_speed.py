"""A command loads only what it uses: ``import episodic`` loads neither the server, the
model runtime nor the async layer; ``episodic --help`` loads no service; a keyword-only
recall loads no model runtime, numpy, faiss or HTTP client, and of the service's areas only
recalling; and with ``EPISODIC_URL`` set, ``recall`` and ``render`` ask that server
without opening the database at all.

What is loaded is read from ``sys.modules`` in a fresh process (the timings themselves are
``benchmarks/bench_cli.py``'s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import episodic
from episodic import Episodic, Settings
from episodic.store import open_store
from servers import serve

ROOT = Path(__file__).resolve().parents[1]
# The service's areas: each is loaded by the first call that needs it.
AREAS = (
    "episodic.service.writing",
    "episodic.service.recalling",
    "episodic.service.upkeep",
    "episodic.service.operations",
    "episodic.service.journal",
    "episodic.service.editing",
    "episodic.service.superseding",
    "episodic.service.decisions",
    "episodic.service.doctor",
)
HEAVY = (
    "fastapi",
    "uvicorn",
    "onnxruntime",
    "tokenizers",
    "faiss",
    "httpx",
    "jsonschema",
    "numpy",
    "episodic.aio",
    "episodic.service.facade",
    "episodic.store.sqlite",
    "episodic.recall.engine",
    "episodic.write.episodes",
    "episodic.write.supersession",
    "typer",
    "pydantic",
    "rich",
    "prometheus_client",
    *AREAS,
)
# What typer brings: an agent's hook (recall, render) runs without it.
FRAMEWORK = {"typer", "pydantic"}
# Run ``episodic ARGS`` in this process, then print which of HEAVY it loaded.
PROBE = """
import json, sys
heavy = json.loads(sys.argv[1])
sys.argv = ["episodic", *sys.argv[2:]]
from episodic.cli import main
try:
    main()
finally:
    sys.stderr.write("\\nLOADED " + json.dumps([m for m in heavy if m in sys.modules]) + "\\n")
"""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``episodic --help`` keeps a copy in the cache folder: the test's own, not the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def run(
    *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), *args],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    marker = done.stderr.rsplit("\nLOADED ", 1)
    assert len(marker) == 2, done.stderr
    loaded: list[str] = json.loads(marker[1])
    return done, loaded


def loaded_by(code: str) -> list[str]:
    report = f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    probe = f"import json, sys\n{code}\n{report}"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_import_episodic_loads_no_server_model_runtime_or_async_layer() -> None:
    assert loaded_by("import episodic") == []
    # The public names still import from the package, each when first asked for.
    names = loaded_by(
        "import episodic\n"
        "from episodic import Episodic, Settings, Client, RecallResult, render_block\n"
        "assert all(hasattr(episodic, n) for n in episodic.__all__)"
    )
    assert "episodic.aio" in names  # AsyncEpisodic, asked for by the hasattr walk
    assert "fastapi" not in names and "uvicorn" not in names


def test_every_public_name_is_in_all_and_resolves() -> None:
    for name in episodic.__all__:
        assert getattr(episodic, name) is not None, name
    assert set(episodic.__all__) <= set(dir(episodic))
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = episodic.no_such_name  # type: ignore[attr-defined]


def test_help_and_version_load_no_service() -> None:
    for args in (("--help",), ("--version",), ("recall", "--help"), ("model", "--help")):
        done, loaded = run(*args)
        assert done.returncode == 0 or "Usage" in done.stdout, done.stderr
        assert not set(loaded) - FRAMEWORK - {"rich"}, (args, loaded)
    # --version answers before typer is loaded.
    assert run("--version")[1] == []


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/m.db"
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        mem.remember("checkout OOM after the cache TTL change", workspace="acme")
    return url


def test_a_keyword_only_recall_loads_no_model_runtime_numpy_faiss_or_http_client(db: str) -> None:
    env = {"EPISODIC_EMBEDDER": "none"}
    for command in ("recall", "render"):
        done, loaded = run("--db", db, command, "checkout OOM", "-w", "acme", env=env)
        assert done.returncode == 0, done.stderr
        assert "checkout OOM" in done.stdout
        assert not set(loaded) & {"onnxruntime", "tokenizers", "faiss", "httpx", "jsonschema"}
        # Nor numpy: no vector is computed with (it was a third of the command's time).
        assert "numpy" not in loaded, loaded
        assert not set(loaded) & {"episodic.aio", "episodic.write.episodes", "fastapi"}
        assert not set(loaded) & {"episodic.write.supersession"}
        # Neither the command-line framework nor the metrics of a server it does not run.
        assert not set(loaded) & (FRAMEWORK | {"prometheus_client"}), loaded


def test_a_command_loads_only_the_service_areas_it_calls(db: str) -> None:
    env = {"EPISODIC_EMBEDDER": "none"}
    done, loaded = run("--db", db, "recall", "checkout OOM", "-w", "acme", env=env)
    assert done.returncode == 0 and "checkout OOM" in done.stdout, done.stderr
    assert set(loaded) & set(AREAS) == {"episodic.service.recalling"}, loaded
    done, loaded = run("--db", db, "memory", "list", "-w", "acme", env=env)
    assert done.returncode == 0 and "checkout OOM" in done.stdout, done.stderr
    assert set(loaded) & set(AREAS) == {"episodic.service.operations", "episodic.service.writing"}
    # From Python too: the service is whole, its areas are built when first called.
    names = loaded_by(
        "from episodic import Episodic, Settings\n"
        f"mem = Episodic.open({db!r}, settings=Settings(embedder='none'))\n"
        "assert mem.recall('checkout OOM', workspace='acme').hits\n"
        "mem.close()"
    )
    assert set(names) & set(AREAS) == {"episodic.service.recalling"}, names
    assert "numpy" not in names  # keyword-only: no vector to compute with


def test_a_query_with_no_time_words_compiles_no_time_pattern(db: str) -> None:
    """Compiling every time-expression pattern was most of what loading the time parser
    cost a recall; a query holding no time word compiles none of them."""
    probe = (
        "import sys\n"
        "from episodic.recall import timeparse\n"
        "from episodic import Episodic, Settings\n"
        f"mem = Episodic.open({db!r}, settings=Settings(embedder='none'))\n"
        "assert mem.recall(sys.argv[1], workspace='acme').hits\n"
        "patterns = [r.pattern for r in timeparse._RULES]\n"
        "lazy = timeparse._LazyPattern\n"
        "patterns += [v for v in vars(timeparse).values() if isinstance(v, lazy)]\n"
        "print(sum(p._compiled is not None for p in patterns), len(patterns))\n"
    )

    def compiled(query: str) -> tuple[int, int]:
        done = subprocess.run(
            [sys.executable, "-c", probe, query],
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        count, total = done.stdout.split()
        return int(count), int(total)

    count, total = compiled("checkout OOM")
    assert count == 0 and total > 20
    # A time word compiles what it needs, and the expression is still read.
    assert 0 < compiled("checkout OOM since last tuesday")[0] < 10


def test_a_hook_printing_to_a_pipe_loads_no_rich(db: str) -> None:
    env = {"EPISODIC_EMBEDDER": "none"}  # sparse-only: every recall warns
    for line in (
        ("render", "checkout OOM"),
        ("recall", "checkout OOM", "--json"),
        ("recall", "checkout OOM"),
    ):
        done, loaded = run("--db", db, *line, "-w", "acme", env=env)
        assert done.returncode == 0, done.stderr
        assert "checkout OOM" in done.stdout and "warning: " in done.stderr
        assert "rich" not in loaded
    # A misspelt workspace is warned about, naming the ones there are, without typer.
    done, loaded = run("--db", db, "render", "checkout OOM", "-w", "acmee", env=env)
    assert done.returncode == 0 and "workspace 'acmee' holds no memories" in done.stderr
    assert "acme (1 memory" in done.stderr and not set(loaded) & FRAMEWORK
    # A line the fast path leaves to typer is still answered, by typer.
    done, loaded = run("--db", db, "recall", "checkout OOM", "-w", "acme", "-k5", env=env)
    assert done.returncode == 0, done.stderr
    assert "checkout OOM" in done.stdout and set(loaded) >= FRAMEWORK


@pytest.fixture
def server(db: str) -> Iterator[tuple[str, str]]:
    from episodic.http import asgi

    mem = Episodic(store=open_store(db), embedder=None, settings=Settings(embedder="none"))
    secret = mem.create_key("acme", role="admin")[1]
    with serve(asgi(mem)) as base:
        yield base, secret
    mem.close()


def test_with_episodic_url_recall_and_render_ask_the_server_not_the_database(
    server: tuple[str, str], tmp_path: Path
) -> None:
    base, secret = server
    # No database where the command runs: only the server can answer.
    env = {"EPISODIC_URL": base, "EPISODIC_KEY": secret, "EPISODIC_DB": f"{tmp_path}/none.db"}
    done, loaded = run("render", "checkout OOM", "-w", "acme", "-k", "0", env=env)
    assert done.returncode == 0, done.stderr
    assert "<recalled-memory" in done.stdout and "cache TTL change" in done.stdout
    assert "k" in done.stderr and "warning" in done.stderr  # the server's warning is told
    assert not set(loaded) & {"episodic.service.facade", "episodic.store.sqlite", "numpy"}
    assert not set(loaded) & (FRAMEWORK | {"httpx", "rich"}), loaded
    done, loaded = run("recall", "checkout OOM", "-w", "acme", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert [h["content"] for h in json.loads(done.stdout)] == [
        "checkout OOM after the cache TTL change"
    ]
    assert not set(loaded) & {"episodic.service.facade", "episodic.store.sqlite", "numpy"}
    assert not set(loaded) & (FRAMEWORK | {"httpx", "rich"}), loaded
    assert not Path(f"{tmp_path}/none.db").exists()


def test_an_unreachable_server_is_an_error_naming_episodic_url(tmp_path: Path) -> None:
    env = {"EPISODIC_URL": "http://127.0.0.1:9", "EPISODIC_DB": f"{tmp_path}/none.db"}
    done, _ = run("render", "checkout OOM", "-w", "acme", env=env)
    assert done.returncode == 2
    assert "EPISODIC_URL" in done.stderr and "cannot reach" in done.stderr
