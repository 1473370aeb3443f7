"""Remote embedders: Ollama and any OpenAI-compatible ``/embeddings`` endpoint.

Every failure to get an answer (refused connection, timeout, HTTP error) becomes
EmbedderUnavailable, whose message names the URL and the fix; an answer that cannot be used
(wrong count or dimension, NaN/inf, malformed JSON) becomes BadEmbedding. Callers therefore
handle two errors, not httpx's dozen.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import httpx
import numpy as np

from episodic.embed.base import Matrix
from episodic.embed.check import check_matrix
from episodic.errors import BadEmbedding, EmbedderUnavailable, InvalidInput

DEFAULT_BATCH = 64
PROBE_TEXT = "episodic embedder probe"
# Enough of an error body to show the server's reason, not a whole HTML error page.
_BODY_SNIPPET = 300


class _RemoteEmbedder:
    """Batching, timeouts, error mapping and validation shared by the HTTP adapters."""

    service = "embedding server"

    def __init__(
        self,
        *,
        endpoint: str,
        model: str,
        timeout_s: float,
        dim: int | None,
        batch_size: int,
        headers: dict[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not model:
            raise InvalidInput("model", "an embedding model name is required")
        if not timeout_s > 0 or not math.isfinite(timeout_s):
            raise InvalidInput("embed_timeout_s", f"must be a positive number, got {timeout_s}")
        if dim is not None and dim < 1:
            raise InvalidInput("dim", f"must be positive, got {dim}")
        self.endpoint = endpoint
        self.model = model
        self.timeout_s = timeout_s
        self.batch_size = max(1, batch_size)
        self._dim = dim
        self._dim_lock = threading.Lock()
        # One pooled client per embedder: reusing the connection matters more than anything
        # else for small batches against a local server.
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s),
            headers=headers or {},
            transport=transport,
        )

    # -- the Embedder protocol ------------------------------------------------------------
    @property
    def model_id(self) -> str:
        raise NotImplementedError

    @property
    def dim(self) -> int:
        """The model's dimension; if no answer has taught it yet, one probe request asks."""
        if self._dim is None:
            self.probe()
        assert self._dim is not None  # probe() either learned it or raised
        return self._dim

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = [
            self._embed_chunk(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def expect_dim(self, dim: int | None) -> None:
        """Refuse answers that are not ``dim``-d from now on (the dimension of the vectors
        already stored for this model); None forgets it, and the next answer teaches it."""
        if dim is not None and dim < 1:
            raise InvalidInput("dim", f"must be positive, got {dim}")
        with self._dim_lock:
            self._dim = dim

    def probe(self) -> int:
        """Embed one short text to check the server is reachable and sane; returns the dim."""
        return int(self._embed_chunk([PROBE_TEXT]).shape[1])

    # -- lifecycle ------------------------------------------------------------------------
    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- per protocol ---------------------------------------------------------------------
    def _body(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _vectors(self, payload: Any, n: int) -> list[Any]:
        raise NotImplementedError

    def _fix_hint(self) -> str:
        raise NotImplementedError

    # -- shared machinery -----------------------------------------------------------------
    def _embed_chunk(self, texts: list[str]) -> Matrix:
        payload = self._post(self._body(texts))
        rows = self._vectors(payload, len(texts))
        if len(rows) != len(texts):
            raise BadEmbedding(
                f"{self.service} at {self.endpoint} returned {len(rows)} vectors "
                f"for {len(texts)} texts"
            )
        widths = {len(r) if isinstance(r, list) else -1 for r in rows}
        if len(widths) != 1 or -1 in widths:
            raise BadEmbedding(
                f"{self.service} at {self.endpoint} returned vectors of differing sizes"
            )
        width = widths.pop()
        if width == 0:
            raise BadEmbedding(f"{self.service} at {self.endpoint} returned empty vectors")
        with self._dim_lock:
            if self._dim is None:
                self._dim = width
            expected = self._dim
        return check_matrix(
            rows, len(texts), expected, source=f"{self.service} at {self.endpoint} ({self.model})"
        )

    def _post(self, body: dict[str, Any]) -> Any:
        where = f"{self.service} at {self.endpoint}"
        try:
            response = self._client.post(self.endpoint, json=body)
        except httpx.TimeoutException as exc:
            raise EmbedderUnavailable(
                f"{where} did not answer within {self.timeout_s:g}s "
                f"(raise EPISODIC_EMBED_TIMEOUT if it is just slow); {self._fix_hint()}"
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbedderUnavailable(
                f"cannot reach {where} ({type(exc).__name__}: {exc}); {self._fix_hint()}"
            ) from exc
        if response.status_code >= 400:
            reason = response.text[:_BODY_SNIPPET].strip() or response.reason_phrase
            raise EmbedderUnavailable(
                f"{where} answered HTTP {response.status_code}: {reason}; {self._fix_hint()}"
            )
        try:
            return response.json()
        except ValueError as exc:
            raise BadEmbedding(f"{where} answered with something that is not JSON") from exc


class OllamaEmbedder(_RemoteEmbedder):
    """Ollama's ``POST /api/embed`` (``{"model", "input": [...]}`` -> ``{"embeddings"}``)."""

    service = "Ollama"

    def __init__(
        self,
        *,
        url: str = "http://localhost:11434",
        model: str = "nomic-embed-text",
        timeout_s: float = 10.0,
        dim: int | None = None,
        batch_size: int = DEFAULT_BATCH,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            endpoint=url.rstrip("/") + "/api/embed",
            model=model,
            timeout_s=timeout_s,
            dim=dim,
            batch_size=batch_size,
            transport=transport,
        )

    @property
    def model_id(self) -> str:
        return f"ollama/{self.model}"

    def _vectors(self, payload: Any, n: int) -> list[Any]:
        rows = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(rows, list):
            raise BadEmbedding(f"Ollama at {self.endpoint} answered without an 'embeddings' list")
        return rows

    def _fix_hint(self) -> str:
        return (
            f"start Ollama (`ollama serve`) and pull the model (`ollama pull {self.model}`), "
            "point EPISODIC_OLLAMA_URL at it, or choose another embedder with "
            "EPISODIC_EMBEDDER=local|openai|none"
        )


class OpenAIEmbedder(_RemoteEmbedder):
    """An OpenAI-compatible ``POST {base_url}/embeddings`` (answers reordered by index)."""

    service = "OpenAI-compatible endpoint"

    def __init__(
        self,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        model: str = "text-embedding-3-small",
        timeout_s: float = 10.0,
        dim: int | None = None,
        batch_size: int = DEFAULT_BATCH,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        # Local OpenAI-compatible servers often need no key, so none is sent when unset.
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        super().__init__(
            endpoint=base_url.rstrip("/") + "/embeddings",
            model=model,
            timeout_s=timeout_s,
            dim=dim,
            batch_size=batch_size,
            headers=headers,
            transport=transport,
        )

    @property
    def model_id(self) -> str:
        return f"openai/{self.model}"

    def _vectors(self, payload: Any, n: int) -> list[Any]:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise BadEmbedding(f"{self.endpoint} answered without a 'data' list")
        by_index: dict[int, Any] = {}
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) or index in by_index:
                raise BadEmbedding(f"{self.endpoint} answered with missing or repeated indexes")
            by_index[index] = item.get("embedding")
        if len(by_index) == n and set(by_index) != set(range(n)):
            raise BadEmbedding(f"{self.endpoint} answered with indexes outside 0..{n - 1}")
        return [by_index[i] for i in sorted(by_index)]

    def _fix_hint(self) -> str:
        return (
            "check EPISODIC_OPENAI_BASE_URL, EPISODIC_OPENAI_API_KEY and "
            f"EPISODIC_OPENAI_EMBED_MODEL ({self.model}), or choose another embedder with "
            "EPISODIC_EMBEDDER=local|ollama|none"
        )
