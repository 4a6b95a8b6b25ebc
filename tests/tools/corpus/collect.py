"""Build ``real_schemas.json``: tool schemas from public MCP servers and OpenAPI specs, each with
calls a correct model would send and broken twins a validator must refuse.

Not run by the tests (they read the JSON it wrote); run again to refresh the corpus::

    python tests/tools/corpus/collect.py SOURCES_DIR

``SOURCES_DIR`` holds one checkout per source repository, named ``owner+name`` with the
repository (or its bare git directory) in ``owner+name/repo``; the files are read at the commit
recorded in ``SOURCES`` below. Where each schema came from and its licence is in ``SOURCES.md``.

OpenAPI operations become tool schemas the way OpenAPI-to-MCP bridges build them: one object
whose properties are the path, query and form parameters plus the JSON body's properties,
``$ref``s rewritten to ``#/$defs``, OpenAPI 3.0's ``nullable`` and boolean
``exclusiveMinimum``/``exclusiveMaximum`` translated to JSON Schema. Defaults are kept exactly as
the specs write them (that is the point: some do not fit their own schema).

The calls are checked with ``jsonschema`` against the schema as written: a *valid* call is one
``jsonschema`` accepts with no default filled in (what a correct model sends); a *broken* twin is
one it refuses, built so that no safe coercion can repair it (a required field left out, an
object where a scalar belongs, a word where a number belongs, a value outside an enum). The
``unknown_field`` twins are refused by Hermes's policy (object schemas are closed unless they
say otherwise), not by ``jsonschema``.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

HERE = Path(__file__).parent
OUT = HERE / "real_schemas.jsonl"
SOURCES_MD = HERE / "SOURCES.md"

#: repository → (commit, licence, kind). The commit is the snapshot the corpus was built from.
SOURCES: dict[str, dict[str, str]] = {
    "github/github-mcp-server": {
        "commit": "64a49f34",
        "licence": "MIT",
        "kind": "mcp",
        "files": "pkg/github/__toolsnaps__/*.snap (tools/list snapshots of the server's tools)",
    },
    "jakemannix/mcp-proxy": {
        "commit": "4384b8a2",
        "licence": "MIT",
        "kind": "mcp",
        "files": "demo/mcp-snapshots/*.json (captured tools/list of the reference servers "
        "github, filesystem, memory, puppeteer, fetch and of Cloudflare's browser, docs and "
        "radar servers)",
    },
    "openai/openai-openapi": {
        "commit": "HEAD",
        "licence": "MIT",
        "kind": "openapi",
        "files": "openapi.json (OpenAPI 3.1)",
    },
    "discord/discord-api-spec": {
        "commit": "HEAD",
        "licence": "MIT",
        "kind": "openapi",
        "files": "specs/openapi.json (OpenAPI 3.1)",
    },
    "twilio/twilio-oai": {
        "commit": "HEAD",
        "licence": "MIT",
        "kind": "openapi",
        "files": "spec/json/twilio_api_v2010.json, spec/json/twilio_messaging_v1.json "
        "(OpenAPI 3.0)",
    },
    "slackapi/slack-api-specs": {
        "commit": "HEAD",
        "licence": "MIT",
        "kind": "openapi",
        "files": "web-api/slack_web_openapi_v2_without_examples.json (Swagger 2.0)",
    },
    # Google's API discovery documents as the PyPI package google-api-python-client ships them
    # (its wheel, read as a zip file: SOURCES_DIR/google_api_python_client-*.whl).
    "pypi:google-api-python-client": {
        "commit": "2.202.0",
        "licence": "Apache-2.0",
        "kind": "discovery",
        "files": "googleapiclient/discovery_cache/documents/{calendar.v3,drive.v3,gmail.v1,"
        "tasks.v1,youtube.v3,sheets.v4}.json (Google API discovery documents)",
    },
}
_DISCOVERY = ("calendar.v3", "drive.v3", "gmail.v1", "tasks.v1", "youtube.v3", "sheets.v4")
#: At most this many operations per OpenAPI file (every one with a default is taken first).
MAX_OPERATIONS = 70
#: Operations whose schema (with its $defs) serializes larger than this are left out.
MAX_SCHEMA_CHARS = 40_000
_METHODS = ("get", "post", "put", "patch", "delete")
_UNKNOWN_FIELD = "zz_not_in_schema"


def main(sources_dir: Path) -> None:
    entries: list[dict[str, Any]] = []
    commits: dict[str, str] = {}
    for repo, info in SOURCES.items():
        if info["kind"] == "discovery":
            commits[repo] = info["commit"]
            raw = list(_discovery(sources_dir, info["commit"]))
        else:
            git = _Git(sources_dir / repo.replace("/", "+") / "repo", info["commit"])
            commits[repo] = git.commit
            raw = list(_mcp_tools(repo, git) if info["kind"] == "mcp" else _openapi(repo, git))
        for source, name, schema in raw:
            entry = _entry(repo, source, name, schema)
            if entry is not None:
                entries.append(entry)
    with OUT.open("w", encoding="utf-8") as out:
        for entry in entries:  # one schema a line: reviewable diffs
            out.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
    counts = {repo: sum(e["id"].startswith(repo + ":") for e in entries) for repo in SOURCES}
    lines = [
        "# Where the schemas of real_schemas.jsonl come from",
        "",
        "Written by `collect.py` (its docstring says how the schemas and calls were made).",
        "Tool schemas are interface descriptions taken from these public sources under their",
        "licences; each line of `real_schemas.jsonl` names its source file in `source`.",
        "",
        "| Source | Snapshot | Licence | Schemas | Files |",
        "|--------|----------|---------|---------|-------|",
    ]
    for repo, info in SOURCES.items():
        lines.append(
            f"| {repo} | {commits[repo][:12]} | {info['licence']} | {counts[repo]} | "
            f"{info['files']} |"
        )
    SOURCES_MD.write_text("\n".join(lines) + "\n", encoding="utf-8")
    valid = sum(len(e["valid"]) for e in entries)
    broken = sum(len(e["broken"]) for e in entries)
    print(f"{len(entries)} schemas, {valid} valid calls, {broken} broken twins -> {OUT}")


class _Git:
    def __init__(self, path: Path, commit: str) -> None:
        self.path = path
        self.commit = self._run("rev-parse", commit).strip()

    def _run(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.path), *args], check=True, capture_output=True, text=True
        ).stdout

    def show(self, file: str) -> str:
        return self._run("show", f"{self.commit}:{file}")

    def files(self, prefix: str) -> list[str]:
        return self._run("ls-tree", "-r", "--name-only", self.commit, prefix).split()


# sources -------------------------------------------------------------------------------------
def _mcp_tools(repo: str, git: _Git) -> Iterator[tuple[str, str, dict[str, Any]]]:
    if repo == "github/github-mcp-server":
        for file in git.files("pkg/github/__toolsnaps__/"):
            tool = json.loads(git.show(file))
            yield file, tool["name"], tool["inputSchema"]
        return
    for file in git.files("demo/mcp-snapshots/"):
        if not file.endswith(".json") or "examples" in file or "projection" in file:
            continue
        try:
            data = json.loads(git.show(file))
        except ValueError:  # an empty capture in that repository
            continue
        for tool in data.get("tools", []):
            yield file, tool["name"], tool["inputSchema"]


def _openapi(repo: str, git: _Git) -> Iterator[tuple[str, str, dict[str, Any]]]:
    files = {
        "openai/openai-openapi": ["openapi.json"],
        "discord/discord-api-spec": ["specs/openapi.json"],
        "twilio/twilio-oai": [
            "spec/json/twilio_api_v2010.json",
            "spec/json/twilio_messaging_v1.json",
        ],
        "slackapi/slack-api-specs": ["web-api/slack_web_openapi_v2_without_examples.json"],
    }[repo]
    for file in files:
        spec = json.loads(git.show(file))
        converted = []
        for path, item in sorted(spec.get("paths", {}).items()):
            for method in _METHODS:
                operation = item.get(method)
                if not isinstance(operation, dict):
                    continue
                name = operation.get("operationId") or f"{method}_{path}"
                schema = _operation_schema(spec, item, operation)
                if schema is not None:
                    converted.append((f"{file} {method.upper()} {path}", name, schema))
        with_defaults = [c for c in converted if '"default"' in json.dumps(c[2])]
        others = [c for c in converted if c not in with_defaults]
        yield from (with_defaults + others)[:MAX_OPERATIONS]


def _discovery(sources_dir: Path, version: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Discovery methods as tool schemas: parameters (``repeated`` ones as arrays, string
    bounds as numbers) and the request body as ``body``; defaults verbatim ("false", "250")."""
    import zipfile

    (wheel,) = sources_dir.glob(f"google_api_python_client-{version}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for api in _DISCOVERY:
            file = f"googleapiclient/discovery_cache/documents/{api}.json"
            doc = json.loads(archive.read(file))
            converted = []
            for method in sorted(_discovery_methods(doc["resources"]), key=lambda m: m["id"]):
                schema = _discovery_schema(doc, method)
                if schema is not None:
                    converted.append((f"{file} {method['id']}", method["id"], schema))
            with_defaults = [c for c in converted if '"default"' in json.dumps(c[2])]
            others = [c for c in converted if c not in with_defaults]
            yield from (with_defaults + others)[: MAX_OPERATIONS // 2]


def _discovery_methods(resources: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for resource in resources.values():
        yield from resource.get("methods", {}).values()
        yield from _discovery_methods(resource.get("resources", {}))


def _discovery_schema(doc: dict[str, Any], method: dict[str, Any]) -> dict[str, Any] | None:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in method.get("parameters", {}).items():
        schema = _discovery_node(param)
        if param.get("repeated"):
            schema = {
                "type": "array",
                "items": schema,
                "description": schema.pop("description", ""),
            }
        properties[name] = schema
        if param.get("required"):
            required.append(name)
    if isinstance(method.get("request"), dict) and "$ref" in method["request"]:
        properties["body"] = {"$ref": method["request"]["$ref"]}
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = sorted(required)
    defs: dict[str, Any] = {}
    todo = [n["$ref"] for n in _nodes(result) if "$ref" in n]
    while todo:
        name = todo.pop()
        if name not in defs and name in doc.get("schemas", {}):
            defs[name] = _discovery_node(doc["schemas"][name])
            todo.extend(n["$ref"] for n in _nodes(defs[name]) if "$ref" in n)
    for node in _nodes(result):
        if "$ref" in node:
            node["$ref"] = "#/$defs/" + node["$ref"].split("#/$defs/")[-1]
    for node in _nodes(defs, names=True):
        if "$ref" in node:
            node["$ref"] = "#/$defs/" + node["$ref"]
    if defs:
        result["$defs"] = defs
    try:
        Draft202012Validator.check_schema(result)
    except SchemaError:
        return None
    return result if len(json.dumps(result)) <= MAX_SCHEMA_CHARS else None


_DISCOVERY_KEYS = ("type", "description", "enum", "format", "pattern", "default", "$ref")


def _discovery_node(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: copy.deepcopy(node[k]) for k in _DISCOVERY_KEYS if k in node}
    for bound in ("minimum", "maximum"):
        if bound in node:
            out[bound] = float(node[bound]) if "." in str(node[bound]) else int(node[bound])
    if isinstance(node.get("properties"), dict):
        out["properties"] = {k: _discovery_node(v) for k, v in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = _discovery_node(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _discovery_node(node["additionalProperties"])
    if out.get("type") == "any":
        del out["type"]
    return out


def _nodes(node: Any, names: bool = False) -> Iterator[dict[str, Any]]:
    """Every schema node under ``node`` (``names``: ``node`` maps names to schemas)."""
    if isinstance(node, dict):
        if not names:
            yield node
        for key, value in node.items():
            if names or key not in ("default", "enum"):
                yield from _nodes(value, names=not names and key in ("properties", "$defs"))
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def _operation_schema(
    spec: dict[str, Any], item: dict[str, Any], operation: dict[str, Any]
) -> dict[str, Any] | None:
    swagger2 = "swagger" in spec
    properties: dict[str, Any] = {}
    required: list[str] = []
    for raw in [*item.get("parameters", []), *operation.get("parameters", [])]:
        param = _deref(spec, raw)
        where = param.get("in")
        if where in ("header", "cookie") or not isinstance(param.get("name"), str):
            continue
        if where == "body":
            if not _add_body(spec, param.get("schema", {}), properties, required, param):
                return None
            continue
        if swagger2:
            schema = {k: v for k, v in param.items() if k not in ("name", "in", "required")}
        else:
            schema = dict(param.get("schema") or {})
            if param.get("description") and "description" not in schema:
                schema["description"] = param["description"]
        properties[param["name"]] = schema
        if param.get("required"):
            required.append(param["name"])
    body = _deref(spec, operation.get("requestBody") or {})
    content = body.get("content") or {}
    for media in ("application/json", "application/x-www-form-urlencoded"):
        if media in content:
            if not _add_body(spec, content[media].get("schema", {}), properties, required, body):
                return None
            break
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = sorted(set(required))
    defs = _closure(spec, result)
    if defs:
        result["$defs"] = defs
    result = _to_json_schema(result, spec)
    try:
        Draft202012Validator.check_schema(result)
    except SchemaError:
        return None
    if len(json.dumps(result)) > MAX_SCHEMA_CHARS:
        return None
    return result


def _add_body(
    spec: dict[str, Any],
    schema: dict[str, Any],
    properties: dict[str, Any],
    required: list[str],
    holder: dict[str, Any],
) -> bool:
    resolved = _deref(spec, schema)
    body_props = resolved.get("properties")
    if resolved.get("type", "object") == "object" and isinstance(body_props, dict):
        if set(body_props) & set(properties):
            return False  # a body field with a parameter's name: bridges differ here, skip
        properties.update(copy.deepcopy(body_props))
        required.extend(resolved.get("required", []))
        return True
    properties["body"] = copy.deepcopy(schema)
    if holder.get("required"):
        required.append("body")
    return True


def _deref(spec: dict[str, Any], node: Any) -> Any:
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 20:
        node = _pointer(spec, node["$ref"])
        seen += 1
    return node


def _pointer(spec: dict[str, Any], ref: str) -> Any:
    node: Any = spec
    for part in ref.lstrip("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _closure(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Every component schema ``schema`` reaches, by its name."""
    defs: dict[str, Any] = {}
    todo = list(_refs(schema))
    while todo:
        ref = todo.pop()
        name = ref.rsplit("/", 1)[-1]
        if name in defs:
            continue
        defs[name] = copy.deepcopy(_pointer(spec, ref))
        todo.extend(_refs(defs[name]))
    return defs


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(("#/components/schemas/", "#/definitions/")):
            yield ref
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _to_json_schema(node: Any, spec: dict[str, Any], key: str | None = None) -> Any:
    """OpenAPI's schema dialect as JSON Schema 2020-12 (refs, nullable, boolean exclusives)."""
    if isinstance(node, list):
        return [_to_json_schema(item, spec) for item in node]
    if not isinstance(node, dict):
        return node
    if key in ("properties", "$defs", "patternProperties"):
        return {name: _to_json_schema(value, spec) for name, value in node.items()}
    out: dict[str, Any] = {}
    for name, value in node.items():
        if name in ("default", "example", "examples", "enum", "const"):
            out[name] = copy.deepcopy(value)  # data, not schema
        elif name == "$ref" and isinstance(value, str):
            out[name] = "#/$defs/" + value.rsplit("/", 1)[-1]
        elif name.startswith("x-") or name in ("discriminator", "xml", "externalDocs"):
            continue
        else:
            out[name] = _to_json_schema(value, spec, name)
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(bound), bool) and out.pop(bound) and limit in out:
            out[bound] = out.pop(limit)
    if out.pop("nullable", False) is True:
        declared = out.get("type")
        if isinstance(declared, str):
            out["type"] = [declared, "null"]
        elif "$ref" in out or "allOf" in out or "oneOf" in out or "anyOf" in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


# calls ---------------------------------------------------------------------------------------
class _No:
    pass


NO: Any = _No()
_FORMATS = {
    "date-time": "2024-05-01T12:00:00Z",
    "date": "2024-05-01",
    "time": "12:00:00Z",
    "email": "ops@example.com",
    "uri": "https://example.com/item",
    "url": "https://example.com/item",
    "uri-reference": "https://example.com/item",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
    "byte": "aGVybWVz",
}
_WORDS = ("example", "abc", "a", "1", "A1", "x-y", "12345", "ops@example.com", "ABC", "en")


class _Sampler:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.validator = Draft202012Validator(
            root, format_checker=Draft202012Validator.FORMAT_CHECKER
        )

    def valid_under(self, value: Any, schema: Any) -> bool:
        return bool(self.validator.evolve(schema=schema).is_valid(value))

    def sample(self, schema: Any, depth: int = 0, full: bool = False) -> Any:
        if depth > 8 or not isinstance(schema, dict):
            return NO if depth > 8 else {}
        if "$ref" in schema:
            target = _pointer(self.root, schema["$ref"])
            return self.sample(
                {**target, **{k: v for k, v in schema.items() if k != "$ref"}}, depth + 1, full
            )
        for candidates in (schema.get("examples"), [schema.get("example")]):
            for candidate in candidates if isinstance(candidates, list) else ():
                if candidate is not None and self.valid_under(candidate, schema):
                    return copy.deepcopy(candidate)
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list):
            members = [m for m in schema["enum"] if m is not None]
            return members[0] if members else NO
        for union in ("oneOf", "anyOf"):
            if isinstance(schema.get(union), list):
                for branch in schema[union]:
                    merged = {**{k: v for k, v in schema.items() if k != union}, **branch}
                    value = self.sample(merged, depth + 1, full)
                    if value is not NO and self.valid_under(value, schema):
                        return value
                return NO
        if isinstance(schema.get("allOf"), list):
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for raw in schema["allOf"]:
                part = _pointer(self.root, raw["$ref"]) if "$ref" in raw else raw
                for key, value in part.items():
                    if key == "properties":
                        merged.setdefault("properties", {}).update(value)
                    elif key == "required":
                        merged["required"] = [*merged.get("required", []), *value]
                    else:
                        merged.setdefault(key, value)
            return self.sample(merged, depth + 1, full)
        declared = schema.get("type")
        types = [declared] if isinstance(declared, str) else list(declared or [])
        types = [t for t in types if t != "null"] or (
            ["object"] if "properties" in schema else ["string"]
        )
        return self._typed(types[0], schema, depth, full)

    def _typed(self, kind: str, schema: dict[str, Any], depth: int, full: bool) -> Any:
        if kind == "string":
            return self._string(schema)
        if kind in ("integer", "number"):
            low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
            value = low + 1 if "exclusiveMinimum" in schema else max(low, 1)
            high = schema.get("maximum")
            if high is not None and value > high:
                value = high
            step = schema.get("multipleOf")
            if step:
                value = step * max(1, int(value // step))
            return int(value) if kind == "integer" else value
        if kind == "boolean":
            return True
        if kind == "array":
            if (schema.get("minItems") or 0) > 1 and schema.get("uniqueItems"):
                return NO
            item = self.sample(schema.get("items", {}), depth + 1)
            return NO if item is NO else [item] * max(1, schema.get("minItems") or 1)
        if kind == "object":
            out: dict[str, Any] = {}
            properties = schema.get("properties") or {}
            names = list(properties) if full else list(schema.get("required", []))
            for name in names:
                if name not in properties:
                    continue
                value = self.sample(properties[name], depth + 1)
                if value is NO:
                    if name in schema.get("required", []):
                        return NO
                    continue
                out[name] = value
            return out
        return NO

    def _string(self, schema: dict[str, Any]) -> Any:
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        candidates = [_FORMATS.get(schema.get("format", ""), "example"), *_WORDS]
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            candidates = [*_pattern_samples(pattern), *candidates]
        for candidate in candidates:
            text = candidate + "x" * max(0, low - len(candidate))
            if high is not None and len(text) > high:
                text = text[:high]
            if self.valid_under(text, schema):
                return text
        return NO


def _pattern_samples(pattern: str) -> list[str]:
    """A few strings that fullmatch simple patterns, from hypothesis (deterministic seed)."""
    from hypothesis import HealthCheck, given, seed, settings
    from hypothesis import strategies as st

    found: list[str] = []

    @seed(11)
    @settings(max_examples=20, database=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(pattern, fullmatch=True, alphabet=st.characters(codec="ascii")))
    def collect(text: str) -> None:
        if text.isprintable() and len(found) < 5:
            found.append(text)

    try:
        collect()
    except Exception:  # an unsupported regex feature: no samples from it
        return []
    return sorted(found, key=len)


def _entry(repo: str, source: str, name: str, schema: Any) -> dict[str, Any] | None:
    if not isinstance(schema, dict):
        return None
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return None
    sampler = _Sampler(schema)
    valid: list[dict[str, Any]] = []
    for full in (False, True):
        call = sampler.sample(schema, full=full)
        if call is NO or not isinstance(call, dict):
            continue
        call = _trim(sampler, schema, call)
        if call is not None and call not in valid:
            valid.append(call)
    if not valid:
        return None
    nulls = _with_nulls(schema, valid[0])
    if nulls is not None and sampler.validator.is_valid(_without_nulls(schema, nulls)):
        valid.append(nulls)
    return {
        "id": f"{repo}:{name}",
        "source": f"{repo} {source}",
        "name": name,
        "schema": schema,
        "valid": valid,
        "broken": _broken(sampler, schema, valid[-1] if nulls is None else valid[-2]),
    }


def _trim(sampler: _Sampler, schema: dict[str, Any], call: dict[str, Any]) -> dict | None:
    """``call`` without the optional top-level fields jsonschema refuses; None if invalid."""
    required = set(schema.get("required", []))
    for error in list(sampler.validator.iter_errors(call)):
        if error.path and error.path[0] in call and error.path[0] not in required:
            call.pop(error.path[0])
    return call if sampler.validator.is_valid(call) else None


def _with_nulls(schema: dict[str, Any], call: dict[str, Any]) -> dict[str, Any] | None:
    """The call with every optional top-level property it leaves out sent as null."""
    required = set(schema.get("required", []))
    missing = [n for n in schema.get("properties", {}) if n not in call and n not in required]
    return {**call, **dict.fromkeys(missing, None)} if missing else None


def _without_nulls(schema: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    # What "null for an optional property means not given" leaves for jsonschema to check.
    return {k: v for k, v in call.items() if v is not None or k in schema.get("required", [])}


def _broken(sampler: _Sampler, schema: dict[str, Any], call: dict[str, Any]) -> list[dict]:
    twins: list[dict[str, Any]] = []
    properties = schema.get("properties") or {}
    for name in schema.get("required", []):
        # A required field with a default is filled in, not missing (seed 003 §4.2).
        if name in call and "default" not in (properties.get(name) or {}):
            twin = {k: v for k, v in call.items() if k != name}
            twins.append({"why": f"missing_required:{name}", "args": twin})
            break
    for name, sub in properties.items():
        bad = _wrong_value(sampler, sub)
        if bad is not NO:
            twins.append({"why": f"wrong_type:{name}", "args": {**call, name: bad}})
            break
    for name, sub in properties.items():
        resolved = _pointer(schema, sub["$ref"]) if isinstance(sub, dict) and "$ref" in sub else sub
        enum = resolved.get("enum") if isinstance(resolved, dict) else None
        if isinstance(enum, list) and all(isinstance(m, str) for m in enum):
            twins.append({"why": f"not_in_enum:{name}", "args": {**call, name: "zz-no-such"}})
            break
    twins = [t for t in twins if not sampler.validator.is_valid(t["args"])]
    opening = ("additionalProperties", "patternProperties", "unevaluatedProperties", "allOf")
    if properties and not any(schema.get(k) not in (None, False) for k in opening):
        twins.append({"why": "unknown_field", "args": {**call, _UNKNOWN_FIELD: 1}})
    return twins


def _wrong_value(sampler: _Sampler, sub: Any) -> Any:
    """A value for a scalar property that no safe coercion turns into a valid one."""
    if not isinstance(sub, dict):
        return NO
    if "$ref" in sub:
        sub = _pointer(sampler.root, sub["$ref"])
    declared = sub.get("type")
    types = {declared} if isinstance(declared, str) else set(declared or ())
    if not types or types & {"object", "array"} or "anyOf" in sub or "oneOf" in sub:
        return NO
    if types <= {"string", "null"}:
        bad: Any = {"unexpected": "object"}
    elif types <= {"integer", "number", "null"}:
        bad = "not a number"
    elif types <= {"boolean", "null"}:
        bad = "perhaps"
    else:
        return NO
    return NO if sampler.valid_under(bad, sub) else bad


if __name__ == "__main__":
    sys.setrecursionlimit(10_000)
    if len(sys.argv) != 2 or not re.match(r".+", sys.argv[1]):
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]))
