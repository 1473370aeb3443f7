"""The Embedder protocol and helpers built on it.

An embedder implements one method, ``embed_batch``; everything else (batching, caching,
validation) is built on top so every adapter behaves the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# Strings, so that importing the protocol (as every recall does) does not import numpy.
Vector: TypeAlias = "npt.NDArray[np.float32]"
Matrix: TypeAlias = "npt.NDArray[np.float32]"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        """float32 array of shape (len(texts), dim), each row L2-normalised."""
        ...
