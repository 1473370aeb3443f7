"""Running episodic as a service: ``serve`` the HTTP API and the operator's page, the API
``keys`` it asks for, and ``mcp`` for models."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.markup import escape

from episodic.cli.common import (
    JsonOpt,
    err,
    errors,
    open_memory,
    out,
    print_json,
    workspaces_hint,
)
from episodic.errors import InvalidInput
from episodic.extras import require
from episodic.store.urls import display_url


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Server processes (each keeps its own dense index in memory; the "
            "indexer runs once, in the parent).",
        ),
    ] = 1,
    recall_processes: Annotated[
        int | None,
        typer.Option(
            "--recall-processes",
            help="Worker processes recalls run in, so that writes never wait behind them "
            "(default 1, or EPISODIC_RECALL_PROCESSES; 0: in the server's process). Each "
            "loads the embedder and, on SQLite, keeps its own dense index in memory. "
            "With --workers over 1, recalls stay in each server process.",
        ),
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            help="Also serve the Prometheus metrics on this port, on --host, with no key "
            "(for scrapers that cannot send one). /metrics on the API port needs an admin "
            "key or EPISODIC_METRICS_TOKEN.",
        ),
    ] = None,
    compat: Annotated[
        list[str] | None,
        typer.Option(
            "--compat",
            help="Also answer another server's API at its own paths: mem0 (Mem0's "
            "POST /memories, POST /search ..., always served under /mem0 too).",
        ),
    ] = None,
) -> None:
    """Serve the HTTP API (/v1, keys required), /healthz and the operator's page /ui, and
    run the background indexer and upkeep.

    The port is taken before anything else happens: a port in use exits with status 3
    and leaves the database untouched.
    Example: episodic serve --port 8765   # then open http://127.0.0.1:8765/ui
    """
    with errors():
        require("server", "`episodic serve`")
    import uvicorn

    from episodic import metrics
    from episodic.heap import limit_arenas
    from episodic.http import RECALL_PROCESSES, asgi, start_background_jobs
    from episodic.http.app import COMPAT, COMPAT_ENV
    from episodic.logs import uvicorn_options

    limit_arenas()  # before uvicorn's and the jobs' threads: see episodic.heap
    if workers < 1:
        err.print("[red]error:[/red] --workers: must be 1 or more", markup=True)
        raise typer.Exit(2)
    if recall_processes is not None and recall_processes < 0:
        err.print("[red]error:[/red] --recall-processes: must be 0 or more", markup=True)
        raise typer.Exit(2)
    missing = metrics.unavailable() if metrics_port is not None else None
    if missing is not None:
        err.print(f"[red]error:[/red] --metrics-port: {escape(missing)}", markup=True)
        raise typer.Exit(2)
    apis = list(dict.fromkeys(compat or []))
    for name in apis:
        if name not in COMPAT:
            err.print(
                f"[red]error:[/red] --compat: unknown API {escape(repr(name))}; "
                f"use {', '.join(COMPAT)}",
                markup=True,
            )
            raise typer.Exit(2)
    with (
        metrics.multiprocess_dir(),  # before anything records: see episodic.metrics
        listening(host, port) as sock,
        errors(),
        open_memory(ctx) as mem,
    ):
        if metrics_port is not None:
            metrics.serve_on_port(host, metrics_port, metrics.StoreFigures(mem.store))
        if workers > 1 and mem.store.url.endswith(":memory:"):
            raise InvalidInput("workers", "worker processes cannot share an in-memory database")
        if workers > 1 and recall_processes:
            raise InvalidInput(
                "recall-processes", "with --workers over 1, recalls stay in each server process"
            )
        bound = sock.getsockname()[1]
        out.print(
            f"episodic serving {display_url(mem.store.url)} on http://{host}:{bound} "
            f"(/v1, /ui, /healthz{''.join(f', {a} routes at /' for a in apis)})",
            markup=False,
        )
        if not any(key.active for key in mem.list_keys()):
            # Every /v1 route and the operator's page need a key: a first server has none.
            out.print(
                "no API key in this database yet: /v1 and /ui answer 401 until you create "
                "one, e.g. `episodic keys create --workspace W --role admin`",
                markup=False,
            )
        if workers == 1:
            # The upkeep that catches up (decay, daily consolidation) starts with the
            # app, so only once the port is ours.
            processes = RECALL_PROCESSES if recall_processes is None else recall_processes
            app = asgi(mem, background=True, recall_processes=processes, compat=apis)
            config = uvicorn.Config(app, log_level=log_level, **uvicorn_options())
            server = uvicorn.Server(config)
            with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: a clean stop
                server.run(sockets=[sock])
            if not server.started:
                raise typer.Exit(3)
            return
        from uvicorn.supervisors import Multiprocess

        start_background_jobs(mem)
        os.environ["EPISODIC_DB"] = mem.store.url
        os.environ[COMPAT_ENV] = ",".join(apis)
        config = uvicorn.Config(
            "episodic.http:app_from_env",
            factory=True,
            workers=workers,
            log_level=log_level,
            **uvicorn_options(),
        )
        sock.set_inheritable(True)  # the workers accept on it
        with contextlib.suppress(KeyboardInterrupt):
            Multiprocess(config, sockets=[sock]).run()


@contextlib.contextmanager
def listening(host: str, port: int) -> Iterator[socket.socket]:
    """A socket listening on ``host:port``, closed on leaving; exit status 3 (as uvicorn
    gives) when it cannot be had, before any database is opened."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.create_server((host, port), family=family)
    except OSError as exc:
        # create_server's message repeats the address; the errno's text is enough.
        reason = os.strerror(exc.errno) if isinstance(exc.errno, int) and exc.errno > 0 else exc
        err.print(
            f"[red]error:[/red] --port: cannot listen on {host}:{port} ({reason}); "
            "is another server running there? Choose another with --port",
            markup=True,
        )
        raise typer.Exit(3) from None
    with sock:
        yield sock


