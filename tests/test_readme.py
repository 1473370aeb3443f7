"""The README a newcomer reads: its quickstart runs as written (the Python chat app and the
shell lines of an agent runtime's journal, each against a database of its own, offline),
it stays short and speaks of what users do, and every docs page it links to is there (and
linked from it)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

# The built wheel in a fresh venv, outside the repository (fixtures of the packaging test).
from test_packaging import ALWAYS_HIDDEN, Venv, _view, venv, wheel  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# The names of the systems this project learned from mean nothing to a newcomer: the
# README speaks of what users do, and the docs pages explain the names.
SEED_NAMES = re.compile(r"crewship|teaparty|plast-?mem|noetic|n8n|seed \d", re.IGNORECASE)


def block_after(heading: str, language: str) -> str:
    """The first ``language`` code block after the README's ``heading`` line."""
    text = README.read_text(encoding="utf-8")
    after = text.split(f"\n{heading}\n", 1)[1]
    match = re.search(rf"```{language}\n(.*?)\n```", after, re.S)
    assert match is not None, f"no {language} block after {heading!r}"
    return match.group(1)


CHAT = "### A chat app (Python)"
JOURNAL = "### An agent runtime's journal (shell)"


def offline_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("EPISODIC_", "HF_", "PYTHON", "OPENAI_"))
    }
    return env | {
        "PYTHONPATH": str(ROOT / "src"),
        "HF_HUB_OFFLINE": "1",
        "HOME": str(tmp_path / "home"),
        "COLUMNS": "200",
        **extra,
    }


def run_chat_app(tmp_path: Path, **extra: str) -> str:
    code = block_after(CHAT, "python")
    assert len(code.splitlines()) <= 15
    (tmp_path / "chat.py").write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "chat.py"],
        cwd=tmp_path,
        env=offline_env(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_chat_app_quickstart_runs_as_written(tmp_path: Path) -> None:
    out = run_chat_app(tmp_path, EPISODIC_EMBEDDER="none")  # keywords find it too
    block = out.split("<recalled-memory>", 1)[1].split("</recalled-memory>", 1)[0]
    assert "UNTRUSTED" in block and "card B had expired" in block
    assert (tmp_path / "chat-memory.db").exists()  # where it said, nowhere else


@pytest.mark.model
def test_the_chat_app_quickstart_recalls_with_the_real_model(tmp_path: Path) -> None:
    out = run_chat_app(tmp_path)
    assert "card B had expired" in out.split("<recalled-memory>", 1)[1]
    assert "sparse-only" not in out


def test_the_journal_quickstart_runs_as_written(tmp_path: Path) -> None:
    lines = block_after(JOURNAL, "sh")
    assert len(lines.splitlines()) <= 10
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = bin_dir / "episodic"  # the console script, as the installed package makes it
    command.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c 'from episodic.cli import main; main()' \"$@\"\n",
        encoding="utf-8",
    )
    command.chmod(command.stat().st_mode | stat.S_IEXEC)
    env = offline_env(
        tmp_path,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        EPISODIC_DB=f"sqlite:///{tmp_path / 'journal.db'}",
        EPISODIC_EMBEDDER="none",
    )
    done = subprocess.run(
        ["bash", "-e", "-c", lines],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    block = done.stdout.split("<recalled-memory>", 1)[1].split("</recalled-memory>", 1)[0]
    assert "checkout ran out of memory after the cache TTL change" in block
    hits = json.loads(done.stdout[done.stdout.index("\n[") :])
    assert [h["content"] for h in hits] == ["checkout ran out of memory after the cache TTL change"]


@pytest.mark.model
def test_a_fresh_venv_from_the_built_wheel_runs_the_quickstart(
    venv: Venv,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    venv.show_site_packages(_view(tmp_path, "full", ALWAYS_HIDDEN))
    (venv.work / "chat.py").write_text(block_after(CHAT, "python"), encoding="utf-8")
    chat = venv.run("python", "chat.py", EPISODIC_EMBEDDER="none")
    assert chat.returncode == 0, chat.stderr
    assert "card B had expired" in chat.stdout.split("<recalled-memory>", 1)[1]
    env = {**venv.env, "PATH": f"{venv.bin}{os.pathsep}{os.environ['PATH']}"}
    journal = subprocess.run(
        ["bash", "-e", "-c", block_after(JOURNAL, "sh")],
        cwd=venv.work,
        env={**env, "EPISODIC_EMBEDDER": "none"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert journal.returncode == 0, journal.stdout + journal.stderr
    assert "checkout ran out of memory" in journal.stdout.split("<recalled-memory>", 1)[1]


def test_the_readme_is_short_and_speaks_of_what_users_do() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    assert SEED_NAMES.findall(text) == []
    # The quickstart comes first, before any reference material.
    assert text.index(CHAT) < text.index("## Documentation") < text.index("## Extras")


def test_every_docs_page_is_linked_from_the_readme_and_every_link_resolves() -> None:
    readme = README.read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)(?:#[^)]*)?\)", readme))
    assert {f"docs/{p.name}" for p in DOCS} <= linked
    for page in [README, *DOCS]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_the_install_name_is_the_projects_own() -> None:
    """``episodic-memory`` on the package index is someone else's project."""
    texts = [README, *DOCS, *sorted((ROOT / "examples").glob("*.py"))]
    for path in texts:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"pip install '?episodic-memory\b", text), path.name
        assert "'episodic-memory[" not in text, path.name
    assert "pip install episodic-agent-memory" in README.read_text(encoding="utf-8")


def test_every_event_piped_to_ingest_in_the_docs_is_one_json_line() -> None:
    """``episodic ingest`` reads one JSON object per line: an example split over several
    lines would be refused line by line."""
    found = 0
    for page in [README, *DOCS]:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"echo '([^']*)' \| episodic ingest -", text):
            found += 1
            assert "\n" not in match.group(1), page.name
            assert isinstance(json.loads(match.group(1)), dict)
    assert found >= 2
