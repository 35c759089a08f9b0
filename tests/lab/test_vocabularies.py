"""Each closed vocabulary is declared once (FaultKind, Lane, Scope) and the rest derived: these
fail when a new fault is added in one place and not another."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.lab import backend as backend_module
from kinspect.lab import journal
from kinspect.lab.backend import LabBackend, plan_nodes
from kinspect.lab.faults import (
    LANE_COLOURS,
    LANES,
    LEGACY_ACTIONS,
    Fault,
    FaultKind,
    Lane,
    Scope,
    colour,
    fault_kind,
)
from kinspect.lab.journal import JournalEntry
from kinspect.lab.shaping import LinkShape
from kinspect.lab.state import LabState, NodeState
from kinspect.lessons.flow import Happening
from kinspect.lessons.lesson_values import Step, Text, Trigger
from kinspect.postmortem.evidence.inputs import fault_event
from kinspect.postmortem.story.lanes import bands
from kinspect.scenarios.spec import STEP_FAULTS, STEP_WORDS, FaultStep
from kinspect.tui.actions import ACTIONS
from kinspect.tui.lesson_app import journal_happenings

NODES = ["kafka1", "kafka2"]


def test_every_fault_has_a_lane_and_every_lane_one_colour() -> None:
    assert set(LANES) == set(FaultKind)
    assert set(LANE_COLOURS) == set(Lane)
    for kind in FaultKind:
        assert colour(kind) == kind.lane.colour


def test_every_fault_a_step_may_name_is_a_step_word_and_every_word_a_fault() -> None:
    assert {kind for kind, _ in STEP_FAULTS.values()} == {k for k in FaultKind if k.in_steps}
    assert tuple(STEP_FAULTS) == STEP_WORDS
    scoped = [word for word, (_, scope) in STEP_FAULTS.items() if scope is not Scope.ALL]
    assert scoped == [f"isolate-{scope}" for scope in Scope if scope is not Scope.ALL]


@pytest.mark.parametrize("word", STEP_WORDS)
def test_every_step_word_becomes_faults_the_lab_carries_out(word: str) -> None:
    kind, scope = STEP_FAULTS[word]
    shape = LinkShape(rate_kbit=256) if kind is FaultKind.SLOW else None
    faults = FaultStep(do=word, after_s=0, shape=shape).faults(NODES)
    assert faults and all(f.kind is kind for f in faults)
    assert all(f.scope is scope for f in faults if kind is FaultKind.ISOLATE)
    for fault in faults:
        assert _carried_out_by(fault) != "_change" or kind in backend_module.DONE


class _Tally(LabBackend):
    """Says which of the shared steps a fault went to, doing nothing."""

    name = "tally"


for _method in LabBackend.__abstractmethods__:
    setattr(_Tally, _method, lambda *_args, **_kwargs: None)
_Tally.__abstractmethods__ = frozenset()


def _carried_out_by(fault: Fault) -> str:
    """The first of the backend's fault steps `_carry_out` hands this fault to."""
    tally = _Tally()
    called: list[str] = []
    for step in ("_partition", "_heal", "_unslow_links", "_start_node", "_slow_link", "_disk",
                 "_power_off", "_power_on", "_change"):
        setattr(tally, step, lambda *_args, _step=step, **_kwargs: called.append(_step))
    node = _Node()
    tally._node = lambda _state, _name: node  # type: ignore[method-assign]
    tally._powered_nodes = lambda _state, _fault: [node]  # type: ignore[method-assign,list-item]
    tally._carry_out(None, fault)  # type: ignore[arg-type]
    return called[0]


class _Node:
    name = "kafka1"

    class state:
        alive = False


@pytest.mark.parametrize("kind", list(FaultKind))
def test_every_fault_kind_reaches_a_step_of_the_lab(kind: FaultKind) -> None:
    fault = Fault(kind, "kafka1", groups=(("kafka1",),), shape=LinkShape(rate_kbit=1))
    step = _carried_out_by(fault)
    if step == "_change":
        assert kind in backend_module.DONE, f"{kind}: no step of the lab carries it out"


class _Quiet(_Tally):
    """Does nothing to any node, but keeps the shared steps' state file and journal."""

    def __init__(self, root: Path) -> None:
        self.root = root


