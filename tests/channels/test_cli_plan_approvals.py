"""``hermes plan run|resume --approve`` as real subprocesses: a plan with a node whose tool
needs a person's approval is refused before anything runs (exit 2, naming the node) unless
the person at the terminal approves it with ``--approve``."""

from __future__ import annotations

from tests.channels.conftest import Hermes, write_config

PLUGIN = '''
from pathlib import Path

from hermes.tools import tool

EFFECTS = Path(__file__).resolve().parent.parent / "effects.txt"


def _effect(line):
    with EFFECTS.open("a", encoding="utf-8") as f:
        f.write(line + "\\n")


@tool
def hold_room(room: str) -> dict:
    """Hold a room."""
    _effect(f"hold {room}")
    return {"hold": f"h-{room}"}


@tool(requires_approval=True)
def pay_deposit(hold: str) -> str:
    """Pay the deposit."""
    _effect(f"pay {hold}")
    return "paid"
'''

PLAN = """
nodes:
  - {id: hold, tool: hold_room, params: {room: R1}}
  - {id: pay, tool: pay_deposit, params: {hold: "{{hold.result.hold}}"}, depends_on: [hold]}
"""


def _setup(hermes: Hermes) -> None:
    (hermes.cwd / "tools").mkdir()
    (hermes.cwd / "tools" / "deposit_tools.py").write_text(PLUGIN, encoding="utf-8")
    (hermes.cwd / "deposit.yaml").write_text(PLAN, encoding="utf-8")
    write_config(hermes.cwd, "tools:\n  plugins_dir: tools\n")


def _effects(hermes: Hermes) -> list[str]:
    path = hermes.cwd / "effects.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_without_approve_the_plan_is_refused_before_anything_runs(hermes: Hermes) -> None:
    _setup(hermes)
    refused = hermes("plan", "run", "deposit.yaml", "--json")
    assert refused.returncode == 2, refused
    error = refused.json()["error"]
    assert "pay" in error["message"]
    assert "--approve" in error["message"]
    refused.assert_no_traceback()
    assert _effects(hermes) == []
    assert hermes("plan", "list", "--json").json() == []


def test_with_approve_the_node_runs(hermes: Hermes) -> None:
    _setup(hermes)
    ran = hermes("plan", "run", "deposit.yaml", "--approve", "--json")
    assert ran.returncode == 0, ran
    assert ran.json()["nodes"]["pay"] == {"status": "succeeded", "result": "paid"}
    assert _effects(hermes) == ["hold R1", "pay h-R1"]
