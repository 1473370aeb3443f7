"""The optional parts of the install and the check that one is there.

``pip install episodic-agent-memory`` (``DISTRIBUTION``) is the library, the CLI, SQLite
and the local embedder, with the offline fallbacks of every LLM step. The HTTP server
and the operator's page (``[server]``), the MCP server (``[mcp]``), the PostgreSQL
backend (``[postgres]``), the OpenAI-compatible LLM client (``[llm]``) and OpenTelemetry
traces (``[otel]``, checked by ``episodic.tracing`` itself: a warning, not an error) are
extras;
``[all]`` is every one. Their modules are imported only where they are used, and each
entry point checks first, so a missing extra is one clear error naming the install
command rather than an ImportError deep inside.
"""

from __future__ import annotations

import importlib.util

from episodic.errors import EpisodicError

# The name to install; the import package and the command stay ``episodic``.
DISTRIBUTION = "episodic-agent-memory"

# extra -> the modules it installs that episodic imports
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("fastapi", "uvicorn", "jinja2"),
    "mcp": ("mcp",),
    "postgres": ("psycopg", "psycopg_pool", "pgvector"),
    "llm": ("openai",),
    "client": ("httpx",),
    "langgraph": ("langgraph",),
    "agents": ("agents",),
}

# The distribution a module comes from, where the two names differ: the message names
# what pip installs.
_FROM = {"agents": "openai-agents", "psycopg_pool": "psycopg-pool"}


class MissingExtra(EpisodicError):
    """A feature needs an optional part of the install that is not there."""

    def __init__(self, extra: str, what: str, missing: list[str]) -> None:
        self.extra = extra
        super().__init__(
            f"{what} needs the [{extra}] extra "
            f"({', '.join(_FROM.get(m, m) for m in missing)} not installed): "
            f"pip install '{DISTRIBUTION}[{extra}]'"
        )


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module set to None
        return False


def require(extra: str, what: str) -> None:
    """Raise ``MissingExtra`` unless every module of ``extra`` can be imported."""
    missing = [m for m in EXTRAS[extra] if not installed(m)]
    if missing:
        raise MissingExtra(extra, what, missing)
