"""Benchmarks of recall quality on public data sets (``episodic bench ...``)."""
