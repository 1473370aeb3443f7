"""Storage backends behind one protocol."""

from episodic.store.base import AppendResult, PendingVector, Store, StoreStats, Vector

__all__ = ["AppendResult", "PendingVector", "Store", "StoreStats", "Vector"]
