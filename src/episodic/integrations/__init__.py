"""Adapters that plug episodic into agent frameworks; each needs its framework's extra."""
