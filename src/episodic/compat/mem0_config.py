"""A Mem0 config dict as episodic's settings: the keys that make sense here (the
database, the embedder, the LLM, the workspace) mapped, every other key named in one
warning rather than refused, so a Mem0 program's config runs as it is."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from episodic.config import Settings
from episodic.errors import InvalidInput

DEFAULT_WORKSPACE = "default"
_DB_KEYS = ("url", "connection_string", "db_url", "path")


def warn_unused(unused: list[str], what: str = "config keys") -> None:
    """One warning naming what a caller gave that means nothing here (never an error:
    code written for Mem0 keeps running)."""
    if unused:
        warnings.warn(
            f"episodic.compat.mem0: {what} not used here: " + ", ".join(unused),
            UserWarning,
            stacklevel=3,
        )


def settings_from_config(config: Mapping[str, Any]) -> tuple[Settings, str]:
    """Settings (over the ``EPISODIC_*`` environment) and the workspace from a Mem0
    config dict: the database (``vector_store.config.url`` / ``connection_string`` /
    ``path``, or ``db_url``), the embedder (``embedder.provider`` openai, ollama,
    huggingface/local, and its ``model``, ``api_key``, base url), the LLM (``llm.config``
    ``model``, ``api_key``, base url) and ``workspace``. Keys that mean nothing here are
    named in one warning."""
    if not isinstance(config, Mapping):
        raise InvalidInput("config", "expected a dict")
    over: dict[str, object] = {}
    unused: list[str] = []
    workspace = DEFAULT_WORKSPACE
    for key, value in config.items():
        if key == "workspace":
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput("workspace", "expected a non-empty string")
            workspace = value
        elif key == "db_url":
            over["db_url"] = _text("db_url", value)
        elif key == "vector_store":
            _vector_store(value, over, unused)
        elif key == "embedder":
            _embedder(value, over, unused)
        elif key == "llm":
            _llm(value, over, unused)
        else:
            unused.append(str(key))
    warn_unused(unused)
    return Settings.from_env(None, **over), workspace


def _text(field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(field, "expected a non-empty string")
    return value


def _section(name: str, value: object, unused: list[str]) -> tuple[str | None, dict[str, Any]]:
    if not isinstance(value, Mapping):
        raise InvalidInput(name, "expected a dict with provider and config")
    provider = value.get("provider")
    inner = value.get("config") or {}
    if not isinstance(inner, Mapping):
        raise InvalidInput(f"{name}.config", "expected a dict")
    unused.extend(f"{name}.{k}" for k in value if k not in ("provider", "config"))
    return (None if provider is None else str(provider).lower()), dict(inner)


def _vector_store(value: object, over: dict[str, object], unused: list[str]) -> None:
    provider, inner = _section("vector_store", value, unused)
    for key in _DB_KEYS:
        if key in inner:
            url = _text(f"vector_store.config.{key}", inner.pop(key))
            if key == "path" and "://" not in url:
                url = f"sqlite:///{url}" if url.endswith(".db") else f"sqlite:///{url}/memory.db"
            over["db_url"] = url
            break
    if provider not in (None, "sqlite", "pgvector", "postgres", "postgresql"):
        unused.append(f"vector_store.provider={provider}")
    unused.extend(f"vector_store.config.{k}" for k in inner)


def _embedder(value: object, over: dict[str, object], unused: list[str]) -> None:
    provider, inner = _section("embedder", value, unused)
    model = inner.pop("model", None)
    if provider == "openai":
        over["embedder"] = "openai"
        if model:
            over["openai_embed_model"] = _text("embedder.config.model", model)
        if "api_key" in inner:
            over["openai_api_key"] = _text("embedder.config.api_key", inner.pop("api_key"))
        base = inner.pop("openai_base_url", None) or inner.pop("base_url", None)
        if base:
            over["openai_base_url"] = _text("embedder.config.openai_base_url", base)
    elif provider == "ollama":
        over["embedder"] = "ollama"
        if model:
            over["ollama_model"] = _text("embedder.config.model", model)
        base = inner.pop("ollama_base_url", None) or inner.pop("base_url", None)
        if base:
            over["ollama_url"] = _text("embedder.config.ollama_base_url", base)
    elif provider in ("huggingface", "local", "fastembed", None):
        over["embedder"] = "local"  # the bundled model; another model name is not loaded
        if model:
            unused.append(f"embedder.config.model={model}")
    elif provider == "none":
        over["embedder"] = "none"
    else:
        unused.append(f"embedder.provider={provider}")
    unused.extend(f"embedder.config.{k}" for k in inner)


def _llm(value: object, over: dict[str, object], unused: list[str]) -> None:
    provider, inner = _section("llm", value, unused)
    if "model" in inner:
        over["llm_model"] = _text("llm.config.model", inner.pop("model"))
    if "api_key" in inner:
        over["llm_api_key"] = _text("llm.config.api_key", inner.pop("api_key"))
    base = next(
        (inner.pop(k) for k in ("openai_base_url", "base_url", "ollama_base_url") if k in inner),
        None,
    )
    if base is not None:
        url = _text("llm.config.base_url", base).rstrip("/")
        over["llm_url"] = url + "/v1" if provider == "ollama" and not url.endswith("/v1") else url
    elif provider == "openai":
        over["llm_url"] = "https://api.openai.com/v1"
    elif provider == "ollama":
        over["llm_url"] = "http://localhost:11434/v1"
    elif provider is not None:
        unused.append(f"llm.provider={provider}")
    unused.extend(f"llm.config.{k}" for k in inner)