keys_app = typer.Typer(
    help=(
        "API keys for the HTTP API: each binds its holder to one workspace and a role "
        "(agent: own memories; lead: crew_shared; admin: the whole workspace).\n\n"
        "Example: episodic keys create --workspace acme --role admin --json"
    ),
    no_args_is_help=True,
)


@keys_app.command("create")
def keys_create(
    ctx: typer.Context,
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="The key's workspace.")],
    role: Annotated[
        str, typer.Option("--role", help="agent (needs --agent) | lead (needs --crew) | admin.")
    ] = "agent",
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent the key reads and writes as.")
    ] = None,
    crew: Annotated[
        str | None, typer.Option("--crew", help="The crew the key reads as (a lead key).")
    ] = None,
    label: Annotated[str, typer.Option("--label", help="A note for `keys list`.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Create an API key; the key is printed once and only its hash is stored.

    Example: episodic keys create --workspace acme --role agent --agent deployer --json
    """
    with errors(), open_memory(ctx) as mem:
        key, secret = mem.create_key(workspace, role=role, agent=agent, crew=crew, label=label)
    if as_json:
        print_json({"key": secret, **key.to_json()})
        return
    out.print(f"key {key.id} for workspace {key.workspace_id} ({key.role.value})")
    sys.stdout.write(secret + "\n")
    err.print("this is the only time the key is shown: store it now")


@keys_app.command("list")
def keys_list(
    ctx: typer.Context,
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", help="Only this workspace's keys.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List API keys (never their secrets).

    Example: episodic keys list --workspace acme
    """
    with errors(), open_memory(ctx) as mem:
        keys = mem.list_keys(workspace)
    if as_json:
        print_json([k.to_json() for k in keys])
        return
    if not keys:
        out.print("no keys")
        return
    # One line a key, its id first and whole (a table's columns would cut it at 80 columns,
    # and `keys revoke` takes it as it is).
    for k in keys:
        who = {"agent": k.agent_id, "lead": k.crew_id}.get(k.role.value)
        state = f"revoked {_minute(k.revoked_at)}" if k.revoked_at else "active"
        label = f" · {k.label!r}" if k.label else ""
        out.print(
            f"[bold]{escape(k.id)}[/bold]  {escape(k.workspace_id)} · {k.role.value}"
            + (f" {escape(who)}" if who else "")
            + f" · created {_minute(k.created_at)} · {state}{escape(label)}"
        )


def _minute(at: datetime | None) -> str:
    """A key's time to the minute, in UTC: what a table of keys needs to tell them apart."""
    return "-" if at is None else at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


@keys_app.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[
        str,
        typer.Argument(help="The key's id (k_...) from `keys list`, or enough of its start."),
    ],
) -> None:
    """Revoke an API key: every request with it is refused from now on.

    Example: episodic keys revoke k_3f9a1c2b7d4e
    """
    with errors(), open_memory(ctx) as mem:
        from episodic.cli.ids import key_id as named_key

        key = mem.revoke_key(named_key(mem, key_id))
    out.print(f"revoked {key.id} ({key.workspace_id}, {key.role.value})")


def mcp_command(
    ctx: typer.Context,
    # Not required by typer: a missing [mcp] extra is named before a missing option.
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            "-w",
            envvar="EPISODIC_MCP_WORKSPACE",
            help="The workspace to serve (required).",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", envvar="EPISODIC_MCP_AGENT", help="Act as this agent."),
    ] = None,
    crew: Annotated[
        str | None, typer.Option("--crew", envvar="EPISODIC_MCP_CREW", help="The agent's crew.")
    ] = None,
    resource: Annotated[
        str | None,
        typer.Option(
            "--resource",
            envvar="EPISODIC_MCP_RESOURCE",
            help="Only this resource's memories (the user or case served), read and written.",
        ),
    ] = None,
    role: Annotated[
        str | None,
        typer.Option(
            "--role",
            envvar="EPISODIC_MCP_ROLE",
            help="agent (scope own, the default; needs --agent) | lead (crew_shared; needs "
            "--crew) | admin (whole workspace). Without --agent, say lead or admin.",
        ),
    ] = None,
    transport: Annotated[
        str, typer.Option("--transport", help="stdio | http (streamable HTTP at /mcp).")
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", help="HTTP address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.")] = 8766,
) -> None:
    """Serve memory to a model as MCP tools (recall_memory, remember, forget,
    memory_health), bound to one workspace and agent.

    Example: episodic mcp --workspace acme --agent deployer
    Example: episodic mcp --workspace shop --agent concierge --resource user:dana
    Example: episodic mcp --workspace acme --agent deployer --transport http --port 8766
    Example: episodic mcp --workspace acme --role admin
    """
    with errors():
        require("mcp", "`episodic mcp`")
    from episodic.mcp import Binding, build_server

    if workspace is None:
        err.print(
            "[red]error:[/red] --workspace: name the workspace to serve "
            "(or set EPISODIC_MCP_WORKSPACE), e.g. `episodic mcp --workspace shop --agent "
            f"deployer`. {escape(workspaces_hint(ctx))}",
            markup=True,
        )
        raise typer.Exit(2)
    if transport not in ("stdio", "http"):
        err.print("[red]error:[/red] --transport: use stdio or http", markup=True)
        raise typer.Exit(2)
    with errors(), open_memory(ctx) as mem:
        # stderr: on stdio, stdout carries the protocol.
        err.print(
            f"episodic mcp: memory {display_url(mem.store.url)}, workspace {workspace}",
            markup=False,
        )
        server = build_server(mem, Binding.of(workspace, agent, crew, role, resource=resource))
        mem.warn_if_sparse_only()
        if transport == "http":
            at = f"http://{host}:{port}/mcp" if port else "/mcp (the port: uvicorn's line below)"
            err.print(f"MCP over streamable HTTP at {at}", markup=False)
        elif sys.stdin.isatty():
            # Run by hand, the stdio server waits in silence: say for what.
            err.print(
                "waiting for an MCP client on stdin: a client starts this command itself "
                "(its config: docs/integrations.md in the repository); Ctrl-C stops it",
                markup=False,
            )
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
