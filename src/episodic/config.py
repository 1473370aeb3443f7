"""Settings, read once from the environment (``EPISODIC_*``) with defaults.

Everything a user can tune lives here so interfaces pass one object around.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from episodic.errors import InvalidInput

# The folder a project keeps its memory in; the nearest one up from the working directory
# holds the default database.
PROJECT_FOLDER = ".episodic"
DB_FILE = "memory.db"
EMBEDDER_CHOICES = ("local", "ollama", "openai", "none")


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "episodic"


SUPERSESSION_CHOICES = ("auto", "off")


# The most characters a message, a note or an event's summary may hold (1 MiB): an
# assistant's answer with code or logs runs far past a page (hundreds of thousands of
# characters in real task conversations) and is stored whole; recall reads it in
# passages. Queries keep a smaller cap of their own.
MAX_CONTENT_CHARS = 1_048_576


@dataclass(frozen=True, slots=True)
class DatabaseChoice:
    """The database a process uses when none is named, and why (``episodic doctor``)."""

    url: str
    reason: str


def default_database(
    env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> DatabaseChoice:
    """``EPISODIC_DB``; else ``memory.db`` in the nearest ``.episodic/`` folder from ``cwd``
    up; else ``memory.db`` in the user's data folder. The same database wherever a
    command runs inside a project, and one per user outside any."""
    env = os.environ if env is None else env
    if env.get("EPISODIC_DB"):
        return DatabaseChoice(env["EPISODIC_DB"], "EPISODIC_DB")
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FOLDER).is_dir():
            return DatabaseChoice(
                f"sqlite:///{folder / PROJECT_FOLDER / DB_FILE}",
                f"the nearest {PROJECT_FOLDER}/ folder up from {here}",
            )
    return DatabaseChoice(
        f"sqlite:///{user_data_dir() / DB_FILE}",
        f"no {PROJECT_FOLDER}/ folder in {here} or above it: the user's data folder",
    )


def user_data_dir() -> Path:
    """episodic's folder among the user's data (``~/.local/share/episodic`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("episodic", appauthor=False))


@dataclass(frozen=True, slots=True)
class Settings:
    db_url: str = field(default_factory=lambda: default_database().url)
    embedder: str = "local"
    ollama_url: str = "http://localhost:11434"
    ollama_model: str = "nomic-embed-text"
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str | None = None
    openai_embed_model: str = "text-embedding-3-small"
    embed_timeout_s: float = 10.0
    sweep_interval_s: float = 30.0
    sweep_batch: int = 64
    max_text_chars: int = MAX_CONTENT_CHARS  # what one message, note or event may say
    max_payload_bytes: int = 65_536  # serialized payload size cap per event
    render_max_chars: int = 2_000
    institutional_chars: int = 600  # own budget for standing (institutional) memories
    llm_url: str | None = None  # OpenAI-compatible API root, e.g. http://localhost:11434/v1
    llm_model: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)  # keep secrets out of logs
    llm_timeout_s: float = 30.0
    llm_query_terms: bool = False  # ask the LLM for key search terms before each recall
    # Index each memory with derived keys too (speaker, date, its episode's title and
    # keyphrases, extracted facts); see benchmarks/README.md for what it changes.
    key_expansion: bool = True
    # Whether a new memory is checked for older ones it replaces (the configured LLM
    # decides when there is one, else the offline rule): "auto" or "off".
    supersession: str = "auto"
    cache_dir: Path = field(default_factory=_default_cache_dir)
    # -- upkeep ----------------------------------------------------------------------
    decay_formula: str = "crewship"  # or "prominence" (seed 001)
    decay_at: str = "03:00"  # UTC, nightly decay
    daily_at: str = "04:00"  # UTC, daily compaction, consolidation and health snapshot
    review_interval_s: float = 300.0  # the review job's period
    review_recalls: bool = True  # each marked recall records a pending review
    consolidate_threshold: int = 50  # unconsolidated memories that trigger consolidation
    archive_after_days: float = 90.0  # journal rows older than this move to the archive
    # Seed 000's per-agent memory_walk_depth: (agent id, depth) pairs; depth 1 adds the
    # memories one `similar` edge away from each hit. Unlisted agents: the policy's (0).
    memory_walk_depth: tuple[tuple[str, int], ...] = ()

    def walk_depth_for(self, agent: str | None) -> int | None:
        """The agent's configured walk depth, or None when it has none."""
        if agent is None:
            return None
        return dict(self.memory_walk_depth).get(agent)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = os.environ if env is None else env
        # The database given, or else found: not looked for when one is given.
        db_url = str(overrides.pop("db_url", None) or default_database(env).url)
        s = cls(db_url=db_url)
        s = replace(
            s,
            embedder=env.get("EPISODIC_EMBEDDER", s.embedder).strip().lower(),
            ollama_url=env.get("EPISODIC_OLLAMA_URL", s.ollama_url),
            ollama_model=env.get("EPISODIC_OLLAMA_MODEL", s.ollama_model),
            openai_base_url=env.get("EPISODIC_OPENAI_BASE_URL", s.openai_base_url),
            openai_api_key=env.get("EPISODIC_OPENAI_API_KEY") or env.get("OPENAI_API_KEY"),
            openai_embed_model=env.get("EPISODIC_OPENAI_EMBED_MODEL", s.openai_embed_model),
            embed_timeout_s=positive_number(env, "EPISODIC_EMBED_TIMEOUT", s.embed_timeout_s),
            sweep_interval_s=positive_number(env, "EPISODIC_SWEEP_INTERVAL", s.sweep_interval_s),
            sweep_batch=int(positive_number(env, "EPISODIC_SWEEP_BATCH", s.sweep_batch)),
            max_text_chars=int(positive_number(env, "EPISODIC_MAX_TEXT_CHARS", s.max_text_chars)),
            max_payload_bytes=int(
                positive_number(env, "EPISODIC_MAX_PAYLOAD_BYTES", s.max_payload_bytes)
            ),
            llm_url=env.get("EPISODIC_LLM_URL") or None,
            llm_model=env.get("EPISODIC_LLM_MODEL") or None,
            llm_api_key=env.get("EPISODIC_LLM_API_KEY") or None,
            llm_timeout_s=positive_number(env, "EPISODIC_LLM_TIMEOUT", s.llm_timeout_s),
            llm_query_terms=env.get("EPISODIC_LLM_QUERY_TERMS", "").lower() in ("1", "true"),
            key_expansion=env.get("EPISODIC_KEY_EXPANSION", "1").lower() not in ("0", "false"),
            cache_dir=Path(env["EPISODIC_CACHE_DIR"])
            if env.get("EPISODIC_CACHE_DIR")
            else s.cache_dir,
        )
        s = _upkeep_from_env(env, s)
        s = replace(s, **overrides)  # type: ignore[arg-type]
        _check_upkeep(s)
        if s.embedder not in EMBEDDER_CHOICES:
            raise InvalidInput(
                "EPISODIC_EMBEDDER",
                f"unknown embedder {s.embedder!r}; choose one of {', '.join(EMBEDDER_CHOICES)}",
            )
        return s


def positive_number(env: Mapping[str, str], name: str, default: float) -> float:
    """The positive number ``env[name]``, or ``default`` when unset or empty; a value that
    is not one is ``InvalidInput`` naming the variable."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(name, f"expected a number, got {raw!r}") from None
    if value <= 0:
        raise InvalidInput(name, f"must be positive, got {raw!r}")
    return value


def whole_number(
    env: Mapping[str, str], name: str, default: int, *, most: int | None = None
) -> int:
    """The whole number ``env[name]`` (0 or more, at most ``most`` when given), or
    ``default`` when unset or empty; a value that is not one is ``InvalidInput`` naming
    the variable."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if most is not None and (not raw.isdigit() or int(raw) > most):
        raise InvalidInput(name, f"expected a whole number from 0 to {most}, got {raw!r}")
    if not raw.isdigit():
        raise InvalidInput(name, f"expected a whole number (0 or more), got {raw!r}")
    return int(raw)


# -- upkeep ----------------------------------------------------------------------------
DECAY_FORMULA_CHOICES = ("crewship", "prominence")
MAX_WALK_DEPTH = 1  # the read-time walk is one hop (seed 000)


def _upkeep_from_env(env: Mapping[str, str], s: Settings) -> Settings:
    return replace(
        s,
        decay_formula=env.get("EPISODIC_DECAY_FORMULA", s.decay_formula).strip().lower(),
        decay_at=env.get("EPISODIC_DECAY_AT", s.decay_at).strip(),
        daily_at=env.get("EPISODIC_DAILY_AT", s.daily_at).strip(),
        review_interval_s=positive_number(env, "EPISODIC_REVIEW_INTERVAL", s.review_interval_s),
        review_recalls=env.get("EPISODIC_REVIEW_RECALLS", "1").lower() not in ("0", "false"),
        supersession=env.get("EPISODIC_SUPERSESSION", s.supersession).strip().lower(),
        consolidate_threshold=int(
            positive_number(env, "EPISODIC_CONSOLIDATE_THRESHOLD", s.consolidate_threshold)
        ),
        archive_after_days=positive_number(
            env, "EPISODIC_ARCHIVE_AFTER_DAYS", s.archive_after_days
        ),
        memory_walk_depth=parse_walk_depths(
            env.get("EPISODIC_MEMORY_WALK_DEPTH", ""), "EPISODIC_MEMORY_WALK_DEPTH"
        )
        or s.memory_walk_depth,
    )


def parse_walk_depths(raw: str, name: str = "memory_walk_depth") -> tuple[tuple[str, int], ...]:
    """``"deployer=1,planner=1"`` (a bare ``deployer`` means 1) as (agent, depth) pairs."""
    pairs: list[tuple[str, int]] = []
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        agent, _, depth = item.partition("=")
        try:
            value = int(depth) if depth.strip() else 1
        except ValueError:
            raise InvalidInput(name, f"expected agent=depth, got {item!r}") from None
        if not agent.strip() or not 0 <= value <= MAX_WALK_DEPTH:
            raise InvalidInput(name, f"expected agent=0 or agent=1 (one hop at most), got {item!r}")
        pairs.append((agent.strip(), value))
    return tuple(pairs)


def parse_clock(value: str, name: str) -> tuple[int, int]:
    """``"HH:MM"`` (UTC) as (hour, minute)."""
    hour, sep, minute = value.partition(":")
    try:
        h, m = int(hour), int(minute)
    except ValueError:
        h = m = -1
    if not sep or not (0 <= h < 24 and 0 <= m < 60):
        raise InvalidInput(name, f"expected a UTC time HH:MM such as 03:00, got {value!r}")
    return h, m


def _check_upkeep(s: Settings) -> None:
    if s.supersession not in SUPERSESSION_CHOICES:
        raise InvalidInput(
            "supersession",
            f"expected one of {', '.join(SUPERSESSION_CHOICES)}, got {s.supersession!r}",
        )
    if s.decay_formula not in DECAY_FORMULA_CHOICES:
        raise InvalidInput(
            "EPISODIC_DECAY_FORMULA",
            f"unknown decay formula {s.decay_formula!r}; "
            f"choose one of {', '.join(DECAY_FORMULA_CHOICES)}",
        )
    parse_clock(s.decay_at, "EPISODIC_DECAY_AT")
    parse_clock(s.daily_at, "EPISODIC_DAILY_AT")
    for agent, depth in s.memory_walk_depth:
        if not 0 <= depth <= MAX_WALK_DEPTH:
            raise InvalidInput("memory_walk_depth", f"{agent}: depth {depth} is not 0 or 1")
