"""`make stress`: long runs of the suites whose CI-sized versions live in tests/.

The fixtures of tests/conftest.py (pg_server, db_url, raw_rows ...) apply here too.
"""
