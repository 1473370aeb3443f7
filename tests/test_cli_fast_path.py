"""``recall`` and ``render`` run by ``episodic.cli.main`` without typer (an agent's hook, a
new process a turn) answer exactly as the typer commands do: the same options, parsed to
the same values; anything the fast path is not sure of (help, typos, bad values) left to
typer, so help and errors are typer's; the same output, on the database and through a
server; messages to a pipe printed without rich as rich prints them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import typer.main
from rich.console import Console
from typer.testing import CliRunner

import episodic.cli.memory as memory_commands
from episodic import Episodic, Settings
from episodic.cli import app, basics, fast_path
from episodic.cli.remote import Remote
from episodic.errors import EpisodicError
from episodic.http import asgi
from episodic.store import open_store
from servers import serve

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``episodic --help`` keeps a copy in the cache folder: the test's own, not the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _kinds_of(command: str) -> dict[str, tuple[str, object]]:
    """The options of the typer command ``command`` as the fast path describes them: the
    names and flags typer made, the kind of value from the function's annotation."""
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    hints = typing.get_type_hints(getattr(memory_commands, command))
    found: dict[str, tuple[str, object]] = {}
    for param in click_command.params:
        if param.param_type_name != "option":
            continue
        if param.is_flag:
            found |= {o: (param.name, True) for o in param.opts}
            found |= {o: (param.name, False) for o in param.secondary_opts}
        else:
            value = next(t for t in typing.get_args(hints[param.name]) or [hints[param.name]])
            kind = {str: "str", int: "int"}.get(value, "list" if param.multiple else "?")
            found |= {o: (param.name, kind) for o in param.opts}
    return found


@pytest.mark.parametrize("command", ["recall", "render"])
def test_the_fast_path_knows_the_typer_commands_options(command: str) -> None:
    assert fast_path.OPTIONS[command] == _kinds_of(command)
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    defaults = {p.name: p.default for p in click_command.params if p.name != "query"}
    assert fast_path.DEFAULTS[command] == defaults
    required = {p.name for p in click_command.params if p.required and p.name != "query"}
    assert set(fast_path.REQUIRED) == required


LINES = [
    ["checkout OOM", "-w", "acme"],
    ["-w", "acme", "checkout OOM"],
    ["checkout OOM", "--workspace=acme", "--agent", "ops", "--crew", "red", "-k", "3"],
    ["q", "-w", "a", "--type", "entry", "--type", "procedural", "--no-mark", "--explain"],
    ["q", "-w", "a", "--scope", "own", "--resource", "r", "--conversation", "c", "-w", "b"],
    ["q", "-w", "a", "--detail", "full", "--as-of", "2026-01-01", "--include-superseded"],
    ["q", "-w", "a", "--policy", "bm25", "--no-mark", "--mark", "-k", "0", "--agent", ""],
]


