"""`make stress`: long runs of the suites whose CI-sized versions live in tests/.

The fixtures of tests/conftest.py (pgserver, db_url, raw_rows ...) apply here too.
"""
