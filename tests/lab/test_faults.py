"""The fault vocabulary: what each front end's words become, and what undoes a fault."""

from __future__ import annotations

import pytest

from kinspect.lab.faults import Fault, FaultKind, Lane, Scope, hurts, is_fault
from kinspect.lab.shaping import Direction, LinkShape
from kinspect.scenarios.spec import DISRUPTIVE, FaultStep


def test_every_disruptive_fault_has_the_repair_the_plan_undoes_it_with() -> None:
    assert Fault(FaultKind.KILL, "kafka2").undo() == Fault(FaultKind.START, "kafka2")
    assert Fault(FaultKind.STOP, "kafka2").undo() == Fault(FaultKind.START, "kafka2")
    assert Fault(FaultKind.PAUSE, "kafka1").undo() == Fault(FaultKind.RESUME, "kafka1")
    assert Fault(FaultKind.ISOLATE, "kafka1", Scope.ZK).undo() == Fault(FaultKind.HEAL)
    slow = Fault(FaultKind.SLOW, "kafka3", shape=LinkShape(rate_kbit=256))
    assert slow.undo() == Fault(FaultKind.UNSLOW, "kafka3")  # that link only
    assert Fault(FaultKind.FILL_DISK, "kafka2").undo() == Fault(FaultKind.FREE_DISK, "kafka2")
    assert Fault(FaultKind.POWER_OFF, "all").undo() == Fault(FaultKind.POWER_ON, "all")
    repairs = (FaultKind.START, FaultKind.RESUME, FaultKind.HEAL, FaultKind.UNSLOW,
               FaultKind.FREE_DISK, FaultKind.POWER_ON)
    assert all(Fault(k, None if not k.needs_node else "kafka1").undo() is None for k in repairs)
    assert {k for k in FaultKind if k.disruptive} == {
        FaultKind.KILL, FaultKind.STOP, FaultKind.PAUSE, FaultKind.PARTITION,
        FaultKind.ISOLATE, FaultKind.SLOW, FaultKind.FILL_DISK, FaultKind.POWER_OFF}


def test_a_fault_without_what_it_needs_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a node"):
        Fault(FaultKind.KILL)
    with pytest.raises(ValueError, match="groups"):
        Fault(FaultKind.PARTITION)
    with pytest.raises(ValueError, match="shape"):
        Fault(FaultKind.SLOW, "kafka1")


@pytest.mark.parametrize(("do", "kind", "scope"), [
    ("isolate", FaultKind.ISOLATE, Scope.ALL), ("isolate-zk", FaultKind.ISOLATE, Scope.ZK),
    ("isolate-brokers", FaultKind.ISOLATE, Scope.BROKERS), ("kill", FaultKind.KILL, Scope.ALL)])
def test_a_steps_word_becomes_the_labs_fault(do: str, kind: FaultKind, scope: Scope) -> None:
    faults = FaultStep(do=do, after_s=0).faults(["kafka2", "kafka3"])
    hit = ["kafka2"] if kind is FaultKind.ISOLATE else ["kafka2", "kafka3"]  # isolation: one
    assert faults == [Fault(kind, node, scope) for node in hit]
    assert do in DISRUPTIVE


def test_heal_and_unslow_act_once_on_the_whole_lab() -> None:
    assert FaultStep(do="heal", target="all", after_s=0).faults(["kafka1", "kafka2"]) == [
        Fault(FaultKind.HEAL)]
    shape = LinkShape(rate_kbit=256, loss_pct=5, direction=Direction.IN)
    assert FaultStep(do="slow", after_s=0, shape=shape).faults(["kafka1", "kafka2"]) == [
        Fault(FaultKind.SLOW, "kafka1", shape=shape), Fault(FaultKind.SLOW, "kafka2", shape=shape)]
    assert FaultStep(do="unslow", target="all", after_s=0).faults(["kafka1"]) == [
        Fault(FaultKind.UNSLOW)]
    assert FaultStep(do="unslow", target="@slowed", after_s=0).faults(["kafka1", "kafka3"]) == [
        Fault(FaultKind.UNSLOW, "kafka1"), Fault(FaultKind.UNSLOW, "kafka3")]  # those links only
    assert str(Fault(FaultKind.SLOW, "kafka1", shape=shape)) == \
        "slow kafka1: rate 256 kbit + 5 % loss, inbound"
    assert str(Fault(FaultKind.ISOLATE, "kafka1", Scope.ZK)) == "isolate kafka1 from zk"


def test_each_repair_ends_the_lane_of_the_faults_it_undoes() -> None:
    for kind, repair in ((k, Fault(k, "kafka1", groups=(("kafka1",),),
                                   shape=LinkShape(rate_kbit=1)).undo())
                         for k in FaultKind if k.disruptive):
        assert repair is not None and repair.kind.lane is kind.lane and not repair.kind.disruptive
    assert FaultKind.RESTART.lane is Lane.DOWN  # a restart also ends a kill or stop


def test_what_hurts_in_a_journal() -> None:
    """Every disruptive fault and a restart hurt; a repair, the lab's own steps and unknown words
    do not; older kinspect versions' delay and loss did (and are faults with no known undo)."""
    assert {k for k in FaultKind if k.hurts} == {k for k in FaultKind if k.disruptive} | {
        FaultKind.RESTART}
    assert hurts("delay") and hurts("loss") and not hurts("heal") and not hurts("up")
    assert not hurts("whatever") and is_fault("whatever") and is_fault("delay")
    assert not is_fault("up") and not is_fault("images") and is_fault("kill")
