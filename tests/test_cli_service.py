"""The service's commands: keys (create shows the secret once; only its hash is kept)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic.cli import app

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {"EPISODIC_DB": f"sqlite:///{tmp_path}/m.db", "EPISODIC_EMBEDDER": "none"}
    assert runner.invoke(app, ["init"], env=env).exit_code == 0
    return env


def test_keys_create_list_revoke(env: dict[str, str], tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["keys", "create", "--workspace", "acme", "--role", "lead", "--crew", "ops", "--json"],
        env=env,
    )
    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    secret = created["key"]
    assert secret.startswith("ep_k_") and created["role"] == "lead" and created["crew"] == "ops"
    result = runner.invoke(
        app, ["keys", "create", "--workspace", "acme", "--agent", "deployer"], env=env
    )
    assert result.exit_code == 0 and "only time the key is shown" in result.stderr
    plain_secret = result.stdout.strip().splitlines()[-1]
    assert plain_secret.startswith("ep_k_")

    listed = json.loads(runner.invoke(app, ["keys", "list", "--json"], env=env).stdout)
    assert [k["role"] for k in listed] == ["lead", "agent"]
    assert "key" not in listed[0] and secret not in json.dumps(listed)
    db = sqlite3.connect(tmp_path / "m.db")
    stored = repr(db.execute("SELECT * FROM api_keys").fetchall())
    db.close()
    assert secret not in stored and plain_secret not in stored

    result = runner.invoke(app, ["keys", "revoke", created["id"]], env=env)
    assert result.exit_code == 0 and f"revoked {created['id']}" in result.stdout
    listed = json.loads(runner.invoke(app, ["keys", "list", "--json"], env=env).stdout)
    assert listed[0]["revoked_at"] is not None and listed[1]["revoked_at"] is None
    result = runner.invoke(app, ["keys", "revoke", "k_nope"], env=env)
    assert result.exit_code == 2 and "no API key has the id 'k_nope'" in result.stderr


def test_keys_create_refuses_a_bad_role(env: dict[str, str]) -> None:
    result = runner.invoke(
        app, ["keys", "create", "--workspace", "acme", "--role", "root"], env=env
    )
    assert result.exit_code == 2 and "role: unknown role 'root'" in result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--recall-processes", "-1"], "--recall-processes: must be 0 or more"),
        (["--workers", "2", "--recall-processes", "1"], "recall-processes: with --workers over 1"),
    ],
)
def test_serve_refuses_recall_processes_it_cannot_run(
    env: dict[str, str], args: list[str], said: str
) -> None:
    result = runner.invoke(app, ["serve", "--port", "0", *args], env=env)
    assert result.exit_code == 2 and said in result.stderr


def test_mcp_without_its_extra_names_the_extra_before_any_missing_option(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic import extras

    real = extras.installed
    monkeypatch.setattr(extras, "installed", lambda module: module != "mcp" and real(module))
    result = runner.invoke(app, ["mcp"], env=env)
    assert result.exit_code == 2, result.output
    assert "pip install 'episodic-agent-memory[mcp]'" in result.stderr.replace("\n", "")
    assert "--workspace" not in result.stderr


def test_mcp_without_a_workspace_says_which_option_to_give(env: dict[str, str]) -> None:
    result = runner.invoke(app, ["mcp", "--agent", "deployer"], env=env)
    assert result.exit_code == 2, result.output
    assert "--workspace: name the workspace to serve" in result.stderr
    assert "EPISODIC_MCP_WORKSPACE" in result.stderr


def _mcp_says(env: dict[str, str], *args: str, until: bytes) -> str:
    """What ``episodic mcp ARGS`` writes on stderr, its stdin a terminal, until ``until``
    or 5 s of silence; then it is stopped."""
    import os
    import pty
    import select
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[1]
    leader, follower = pty.openpty()
    server = subprocess.Popen(
        [sys.executable, "-m", "episodic.cli", "mcp", "--workspace", "acme", *args],
        env={**os.environ, **env, "PYTHONPATH": str(root / "src")},
        stdin=follower,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    said = b""
    try:
        assert server.stderr is not None
        deadline = time.monotonic() + 60
        while until not in said and time.monotonic() < deadline:
            ready, _, _ = select.select([server.stderr], [], [], 5)
            chunk = os.read(server.stderr.fileno(), 4096) if ready else b""
            if not chunk:
                break
            said += chunk
    finally:
        server.terminate()
        server.wait(timeout=30)
        os.close(follower)
        os.close(leader)
    return said.decode()


def test_mcp_run_by_hand_says_what_it_waits_for(env: dict[str, str]) -> None:
    said = _mcp_says(env, "--role", "admin", until=b"Ctrl-C stops it")
    assert said.startswith("episodic mcp: memory sqlite:///"), said
    assert "waiting for an MCP client on stdin" in said and "Ctrl-C stops it" in said
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    said = _mcp_says(
        env, "--role", "admin", "--transport", "http", "--port", str(port), until=b"/mcp"
    )
    assert f"MCP over streamable HTTP at http://127.0.0.1:{port}/mcp" in said, said
