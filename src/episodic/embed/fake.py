"""A deterministic stand-in embedder for tests: no model, no network, no randomness."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from episodic.embed.base import Matrix
from episodic.embed.check import check_matrix
from episodic.errors import EmbedderUnavailable, InvalidInput

if TYPE_CHECKING:
    import numpy as np
else:
    from episodic.lazy import np

_WORD = re.compile(r"\w+")
# Texts without any word still need a direction; they all share this one.
_EMPTY_TOKEN = "\x00empty"


class FakeEmbedder:
    """Signed feature hashing of lowercase word tokens into ``dim`` buckets.

    Texts that share words point in similar directions, so recall tests behave like they
    would with a real model. ``calls`` counts ``embed_batch`` calls (failed ones included)
    and ``texts_embedded`` the texts actually embedded. Set ``fail`` to simulate an outage.
    """

    def __init__(self, dim: int = 64, *, fail: bool = False) -> None:
        if dim < 2:
            raise InvalidInput("dim", f"must be at least 2, got {dim}")
        self._dim = dim
        self.fail = fail
        self.calls = 0
        self.texts_embedded = 0

    @property
    def model_id(self) -> str:
        # The dimension is part of the id: two fakes of different size are different models.
        return f"fake-bow-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        self.calls += 1
        if self.fail:
            raise EmbedderUnavailable("fake embedder is switched off (fail=True)")
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = _WORD.findall(text.lower()) or [_EMPTY_TOKEN]
            for token in tokens:
                bucket, sign = self._slot(token)
                out[row, bucket] += sign
            if not out[row].any():
                # Signed collisions can cancel exactly; fall back to the first token's slot.
                bucket, sign = self._slot(tokens[0])
                out[row, bucket] = sign
        self.texts_embedded += len(texts)
        return check_matrix(out, len(texts), self._dim, source=self.model_id)

    def _slot(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return (value >> 1) % self._dim, 1.0 if value & 1 else -1.0
