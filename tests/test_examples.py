"""The scripts in ``examples/``: each runs as a newcomer would run it, with no API key,
no network and no model (keyword recall), from a folder of its own, and says what it
needs for the rest; and they ship in the source distribution."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic.cli import app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "own_server.py")


def run_example(
    tmp_path: Path, script: str, *args: str, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("EPISODIC_", "OPENAI_", "HF_", "PYTHON"))
    }
    env |= {
        "PYTHONPATH": str(ROOT / "src"),
        "EPISODIC_EMBEDDER": "none",  # vectors are not the point here
        "HF_HUB_OFFLINE": "1",
        "HOME": str(tmp_path / "home"),
    }
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    path = EXAMPLES / script
    command = [sys.executable, str(path), *args]
    if prelude:  # run the same script after some set-up (an extra made unimportable)
        code = (
            f"import runpy, sys; {prelude}; sys.argv = {[str(path), *args]!r}; "
            f"sys.path.insert(0, {str(EXAMPLES)!r}); "
            f"runpy.run_path({str(path)!r}, run_name='__main__')"
        )
        command = [sys.executable, "-c", code]
    return subprocess.run(
        command,
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_example_is_run_here() -> None:
    assert SCRIPTS == ["async_client.py", "client.py", "langgraph_store.py", "openai_agents.py"]


@pytest.mark.parametrize("script", ["client.py", "async_client.py"])
def test_a_client_example_without_a_key_runs_a_server_of_its_own(
    tmp_path: Path, script: str
) -> None:
    done = run_example(tmp_path, script)
    assert done.returncode == 0, done.stderr
    assert "forgot: 1 memory" in done.stdout and "VPN" in done.stdout
    assert "EPISODIC_KEY is not set" in done.stderr
    # The command it suggests for a key of your own works as written.
    (suggested,) = re.findall(r"^\s*(episodic keys create .*?)\s*(?:#.*)?$", done.stderr, re.M)
    db = f"sqlite:///{tmp_path / 'mine.db'}"
    runner = CliRunner()
    assert runner.invoke(app, ["--db", db, "init"]).exit_code == 0
    made = runner.invoke(app, ["--db", db, *shlex.split(suggested)[1:]])
    assert made.exit_code == 0, made.output
    assert "ep_k_" in made.output
    assert not (tmp_path / "work" / ".episodic").exists()  # nothing left where it ran


def test_the_agents_example_without_a_model_shows_the_memory_and_says_what_it_needs(
    tmp_path: Path,
) -> None:
    done = run_example(tmp_path, "openai_agents.py")
    assert done.returncode == 0, done.stderr
    assert '"stored": true' in done.stdout
    block = done.stdout.split("<recalled-memory>")[1]
    assert "staging deploys need the VPN switched on" in block
    assert "Traceback" not in done.stderr
    assert "OPENAI_API_KEY" in done.stderr and "OPENAI_BASE_URL" in done.stderr
    assert not (tmp_path / "work" / ".episodic").exists()
    assert not (tmp_path / "home" / ".episodic").exists()


def test_an_example_without_its_extra_names_the_install(tmp_path: Path) -> None:
    done = run_example(tmp_path, "openai_agents.py", prelude="sys.modules['agents'] = None")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "pip install 'episodic-" in done.stderr and "[agents]" in done.stderr
    done = run_example(tmp_path, "langgraph_store.py", prelude="sys.modules['langgraph'] = None")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "[langgraph]" in done.stderr


def test_the_langgraph_example_runs_offline(tmp_path: Path) -> None:
    done = run_example(tmp_path, "langgraph_store.py")
    assert done.returncode == 0, done.stderr
    assert "recalled: Ana drinks oolong tea" in done.stdout


def test_the_source_distribution_ships_the_examples_and_the_docs(tmp_path: Path) -> None:
    """Built as ``python -m build --sdist`` would: setuptools from the package index in an
    environment of its own, over a copy of the tracked files."""
    tree = tmp_path / "tree"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in listed:
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(env / "bin" / "python"),
            "install",
            "--quiet",
            "setuptools>=77",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    out = tmp_path / "dist"
    built = subprocess.run(
        [
            str(env / "bin" / "python"),
            "-c",
            f"from setuptools import build_meta; print(build_meta.build_sdist({str(out)!r}))",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (sdist,) = out.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for script in (*SCRIPTS, "own_server.py"):
        assert f"examples/{script}" in names
    docs = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*") if p.is_file()}
    assert docs and docs <= names
