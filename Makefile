# Hermes — the two commands of the README, plus the helpers they use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck bench clean mcp-servers

# The reference MCP servers the interop tests drive (tests/mcp/interop): pinned in its
# package-lock.json, installed with `npm ci` into a git-ignored folder, again whenever the lock
# changes. Only where node and npm exist: without node those tests skip, saying why.
INTEROP := tests/mcp/interop
MCP_SERVERS := .cache/mcp-servers
MCP_STAMP := $(MCP_SERVERS)/.installed
HAVE_NODE := $(and $(shell command -v node 2>/dev/null),$(shell command -v npm 2>/dev/null))
MCP_SERVERS_DEP := $(if $(HAVE_NODE),$(MCP_STAMP))

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEV_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev,semantic]"
	touch $@ $(STAMP)

$(MCP_STAMP): $(INTEROP)/package.json $(INTEROP)/package-lock.json
	mkdir -p $(MCP_SERVERS)
	cp $(INTEROP)/package.json $(INTEROP)/package-lock.json $(MCP_SERVERS)/
	npm ci --prefix $(MCP_SERVERS) --no-audit --no-fund --loglevel=error
	touch $@

## make mcp-servers — install the reference MCP servers now (make test does it when node exists).
mcp-servers: $(MCP_STAMP)

## make demo — install into .venv if needed, then run the guided offline conversation.
demo: $(STAMP)
	$(BIN)/hermes demo

## make test — install the dev extras (and the reference MCP servers where node exists), then
## lint, type-check and run the whole suite.
test: $(DEV_STAMP) $(MCP_SERVERS_DEP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

## make bench — install the peers (bench extra) and print the side-by-side figures.
bench: $(DEV_STAMP) $(MCP_SERVERS_DEP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python bench/turn_overhead.py
	$(BIN)/python bench/mcp_call.py --everything

clean:
	rm -rf $(VENV) .hermes build dist src/*.egg-info $(MCP_SERVERS)
