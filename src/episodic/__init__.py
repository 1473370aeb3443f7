"""episodic: an episodic-memory layer for LLM agents."""

__version__ = "0.1.0"
