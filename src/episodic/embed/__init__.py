"""Embedders behind one protocol."""

from episodic.embed.base import Embedder, Matrix, Vector

__all__ = ["Embedder", "Matrix", "Vector"]