@pytest.mark.parametrize("kind", list(FaultKind))
def test_every_fault_kind_left_to_the_node_changes_is_one_of_them(
        kind: FaultKind, tmp_path: Path) -> None:
    """DONE's words are not the steps: `_change` itself carries the kind out, from some state
    of its node, and journals it."""
    fault = Fault(kind, "kafka1", groups=(("kafka1",),), shape=LinkShape(rate_kbit=1))
    if _carried_out_by(fault) != "_change":
        return
    said = []
    for before in NodeState:
        state = _lab()
        node = state.nodes[1]
        node.state = before
        try:
            said.append(_Quiet(tmp_path)._change(state, node, kind))
        except KinspectError:  # refused from this state: another may do
            continue
    assert said, f"{kind}: _change carries it out from no state of its node"
    assert {entry.action for entry in journal.read(tmp_path)} == {kind}


def _lab() -> LabState:
    nodes = plan_nodes(1, lambda index, name: (f"198.18.9.{10 + index}", 9092))
    return LabState(lab_id="lab1", backend="tally", preset="demo", network="netns",
                    kafka_version="3.9.2", nodes=nodes, created_at=0, overrides={},
                    broker_config={})


def _journaled(kind: FaultKind, scope: Scope) -> JournalEntry:
    """The entry the lab writes for a fault of this kind (an isolation with its scope)."""
    if kind is FaultKind.ISOLATE:
        return JournalEntry(1, kind, "lab", "kafka1", (("kafka1",), ("kafka2",)), "", scope)
    return JournalEntry(1, kind, "lab", "kafka1")


@pytest.mark.parametrize("word", STEP_WORDS)
def test_every_step_word_is_seen_by_a_lesson_in_the_journal(word: str) -> None:
    step = Step(Trigger.FAULT, Text("", ""), do=word)
    seen = journal_happenings(_journaled(*STEP_FAULTS[word]))
    assert any(h.matches(step) for h in seen), f"a lesson never sees {word!r} happen"


@pytest.mark.parametrize("kind", list(FaultKind))
def test_every_journaled_fault_is_understood_by_the_post_mortem_and_the_lessons(
        kind: FaultKind) -> None:
    entry = _journaled(kind, Scope.ALL)
    event = fault_event(entry)
    assert fault_kind(str(event.action)) is kind
    assert bands([event], hi=10_000) or not kind.disruptive  # a fault opens its lane's band
    seen = journal_happenings(entry)
    assert bool(seen) is kind.in_steps
    assert all(h == Happening(Trigger.HEAL) or h.do == kind.value for h in seen)


def test_the_lab_journals_only_fault_kinds_and_its_own_steps() -> None:
    """Every journal.record in the backend names a FaultKind (or the kind in hand) or one of
    the lab's own steps the readers know (LEGACY_ACTIONS)."""
    tree = ast.parse(Path(inspect.getfile(backend_module)).read_text())
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and ast.unparse(node.func) == "journal.record"]
    assert calls
    for call in calls:
        action = call.args[0]
        if isinstance(action, ast.Constant):
            assert action.value in LEGACY_ACTIONS, ast.unparse(call)
        elif isinstance(action, ast.Attribute):
            assert ast.unparse(action.value) == "FaultKind", ast.unparse(call)
            assert action.attr in FaultKind.__members__
        else:
            assert ast.unparse(action) == "kind", ast.unparse(call)


def test_every_key_that_applies_a_fault_names_its_fault_kind() -> None:
    named = {a.name: a.kind for a in ACTIONS if a.kind is not None}
    assert all(action.fault for action in ACTIONS if action.kind is not None)
    for action in ACTIONS:
        if action.name in FaultKind.__members__.values():
            assert named.get(action.name) is not None, f"key {action.key} names no FaultKind"


def test_every_key_applies_the_fault_kind_it_names() -> None:
    """The key's `kind` is what its action hands the lab (and not a word of its own)."""
    from kinspect.tui.acting import ActingApp

    for action in ACTIONS:
        if action.kind is None:
            continue
        source = inspect.getsource(getattr(ActingApp, f"action_{action.name}"))
        assert f"FaultKind.{action.kind.name}" in source, f"key {action.key} applies no {action.kind}"


def test_every_node_state_has_its_colour_on_the_screen() -> None:
    from kinspect.lab.state import NodeState
    from kinspect.tui.render import STATE_STYLES

    assert set(STATE_STYLES) == {state.value for state in NodeState}
