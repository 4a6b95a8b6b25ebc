"""Validation before anything runs: each error names its nodes (DESIGN.md, "Multi-call plans")."""

from __future__ import annotations

from typing import Any

import pytest

from hermes import tool
from hermes.errors import PlanInvalidError
from hermes.tools.plans import check_params, check_plan, parse_plan
from hermes.tools.registry import ToolRegistry


@tool
def find_room(city: str, size: int = 4) -> dict[str, Any]:
    """Find a room."""
    return {"room_id": "r1"}


@tool
def book_room(room_id: str) -> dict[str, Any]:
    """Book a room."""
    return {"booking": room_id}


TOOLS = ToolRegistry([find_room, book_room])


def _problems(plan: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    return [(p.nodes, p.message) for p in check_plan(parse_plan(plan), TOOLS)]


def _node(node_id: str, tool_name: str = "book_room", **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "tool": tool_name, "params": {"room_id": "r"}, **extra}


def test_a_valid_plan_has_no_problems() -> None:
    plan = {
        "params": {"city": {"type": "string"}},
        "nodes": [
            {"id": "n1", "tool": "find_room", "params": {"city": "{{params.city}}"}},
            _node("n2", params={"room_id": "{{n1.result.room_id}}"}, depends_on=["n1"]),
        ],
        "outputs": {"room": "{{n2.result.booking}}"},
    }
    assert _problems(plan) == []


def test_unknown_fields_are_refused_naming_the_node() -> None:
    with pytest.raises(PlanInvalidError) as caught:
        parse_plan({"nodes": [{**_node("n1"), "dependson": ["n0"]}]})
    assert caught.value.problems[0][0] == ["n1"]
    assert "dependson" in caught.value.message


def test_an_unknown_top_level_field_is_refused() -> None:
    with pytest.raises(PlanInvalidError, match="steps"):
        parse_plan({"nodes": [_node("n1")], "steps": []})


def test_a_plan_needs_nodes() -> None:
    with pytest.raises(PlanInvalidError, match="nodes"):
        parse_plan({"name": "empty", "nodes": []})


def test_yaml_and_json_texts_parse_alike() -> None:
    text = '{"nodes": [{"id": "n1", "tool": "book_room", "params": {"room_id": "r"}}]}'
    yaml_text = "nodes:\n  - id: n1\n    tool: book_room\n    params: {room_id: r}\n"
    assert parse_plan(text) == parse_plan(yaml_text)


def test_an_unknown_tool_names_the_node() -> None:
    assert _problems({"nodes": [_node("n1", "launch_rocket")]}) == [
        (("n1",), "node n1 calls unknown tool 'launch_rocket'")
    ]


def test_an_unknown_compensation_tool_names_the_node() -> None:
    plan = {"nodes": [_node("n1", compensate={"tool": "undo_everything", "params": {}})]}
    [(nodes, message)] = _problems(plan)
    assert nodes == ("n1",)
    assert "undo_everything" in message


def test_a_missing_dependency_names_the_node() -> None:
    [(nodes, message)] = _problems({"nodes": [_node("n1", depends_on=["n0"])]})
    assert nodes == ("n1",)
    assert "unknown node 'n0'" in message


def test_a_self_dependency_is_refused() -> None:
    [(nodes, message)] = _problems({"nodes": [_node("n1", depends_on=["n1"])]})
    assert nodes == ("n1",)
    assert "itself" in message


def test_a_cycle_names_every_node_in_it() -> None:
    plan = {
        "nodes": [
            _node("a", depends_on=["c"]),
            _node("b", depends_on=["a"]),
            _node("c", depends_on=["b"]),
            _node("d"),
        ]
    }
    [(nodes, message)] = _problems(plan)
    assert set(nodes) == {"a", "b", "c"}
    assert "cycle" in message


def test_a_cycle_does_not_hide_the_other_problems() -> None:
    """The nodes off the cycle still get their template checks (every problem at once);
    nodes on it or below it are not called "not upstream" (there is no order to tell)."""
    plan = {
        "nodes": [
            _node("a", depends_on=["b"]),
            _node("b", depends_on=["a"]),
            _node("below", depends_on=["a"], params={"room_id": "{{free.result.booking}}"}),
            _node("free"),
            _node("reader", params={"room_id": "{{free.result.booking}}"}),
        ]
    }
    problems = _problems(plan)
    assert [set(nodes) for nodes, m in problems if "cycle" in m] == [{"a", "b"}]
    upstream = [nodes for nodes, m in problems if "not upstream" in m]
    assert upstream == [("reader", "free")]


def test_repeated_node_ids_are_refused() -> None:
    problems = _problems({"nodes": [_node("n1"), _node("n1")]})
    assert (("n1",), "node id 'n1' appears twice") in problems


def test_a_template_into_a_node_that_is_not_upstream_names_both() -> None:
    plan = {
        "nodes": [
            _node("n1"),
            _node("n2", params={"room_id": "{{n1.result.booking}}"}),
        ]
    }
    [(nodes, message)] = _problems(plan)
    assert nodes == ("n2", "n1")
    assert "not upstream" in message


def test_a_template_may_read_a_node_further_upstream() -> None:
    plan = {
        "nodes": [
            _node("n1"),
            _node("n2", depends_on=["n1"]),
            _node("n3", params={"room_id": "{{n1.result.booking}}"}, depends_on=["n2"]),
        ]
    }
    assert _problems(plan) == []


def test_a_compensation_may_read_its_own_node_but_a_node_may_not() -> None:
    ok = _node("n1", compensate={"tool": "book_room", "params": {"room_id": "{{n1.result.x}}"}})
    assert _problems({"nodes": [ok]}) == []
    own = _node("n1", params={"room_id": "{{n1.result.x}}"})
    [(nodes, message)] = _problems({"nodes": [own]})
    assert nodes == ("n1",)
    assert "own result" in message


def test_templates_of_unknown_nodes_and_params_are_refused() -> None:
    plan = {
        "nodes": [
            _node("n1", params={"room_id": "{{ghost.result.id}}"}),
            _node("n2", params={"room_id": "{{params.room}}"}),
        ]
    }
    messages = [message for _, message in _problems(plan)]
    assert any("unknown node 'ghost'" in m for m in messages)
    assert any("undeclared plan parameter 'room'" in m for m in messages)


def test_a_malformed_template_is_refused() -> None:
    [(nodes, message)] = _problems({"nodes": [_node("n1", params={"room_id": "{{n1.reslt}}"})]})
    assert nodes == ("n1",)
    assert "result" in message


def test_params_failing_the_tool_schema_name_the_node_and_field() -> None:
    plan = {"nodes": [{"id": "n1", "tool": "find_room", "params": {"city": "x", "size": "ten"}}]}
    [(nodes, message)] = _problems(plan)
    assert nodes == ("n1",)
    assert "size" in message


def test_a_missing_required_argument_is_refused_but_a_templated_one_counts_as_given() -> None:
    missing = {"nodes": [{"id": "n1", "tool": "find_room", "params": {}}]}
    [(nodes, message)] = _problems(missing)
    assert nodes == ("n1",)
    assert "city" in message
    templated = {
        "nodes": [
            _node("n0"),
            {"id": "n1", "tool": "find_room", "params": {"city": "{{n0.result.c}}"},
             "depends_on": ["n0"]},
        ]
    }  # fmt: skip
    assert _problems(templated) == []


def test_an_argument_the_tool_does_not_take_is_refused_even_when_templated() -> None:
    plan = {
        "nodes": [
            _node("n0"),
            _node("n1", params={"room_id": "r", "floor": "{{n0.result.f}}"}, depends_on=["n0"]),
        ]
    }
    [(nodes, message)] = _problems(plan)
    assert nodes == ("n1",)
    assert "floor" in message


def test_known_params_are_checked_against_the_tool_schema() -> None:
    spec = parse_plan(
        {
            "params": {"size": {"type": "string"}},
            "nodes": [
                {
                    "id": "n1",
                    "tool": "find_room",
                    "params": {"city": "x", "size": "{{params.size}}"},
                }
            ],
        }
    )
    assert check_plan(spec, TOOLS) == []
    [problem] = check_plan(spec, TOOLS, params={"size": "big"})
    assert problem.nodes == ("n1",)


def test_plan_params_are_coerced_and_checked_by_their_schemas() -> None:
    spec = parse_plan(
        {
            "params": {"size": {"type": "integer"}, "city": {"type": "string", "default": "北京"}},
            "nodes": [_node("n1")],
        }
    )
    assert check_params(spec, {"size": "8"}) == {"size": 8, "city": "北京"}
    with pytest.raises(PlanInvalidError, match="size"):
        check_params(spec, {})
    with pytest.raises(PlanInvalidError, match="colour"):
        check_params(spec, {"size": 1, "colour": "red"})


def test_a_ten_thousand_node_plan_validates() -> None:
    count = 10_000
    nodes = [_node("n0")] + [
        _node(
            f"n{i}",
            params={"room_id": f"{{{{n{i - 1}.result.booking}}}}"},
            depends_on=[f"n{i - 1}"],
        )
        for i in range(1, count)
    ]
    nodes.append(
        _node("last", params={"room_id": "{{n0.result.booking}}"}, depends_on=[f"n{count - 1}"])
    )
    assert _problems({"nodes": nodes}) == []
    nodes.append(_node("loose", params={"room_id": "{{last.result.booking}}"}))
    [(named, _)] = _problems({"nodes": nodes})
    assert named == ("loose", "last")


def test_a_plan_file_without_a_name_is_named_after_the_file(tmp_path: Any) -> None:
    from hermes.tools.plans import load_plan

    nameless = tmp_path / "book-rooms.yaml"
    nameless.write_text("nodes:\n  - {id: n1, tool: book_room, params: {room_id: r}}\n")
    named = tmp_path / "other.json"
    named.write_text('{"name": "kept", "nodes": [{"id": "n1", "tool": "book_room"}]}')
    assert load_plan(nameless).name == "book-rooms"
    assert load_plan(named).name == "kept"