def _typer_parsed(command: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    seen: list[Any] = []

    def keep(_choose: Any, query: str, options: dict[str, Any], *rest: Any) -> None:
        seen.append((query, {**options, **({"as_json": rest[0]} if rest else {})}))

    monkeypatch.setattr(memory_commands, f"{command}_command", keep)
    result = runner.invoke(app, [command, *args])
    assert result.exit_code == 0, result.output
    return seen[0]


@pytest.mark.parametrize("command", ["recall", "render"])
@pytest.mark.parametrize("line", LINES)
def test_a_line_parses_to_what_typer_gives(
    command: str, line: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    line = [*line, "--json"] if command == "recall" else [*line, "--max-chars", "900"]
    parsed = fast_path.parse(command, line)
    assert parsed is not None, line
    query, values = parsed
    typer_query, typer_values = _typer_parsed(command, line, monkeypatch)
    assert query == typer_query
    assert values == {k: (list(v) if isinstance(v, tuple) else v) for k, v in typer_values.items()}


@pytest.mark.parametrize(
    "line",
    [
        ["--help"],
        ["q", "-w", "a", "--help"],
        ["q", "-w", "a", "-h"],
        ["q"],  # no workspace
        ["q", "r", "-w", "a"],  # two queries
        ["-w", "a"],  # no query
        ["q", "-w"],  # no value
        ["q", "-w", "a", "--agent", "--explain"],  # a value that looks like an option
        ["q", "-w", "a", "-k", "five"],
        ["q", "-w", "a", "-k", "-1"],
        ["q", "-w", "a", "-k5"],
        ["q", "-w", "a", "--explain=yes"],
        ["q", "-w", "a", "--", "--json"],
        ["q", "-w", "a", "--workspce", "b"],
        ["q", "-wa"],
    ],
)
def test_what_the_fast_path_is_not_sure_of_is_left_to_typer(line: list[str]) -> None:
    assert fast_path.parse("recall", line) is None
    assert not fast_path.run(["recall", *line])


def test_a_line_left_to_typer_gets_typers_error(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "100"}
    env["EPISODIC_DB"] = f"{tmp_path}/none.db"
    code = "import sys; sys.argv[0] = 'episodic'; from episodic.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "recall", "q", "-k", "five", "-w", "a"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    typer_run = runner.invoke(app, ["recall", "q", "-k", "five", "-w", "a"], env={"COLUMNS": "100"})
    assert done.returncode == typer_run.exit_code == 2
    assert "integer" in done.stderr and done.stderr == typer_run.stderr


# -- the same output ----------------------------------------------------------------
@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/m.db"
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        mem.remember("checkout OOM after the cache TTL change [v2]", workspace="acme", agent="ops")
        mem.remember("deploys to checkout need the VPN", workspace="acme", type="learning")
        mem.remember("the orders table lock at 02:00", workspace="acme")
    return url


def _main(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys; sys.argv[0] = 'episodic'; from episodic.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "COLUMNS": "100",
            "EPISODIC_EMBEDDER": "none",
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


HOOK_LINES = [
    ["recall", "checkout OOM", "-w", "acme", "--no-mark"],
    ["recall", "checkout OOM", "-w", "acme", "--no-mark", "--json"],
    ["recall", "checkout OOM", "-w", "acme", "--no-mark", "--explain", "--json"],
    ["recall", "checkout", "-w", "acme", "--no-mark", "--explain", "-k", "1"],
    ["render", "checkout OOM", "-w", "acme", "--no-mark"],
    ["render", "checkout OOM", "-w", "acme", "--no-mark", "--explain", "--max-chars", "300"],
    ["recall", "checkout OOM", "-w", "acmee", "--no-mark"],  # a typo: warned
    ["render", "checkout OOM", "-w", "acme", "--no-mark", "--policy", "nosuch"],  # error
]


def _timeless(stdout: str) -> Any:
    """JSON output without the ages (seconds pass between two runs); text as it is."""
    if not stdout.startswith(("[", "{")):
        return stdout

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "age_seconds"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(stdout))


@pytest.mark.parametrize("line", HOOK_LINES)
def test_the_fast_path_prints_what_the_typer_command_prints(db: str, line: list[str]) -> None:
    fast = _main("--db", db, *line)
    typer_run = runner.invoke(
        app, ["--db", db, *line], env={"COLUMNS": "100", "EPISODIC_EMBEDDER": "none"}
    )
    assert (fast.returncode, _timeless(fast.stdout), fast.stderr) == (
        typer_run.exit_code,
        _timeless(typer_run.stdout),
        typer_run.stderr,
    )
    assert fast.stdout or fast.stderr


@pytest.fixture
def server(db: str) -> Iterator[tuple[str, str]]:
    mem = Episodic(store=open_store(db), embedder=None, settings=Settings(embedder="none"))
    secret = mem.create_key("acme", role="admin")[1]
    with serve(asgi(mem)) as base:
        yield base, secret
    mem.close()


# A typo'd workspace is warned about by the database's command only: a server does not
# name a key's other workspaces to it.
SERVER_LINES = [line for line in HOOK_LINES if "acmee" not in line]


@pytest.mark.parametrize("line", SERVER_LINES)
def test_through_a_server_it_prints_what_the_database_gives(
    db: str, server: tuple[str, str], line: list[str]
) -> None:
    base, secret = server
    local = _main("--db", db, *line)
    remote = _main(*line, env={"EPISODIC_URL": base, "EPISODIC_KEY": secret})
    assert remote.returncode == local.returncode
    assert _timeless(remote.stdout) == _timeless(local.stdout)
    if local.returncode == 0:
        assert remote.stderr == local.stderr


def test_a_server_error_reads_as_the_clients(server: tuple[str, str]) -> None:
    base, _ = server
    with pytest.raises(EpisodicError) as ours:
        Remote(base, "not-a-key").recall("q", {"workspace": "acme"})
    from episodic.client import Client

    with Client(base, "not-a-key") as client, pytest.raises(EpisodicError) as theirs:
        client.recall("q", workspace="acme")
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


class _Busy(BaseHTTPRequestHandler):
    """Answers 503 (Retry-After: 0) to the first request, then a render."""

    calls = 0

    def do_POST(self) -> None:
        type(self).calls += 1
        self.rfile.read(int(self.headers["content-length"]))
        if type(self).calls == 1:
            self.send_response(503)
            self.send_header("retry-after", "0")
            body = b'{"error": {"code": "store_busy", "message": "busy"}}'
        else:
            self.send_response(200)
            body = json.dumps(
                {
                    "block": "<recalled-memory/>",
                    "mode": "sparse",
                    "policy": "default",
                    "warnings": [],
                }
            ).encode()
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_busy_server_is_asked_again_as_the_client_does() -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Busy)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        block, result = Remote(base, None).render_explained("q", {"workspace": "acme"})
    finally:
        httpd.shutdown()
    assert block == "<recalled-memory/>" and result.mode == "sparse"
    assert _Busy.calls == 2


def test_with_a_proxy_set_the_request_goes_through_the_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    used: list[str] = []

    class Recording:
        def __init__(self, base: str, *_: Any, **__: Any) -> None:
            used.append(base)

        def __enter__(self) -> Recording:
            return self

        def __exit__(self, *_: Any) -> None:
            pass

        def recall(self, query: str, **options: Any) -> str:
            return f"client:{query}:{options['workspace']}"

    import episodic.client

    monkeypatch.setattr(episodic.client, "Client", Recording)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    got = Remote("http://127.0.0.1:9", None).recall("q", {"workspace": "acme"})
    assert got == "client:q:acme" and used == ["http://127.0.0.1:9"]  # type: ignore[comparison-overlap]


# -- messages without rich ----------------------------------------------------------
MESSAGES = [
    "[yellow]warning:[/yellow] no embedder in use: sparse-only recall (see `episodic doctor`)",
    "[red]error:[/red] k: a whole number from 1 to 50",
    "[red]error:[/red] policy: unknown \\[x] policy",
    "[yellow]warning:[/yellow] a :smile: face",
    "[yellow]warning:[/yellow] tab\there",
    "[bold]3 memories[/bold] (sparse-only, policy default)",
    "[yellow]warning:[/yellow] [green]green[/green] text",
    "plain: http://127.0.0.1:8765/v1",
    "\n[bold]1. evt_3f9a[/bold]  score 1.275 · just now · note · agent -",
    "two\nlines\n",
    "a carriage\rreturn",
]
# Memory texts, printed without markup: brackets and backslashes are their own.
TEXTS = [
    "   checkout OOM [prod] after a cache\\change",
    "   a :smile: face",
    "   tab\there",
    "   [bold]not bold[/bold]",
    "   ends in \\",
    "   line one\nline two",
]


@pytest.mark.parametrize("markup", MESSAGES)
def test_a_message_to_a_pipe_is_what_rich_prints(
    markup: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    rich_out = io.StringIO()
    Console(file=rich_out, highlight=False, soft_wrap=True).print(markup)
    basics.say_on_stderr(markup)
    assert capsys.readouterr().err == rich_out.getvalue()


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_to_a_pipe_is_what_rich_prints(
    text: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    rich_out = io.StringIO()
    Console(file=rich_out, highlight=False, soft_wrap=True).print(text, markup=False)
    basics.say_on_stdout(text, markup=False)
    assert capsys.readouterr().out == rich_out.getvalue()
    markup_out = io.StringIO()
    Console(file=markup_out, highlight=False, soft_wrap=True).print(text)
    basics.say_on_stdout(text)
    assert capsys.readouterr().out == markup_out.getvalue()


def test_forced_colour_is_left_to_rich(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    basics.stderr_console.cache_clear()  # rich reads the variable when a console is made
    try:
        basics.say_on_stderr("[red]error:[/red] x")
    finally:
        basics.stderr_console.cache_clear()
    assert "\x1b[" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["a [b] c", "ends in \\", "plain", "[/red]"])
def test_escape_is_richs(text: str) -> None:
    from rich.markup import escape

    assert basics.escape(text) == escape(text)
