"""validate_arguments against real tool schemas (seed 003 §4.2): the schemas of public MCP servers
and of OpenAPI / API-discovery descriptions, each with calls a correct model sends (accepted)
and broken twins (refused). The corpus, its sources and licences: ``corpus/SOURCES.md``; how
the calls were made: ``corpus/collect.py``. The figures: BENCHMARKS.md, "Validation on real
tool schemas".
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from hermes.tools import ToolArgumentError, validate_arguments

CORPUS = Path(__file__).parent / "corpus" / "real_schemas.jsonl"


@cache
def _entries() -> list[dict[str, Any]]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _source(entry: dict[str, Any]) -> str:
    return str(entry["id"]).rsplit(":", 1)[0]  # "github/github-mcp-server:create_issue"


def _sources() -> list[str]:
    return sorted({_source(e) for e in _entries()})


def _of(source: str) -> list[dict[str, Any]]:
    return [e for e in _entries() if _source(e) == source]


def _as_written(schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def test_the_corpus_holds_hundreds_of_real_schemas_from_several_sources() -> None:
    entries = _entries()
    assert len(entries) >= 500
    counts = Counter(_source(e) for e in entries)
    assert len(counts) >= 6
    assert min(counts.values()) >= 60
    assert sum(len(e["valid"]) for e in entries) >= 1000
    assert sum(len(e["broken"]) for e in entries) >= 1000


def test_the_corpus_carries_schemas_whose_defaults_do_not_fit_them() -> None:
    # The case this suite exists for: "default": "false" on a boolean, "250" on an integer,
    # null on an object (Google discovery documents, OpenAI's OpenAPI description).
    assert (
        sum(
            '"default":"false"' in json.dumps(e["schema"], separators=(",", ":"))
            for e in _entries()
        )
        >= 20
    )


@pytest.mark.parametrize("source", _sources())
def test_every_valid_call_is_accepted(source: str) -> None:
    refused = []
    for entry in _of(source):
        for call in entry["valid"]:
            try:
                validate_arguments(entry["schema"], call)
            except ToolArgumentError as exc:
                refused.append(f"{entry['id']}: {exc}")
    assert refused == []


@pytest.mark.parametrize("source", _sources())
def test_what_validation_returns_satisfies_the_schema_as_written(source: str) -> None:
    # Defaults filled in and values coerced never produce something the schema refuses.
    wrong = []
    for entry in _of(source):
        check = _as_written(entry["schema"])
        for call in entry["valid"]:
            result = validate_arguments(entry["schema"], call)
            if not check.is_valid(result):
                wrong.append(f"{entry['id']}: {next(iter(check.iter_errors(result))).message}")
    assert wrong == []


@pytest.mark.parametrize("source", _sources())
def test_calls_that_leave_every_optional_field_out_never_trip_on_a_default(source: str) -> None:
    refused = []
    for entry in _of(source):
        required = set(entry["schema"].get("required", ()))
        minimal = {k: v for k, v in entry["valid"][0].items() if k in required}
        try:
            validate_arguments(entry["schema"], minimal)
        except ToolArgumentError as exc:
            refused.append(f"{entry['id']}: {exc}")
    assert refused == []


@pytest.mark.parametrize("source", _sources())
def test_every_broken_twin_is_refused_naming_its_field(source: str) -> None:
    accepted, unnamed = [], []
    for entry in _of(source):
        for twin in entry["broken"]:
            why = twin["why"]
            try:
                validate_arguments(entry["schema"], twin["args"])
            except ToolArgumentError as exc:
                field = why.split(":", 1)[1] if ":" in why else "zz_not_in_schema"
                if not any(p.path.split(".")[0].split("[")[0] == field for p in exc.problems):
                    unnamed.append(f"{entry['id']} {why}: {exc}")
            else:
                accepted.append(f"{entry['id']} {why}")
    assert accepted == []
    assert unnamed == []


def test_the_caller_s_arguments_are_never_mutated() -> None:
    for entry in _entries()[::7]:
        for call in [*entry["valid"], *(t["args"] for t in entry["broken"])]:
            before = json.dumps(call, sort_keys=True)
            with contextlib.suppress(ToolArgumentError):
                validate_arguments(entry["schema"], call)
            assert json.dumps(call, sort_keys=True) == before, entry["id"]
