"""Adapters that give agent frameworks episodic memory."""
