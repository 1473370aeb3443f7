"""``episodic model``: fetch the local embedder's model and say where it is.

``pull`` downloads sentence-transformers/all-MiniLM-L6-v2 at the pinned revision from the
Hugging Face hub (or the mirror ``HF_ENDPOINT`` names) into episodic's cache, checking
every file's sha256; ``status`` says which copy the embedder would use and whether it
checks out.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from episodic.cli.common import JsonOpt, err, errors, out, print_json
from episodic.config import Settings
from episodic.errors import EmbedderUnavailable

# httpx and the model loader are imported by the command that uses them, not with the
# CLI: `episodic --help` and the other commands do not pay for them.
if TYPE_CHECKING:
    from episodic.embed.pull import Progress

model_app = typer.Typer(
    help=(
        "The local embedder's model (all-MiniLM-L6-v2): download it, see where it is.\n\n"
        "Example: episodic model pull"
    ),
    no_args_is_help=True,
)


@contextmanager
def _progress_bar() -> Iterator[Progress | None]:
    """A download bar on a terminal; nothing when stderr is a pipe or a file."""
    if not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, TextColumn, TransferSpeedColumn
    from rich.progress import Progress as Bar

    from episodic.embed import pull as hub

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
    )
    with Bar(*columns, console=err) as bar:
        task = bar.add_task("all-MiniLM-L6-v2", total=hub.TOTAL_BYTES)
        finished: dict[str, int] = {}

        def advance(name: str, received: int, size: int) -> None:
            finished[name] = received
            bar.update(task, completed=sum(finished.values()), description=name)

        yield advance


@model_app.command("pull")
def pull_command(as_json: JsonOpt = False) -> None:
    """Download the embedding model (about 91 MB) into the cache and verify every file.

    Honours HF_ENDPOINT (a mirror of the hub) and HF_HUB_OFFLINE=1 (then it only checks
    what is already there). Without the hub, place the model's files in a folder and set
    EPISODIC_MODEL_DIR to it: an error that cannot reach the hub names the files and where
    each comes from.
    Example: episodic model pull
    """
    from episodic.embed import pull as hub

    settings = Settings.from_env()
    with errors(), _progress_bar() as progress:
        path = hub.pull(settings.cache_dir, progress=progress)
    if as_json:
        print_json({"path": str(path), "revision": hub.REVISION, "verified": True})
    else:
        out.print(f"model ready: {path} (verified, revision {hub.REVISION[:8]})")


@model_app.command("status")
def status_command(as_json: JsonOpt = False) -> None:
    """Say which copy of the model the local embedder uses and whether it checks out;
    exit 1 when there is none or it is damaged.

    Example: episodic model status --json
    """
    from episodic.embed import pull as hub
    from episodic.embed.local import locate_model, verify_weights

    settings = Settings.from_env()
    problem: str | None = None
    try:
        found = locate_model(settings.cache_dir)
        if found is None:
            problem = f"no copy found: run `episodic model pull`; {hub.without_the_hub()}"
            failed = hub.failed_pull(settings.cache_dir)
            if failed is not None:
                ago = hub.waited(time.time() - failed.at)
                problem += f". The last download failed {ago} ago: {failed.error}"
        else:
            verify_weights(found.path, found.source)
    except EmbedderUnavailable as exc:
        found, problem = None, str(exc)
    if as_json:
        print_json(
            {
                "path": None if found is None else str(found.path),
                "source": None if found is None else found.source,
                "verified": problem is None,
                "problem": problem,
                "offline": hub.hub_offline(os.environ),
            }
        )
    elif found is not None and problem is None:
        out.print(f"model: {found.path} ({found.source}, verified)")
    else:
        err.print(f"[red]error:[/red] {escape(problem or '')}")
    if problem is not None:
        raise typer.Exit(1)
