"""Settings, read once from the environment (``EPISODIC_*``) with defaults.

Everything a user can tune lives here so interfaces pass one object around.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from episodic.errors import InvalidInput

DEFAULT_DB_URL = "sqlite:///./.episodic/memory.db"
EMBEDDER_CHOICES = ("local", "ollama", "openai", "none")


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "episodic"


@dataclass(frozen=True, slots=True)
class Settings:
    db_url: str = DEFAULT_DB_URL
    embedder: str = "local"
    ollama_url: str = "http://localhost:11434"
    ollama_model: str = "nomic-embed-text"
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str | None = None
    openai_embed_model: str = "text-embedding-3-small"
    embed_timeout_s: float = 10.0
    sweep_interval_s: float = 30.0
    sweep_batch: int = 64
    max_text_chars: int = 16_384  # summary size cap per event
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
    cache_dir: Path = field(default_factory=_default_cache_dir)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = os.environ if env is None else env
        s = cls()
        s = replace(
            s,
            db_url=env.get("EPISODIC_DB", s.db_url),
            embedder=env.get("EPISODIC_EMBEDDER", s.embedder).strip().lower(),
            ollama_url=env.get("EPISODIC_OLLAMA_URL", s.ollama_url),
            ollama_model=env.get("EPISODIC_OLLAMA_MODEL", s.ollama_model),
            openai_base_url=env.get("EPISODIC_OPENAI_BASE_URL", s.openai_base_url),
            openai_api_key=env.get("EPISODIC_OPENAI_API_KEY") or env.get("OPENAI_API_KEY"),
            openai_embed_model=env.get("EPISODIC_OPENAI_EMBED_MODEL", s.openai_embed_model),
            embed_timeout_s=_num(env, "EPISODIC_EMBED_TIMEOUT", s.embed_timeout_s),
            sweep_interval_s=_num(env, "EPISODIC_SWEEP_INTERVAL", s.sweep_interval_s),
            sweep_batch=int(_num(env, "EPISODIC_SWEEP_BATCH", s.sweep_batch)),
            max_text_chars=int(_num(env, "EPISODIC_MAX_TEXT_CHARS", s.max_text_chars)),
            max_payload_bytes=int(_num(env, "EPISODIC_MAX_PAYLOAD_BYTES", s.max_payload_bytes)),
            llm_url=env.get("EPISODIC_LLM_URL") or None,
            llm_model=env.get("EPISODIC_LLM_MODEL") or None,
            llm_api_key=env.get("EPISODIC_LLM_API_KEY") or None,
            llm_timeout_s=_num(env, "EPISODIC_LLM_TIMEOUT", s.llm_timeout_s),
            llm_query_terms=env.get("EPISODIC_LLM_QUERY_TERMS", "").lower() in ("1", "true"),
            key_expansion=env.get("EPISODIC_KEY_EXPANSION", "1").lower() not in ("0", "false"),
            cache_dir=Path(env["EPISODIC_CACHE_DIR"])
            if env.get("EPISODIC_CACHE_DIR")
            else s.cache_dir,
        )
        s = replace(s, **overrides)  # type: ignore[arg-type]
        if s.embedder not in EMBEDDER_CHOICES:
            raise InvalidInput(
                "EPISODIC_EMBEDDER",
                f"unknown embedder {s.embedder!r}; choose one of {', '.join(EMBEDDER_CHOICES)}",
            )
        return s


def _num(env: Mapping[str, str], name: str, default: float) -> float:
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
