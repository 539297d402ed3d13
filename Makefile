# Kafka Lab.  `make run` serves the lab at http://127.0.0.1:8000; `make test` checks everything.
# Both install what is missing on Debian (ZooKeeper and Java; Chromium for the browser tests,
# PostgreSQL for the database tests and kcat for the wire tests; a virtual environment in .venv) and do
# nothing more on a second run.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=

VENV := .venv
STAMP := $(VENV)/.installed
ZOOKEEPER_JAR := /usr/share/java/zookeeper.jar
CHROMIUM := /usr/bin/chromium
POSTGRES_INITDB := /usr/lib/postgresql/*/bin/initdb
KCAT := /usr/bin/kcat
REDIS_SERVER := /usr/bin/redis-server
# Lab worker processes: one per core (a Python process runs on one core at a time); 0 runs the labs in
# the web process.
WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# `$(APT_INSTALL) pkg...`: apt-get install, refreshing the package lists first only when there are
# none, and once more only if the install fails (stale lists).
APT_INSTALL = apt_install() { \
	  export DEBIAN_FRONTEND=noninteractive; \
	  if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then $(SUDO) apt-get update -q; fi; \
	  $(SUDO) apt-get install -y -q --no-install-recommends "$$@" \
	    || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends "$$@"; }; \
	}; apt_install

.PHONY: help run test fuzz lint typecheck pytest schema-tests browser-tests system-zookeeper system-redis system-chromium system-postgresql system-kcat clean

help:
	@echo "make run    serve the lab at http://$(HOST):$(PORT) with a managed ZooKeeper (Ctrl-C stops all)"
	@echo "make run WORKERS=N   the labs run by N worker processes over a managed Redis (default: one per core;"
	@echo "                     WORKERS=0 runs them in the web process)"
	@echo "make test   ruff; mypy beside pytest; then the browser tests in Chromium"
	@echo "make fuzz   the generated tests (Hypothesis, schemathesis) with new examples each run"
	@echo "make clean  remove .venv, var/ and caches"

run: system-zookeeper system-redis $(STAMP)
	$(VENV)/bin/python -m lab.serve --host $(HOST) --port $(PORT) --workers $(WORKERS)

# ruff first (seconds: a style slip fails fast); mypy beside pytest, whose two processes wait on real
# processes more than they compute; then the browser tests beside the schemathesis module. The browser
# tests keep a phase of their own: beside the rest, on a loaded two-core machine, their servers took
# over a minute to start.
test: system-zookeeper system-redis system-chromium system-postgresql system-kcat $(STAMP)
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory -j2 --output-sync=target typecheck pytest
	$(MAKE) --no-print-directory -j2 --output-sync=target schema-tests browser-tests

lint: $(STAMP)
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The suite waits on real processes (ZooKeeper, workers, servers, Chromium) more than it computes, so
# it runs in two pytest processes (pytest-xdist; a test module stays in one), and the schemathesis
# module beside the browser tests. Each process starts its own ZooKeeper, Redis and database and takes
# its labs' ports from a window of its own. Modules are handed out in the order tests/conftest.py sorts
# them (the long ones first), not pytest-xdist's (most tests first), so that no long module is left for
# last while the other process idles. pytest exits 5 when it collects nothing; make counts that as the
# failure it is.
TEST_PROCESSES ?= 2
XDIST := -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder

# The schemathesis module runs in a pytest of its own: under pytest-xdist, beside other modules, its
# per-operation tests collapse into one that checks nothing. Alone, its operations are shared out test by
# test over two processes (each test makes a lab: twice as fast).
SCHEMA_TESTS := tests/api/test_schema.py

pytest: $(STAMP)
	$(VENV)/bin/pytest -m "not browser" $(XDIST) --ignore $(SCHEMA_TESTS) $(PYTEST_ARGS)

schema-tests: $(STAMP)
	$(VENV)/bin/pytest -n $(TEST_PROCESSES) --dist load $(SCHEMA_TESTS) $(PYTEST_ARGS)

# The generated tests (Hypothesis, schemathesis) with new examples each run: `make test` repeats the same
# ones (tests/conftest.py). Run it a few times after touching the engine or the API.
FUZZ_TESTS = $(shell grep -rl '@given' tests --include='test_*.py')
fuzz: system-zookeeper system-redis $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(VENV)/bin/pytest -n $(TEST_PROCESSES) $(FUZZ_TESTS) $(PYTEST_ARGS)
	HYPOTHESIS_PROFILE=fuzz $(VENV)/bin/pytest -n $(TEST_PROCESSES) --dist load $(SCHEMA_TESTS) $(PYTEST_ARGS)

# Browser tests run in pytest processes of their own: an asyncio test after a sync Playwright test in
# one process fails.
browser-tests: $(STAMP)
	$(VENV)/bin/pytest -m browser $(XDIST) tests/browser $(PYTEST_ARGS)

system-zookeeper:
	@if [ ! -f $(ZOOKEEPER_JAR) ] || ! command -v java >/dev/null; then \
	  echo "Installing Debian's zookeeper (and Java with it)..."; \
	  $(APT_INSTALL) zookeeper; \
	fi

# Labs over worker processes talk through channels' Redis layer; the lab starts its own server
# (lab/redis_server.py), the test run too. Debian's service is not used.
system-redis:
	@if [ ! -x $(REDIS_SERVER) ]; then \
	  echo "Installing Debian's redis-server for the lab's workers..."; \
	  $(APT_INSTALL) redis-server; \
	fi

system-chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	  echo "Installing Debian's chromium for the browser tests..."; \
	  $(APT_INSTALL) chromium; \
	fi

# The tests start their own throwaway server from these binaries (tests/postgres_server.py), as the
# postgres user when run as root; Debian's own cluster is not used.
system-postgresql:
	@if ! compgen -G '$(POSTGRES_INITDB)' >/dev/null; then \
	  echo "Installing Debian's postgresql for the database tests..."; \
	  $(APT_INSTALL) postgresql; \
	fi

system-kcat:
	@if [ ! -x $(KCAT) ]; then \
	  echo "Installing Debian's kcat for the wire tests..."; \
	  $(APT_INSTALL) kcat; \
	fi

$(VENV)/bin/python:
	@if ! command -v $(PYTHON) >/dev/null; then $(APT_INSTALL) python3 python3-venv; fi
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	  || { echo "Kafka Lab needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) --version 2>&1)." >&2; exit 1; }
	@$(PYTHON) -m venv $(VENV) 2>/dev/null \
	  || { rm -rf $(VENV); $(APT_INSTALL) python3-venv; $(PYTHON) -m venv $(VENV); }

# Re-installed only when pyproject.toml changes.
$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .hypothesis test-artifacts *.egg-info
