"""Embedders behind one protocol, and the factory that picks one from the settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from episodic.config import EMBEDDER_CHOICES, Settings
from episodic.embed.base import Embedder, Matrix, Vector
from episodic.embed.cache import CachedEmbedder, DictCache, EmbeddingCache, content_hash
from episodic.embed.check import check_matrix
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput

# The embedders that need httpx or onnxruntime are imported when one is made: a process
# that embeds nothing (a keyword-only recall, `episodic --help`) does not load them.
if TYPE_CHECKING:
    from episodic.embed.http import OllamaEmbedder, OpenAIEmbedder
    from episodic.embed.local import MiniLMEmbedder

_HOMES = {
    "OllamaEmbedder": "episodic.embed.http",
    "OpenAIEmbedder": "episodic.embed.http",
    "MiniLMEmbedder": "episodic.embed.local",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(home), name)


__all__ = [
    "CachedEmbedder",
    "DictCache",
    "Embedder",
    "EmbeddingCache",
    "FakeEmbedder",
    "Matrix",
    "MiniLMEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "Vector",
    "check_matrix",
    "content_hash",
    "make_embedder",
]


def make_embedder(settings: Settings) -> Embedder | None:
    """The embedder ``settings.embedder`` asks for; None means sparse-only ("none").

    Nothing heavy happens here: the local model loads on first use and remote embedders are
    not contacted, so this never blocks. A missing local model raises EmbedderUnavailable.
    """
    kind = settings.embedder
    if kind == "none":
        return None
    if kind == "local":
        from episodic.embed.local import MiniLMEmbedder

        return MiniLMEmbedder(cache_dir=settings.cache_dir)
    if kind == "ollama":
        from episodic.embed.http import OllamaEmbedder

        return OllamaEmbedder(
            url=settings.ollama_url,
            model=settings.ollama_model,
            timeout_s=settings.embed_timeout_s,
        )
    if kind == "openai":
        from episodic.embed.http import OpenAIEmbedder

        return OpenAIEmbedder(
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            model=settings.openai_embed_model,
            timeout_s=settings.embed_timeout_s,
        )
    raise InvalidInput(
        "EPISODIC_EMBEDDER",
        f"unknown embedder {kind!r}; choose one of {', '.join(EMBEDDER_CHOICES)}",
    )
