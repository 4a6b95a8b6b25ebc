# Hermes — the two commands of the README, plus the helpers they use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEV_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@ $(STAMP)

## make demo — install into .venv if needed, then run the guided offline conversation.
demo: $(STAMP)
	$(BIN)/hermes demo

## make test — install the dev extras, then lint, type-check and run the whole suite.
test: $(DEV_STAMP)
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
bench: $(DEV_STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python bench/turn_overhead.py

clean:
	rm -rf $(VENV) .hermes build dist src/*.egg-info
