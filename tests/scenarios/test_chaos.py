"""The seeded nemesis without a lab: the schedule is the seed's alone, every fault it draws is
one the lab carries out and undoes, and the invariants follow from what it drew."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kinspect.errors import KinspectError
from kinspect.lab.faults import Fault, FaultKind
from kinspect.lab.state import NodeState
from kinspect.load.rundir import POSTMORTEM_DIR
from kinspect.postmortem.lost_set import LOST_FILE
from kinspect.postmortem.story.values import Report
from kinspect.scenarios import chaos, scenario_run
from kinspect.scenarios import plan as plan_module
from kinspect.scenarios.chaos import ChaosPlan, chaos_scenario, fault_words, schedule, windows
from kinspect.scenarios.plan import FaultPlan, PlanLog, halves, resolve
from kinspect.scenarios.spec import STEP_FAULTS, FaultStep, halves_seed
from tests.helpers import kinspect

ALL = fault_words("kill,stop,pause,isolate,isolate-zk,isolate-brokers,partition,slow,power")


def test_the_same_seed_draws_the_same_schedule_and_another_seed_another() -> None:
    plan = ChaosPlan(seed=42, duration_s=3600, faults=ALL)
    assert schedule(plan) == schedule(ChaosPlan(seed=42, duration_s=3600, faults=ALL))
    assert schedule(plan) != schedule(ChaosPlan(seed=43, duration_s=3600, faults=ALL))
    # a longer run starts with the shorter one's faults: the draw does not depend on the end
    short = schedule(ChaosPlan(seed=42, duration_s=600, faults=ALL))
    assert schedule(plan)[:len(short)] == short


@pytest.mark.parametrize("seed", range(20))
def test_every_drawn_fault_is_held_then_undone_within_the_run(seed: int) -> None:
    plan = ChaosPlan(seed=seed, duration_s=600, faults=ALL)
    steps = schedule(plan)
    assert steps, "ten minutes hold more than one fault"
    for step in steps:
        kind, _scope = STEP_FAULTS[step.do]
        assert kind.disruptive and kind in FaultKind  # it breaks something, and has a repair
        if kind is FaultKind.PARTITION:
            assert halves_seed(step.target) is not None
        else:
            assert step.target in chaos.TARGETS[step.do]
        assert chaos.HOLD_S[0] <= (step.for_s or 0) <= chaos.HOLD_S[1]
        assert (step.shape is not None) == (kind is FaultKind.SLOW)
    assert (steps[0].after_s or 0) >= chaos.WARMUP_S - 0.05
    planned = sum((s.after_s or 0) + (s.for_s or 0) for s in steps)
    assert planned <= plan.duration_s - chaos.COOLDOWN_S
    # each fault is anchored on the schedule's clock: its gap after the last one's repair
    clock = 0.0
    for step in steps:
        clock += step.after_s or 0.0
        assert step.at_s == pytest.approx(clock, abs=0.2)
        clock += step.for_s or 0.0


def test_the_invariants_follow_from_what_was_drawn() -> None:
    quiet = chaos_scenario(ChaosPlan(seed=1, duration_s=300, faults=("kill", "pause")))
    assert quiet.expectation_text() == (
        f"faults_applied >= {len(quiet.steps)} and never_processed == 0 and acked_lost == 0")
    assert quiet.load == {"acks": "all", "count": 300_000, "rate": 1000.0}
    assert quiet.group == {"commit": "after"} and not quiet.power
    powered = chaos_scenario(ChaosPlan(seed=3, duration_s=3600, faults=("power-off",)))
    assert powered.power and any(s.target == "all" for s in powered.steps)
    assert powered.expectation_text() == (  # a cut's loss is measured; no other loss allowed
        f"faults_applied >= {len(powered.steps)} and never_processed == 0 "
        "and lost_outside_power_cuts == 0")
    one_broker = [s for s in powered.steps if s.target != "all"]
    assert one_broker, "seed 3 also cuts single brokers' power"  # judged the same way


def test_fault_words_take_power_for_power_off_and_refuse_the_unknown() -> None:
    assert fault_words("kill, power,kill") == ("kill", "power-off")
    with pytest.raises(KinspectError, match="'nuke' is not a fault the nemesis knows"):
        fault_words("kill,nuke")
    with pytest.raises(KinspectError, match="names no fault"):
        fault_words(" , ")
    with pytest.raises(KinspectError, match="--duration must be at least"):
        chaos_scenario(ChaosPlan(seed=1, duration_s=20))


def test_windows_label_each_fault_to_its_repair_and_the_quiet_between() -> None:
    faults = [{"ts": 100, "do": "kill", "nodes": ["kafka2"]},
              {"ts": 150, "do": "start", "nodes": ["kafka2"]},
              {"ts": 300, "do": "power-off", "nodes": ["kafka1", "kafka2", "kafka3"]},
              {"ts": 320, "do": "power-on", "nodes": ["kafka1", "kafka2", "kafka3"]}]
    assert windows(faults, 50, 400) == [
        ("quiet", 50, 100), ("kill kafka2", 100, 150), ("quiet", 150, 300),
        ("power-off kafka1, kafka2, kafka3", 300, 320), ("quiet", 320, 400)]


def test_loss_by_window_counts_each_lost_message_by_its_ack_time(tmp_path: Path) -> None:
    """From the post-mortem's lost set, every lost message (none past a cap), by when it was
    acknowledged; unknown when the set is not there."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    faults = [{"ts": 100, "do": "power-off", "nodes": ["kafka1", "kafka2", "kafka3"]},
              {"ts": 150, "do": "power-on", "nodes": ["kafka1", "kafka2", "kafka3"]}]
    (tmp_path / "summary.json").write_text(json.dumps({"started_at_ms": 50,
                                                       "ended_at_ms": 200}))
    assert chaos.loss_by_window(tmp_path, faults, acked_lost=3) is None
    acked = [60, 99, 120]  # two before the cut, one during it
    lost = tmp_path / POSTMORTEM_DIR / LOST_FILE
    lost.mkdir(parents=True)
    pq.write_table(pa.table({"producer": [0, 0, 0], "seq": [1, 2, 3], "partition": [0, 0, 0],
                             "offset": [5, 6, 7], "ack_ts": acked, "epoch": [0, 0, 0]}),
                   lost / "part-0.parquet")
    found = chaos.loss_by_window(tmp_path, faults, acked_lost=3)
    assert found is not None
    assert [(w.label, w.lost) for w in found] == [
        ("quiet", 2), ("power-off kafka1, kafka2, kafka3", 1), ("quiet", 0)]
    assert chaos.loss_by_window(tmp_path, faults, acked_lost=4) is None  # not this report's


def test_the_cli_prints_the_schedule_and_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    first = kinspect("scenario", "chaos", "--seed", "7", "--duration", "2m", "--schedule")
    again = kinspect("scenario", "chaos", "--seed", "7", "--duration", "120", "--schedule")
    assert first.stdout == again.stdout
    assert first.stdout.startswith("seeded nemesis: ")
    assert "invariants: faults_applied >= " in first.stdout
    for bad in (["--duration", "soon"], ["--faults", "kill,nuke"], ["--duration", "5"]):
        done = kinspect("scenario", "chaos", "--seed", "7", "--schedule", *bad, check=False)
        assert done.returncode == 2, done
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("kinspect: error: ")


def test_a_partition_cuts_a_drawn_half_of_the_nodes_from_the_rest() -> None:
    """Jepsen's random halves: which half is drawn with the schedule, so the same seed cuts the
    same nodes in every lab of the same shape; the lab gets them as one group, the rest as
    the other."""
    steps = schedule(ChaosPlan(seed=5, duration_s=600, faults=("partition",)))
    targets = [s.target for s in steps]
    assert targets == [s.target for s in schedule(ChaosPlan(5, 600, ("partition",)))]
    assert len(set(targets)) > 1  # each partition draws its own half
    nodes = ["zk1", "kafka1", "kafka2", "kafka3"]
    seeds = [halves_seed(t) for t in targets]
    sides = [halves(nodes, seed) for seed in seeds if seed is not None]
    assert all(len(side) == 2 and set(side) < set(nodes) for side in sides)
    assert len({tuple(side) for side in sides}) > 1
    assert resolve(targets[0], None, "chaos", {}, [], nodes) == sides[0]  # type: ignore[arg-type]
    [fault] = FaultStep(do="partition", target=targets[0]).faults(sides[0])
    assert fault.kind is FaultKind.PARTITION and fault.groups == (tuple(sides[0]),)
    assert fault.undo() is not None and fault.undo().kind is FaultKind.HEAL  # type: ignore[union-attr]


class VirtualClock:
    """A fake of the `time` module the plan reads: sleeping moves the clock on at once, so
    the schedule is checked exactly, whatever else the machine is doing."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)

    def time_ns(self) -> int:  # the plan log's timestamps
        return int(self.now * 1e9)


class TimedLab:
    """Stand-in for the lab (the plan's clock is under test, not a fault): when each fault
    was handed to it, and a first one that takes `slow_s` to carry out."""

    def __init__(self, clock: VirtualClock, slow_s: float) -> None:
        self.clock, self.slow_s = clock, slow_s
        self.applied: list[tuple[str, float]] = []

    def state(self) -> None:
        return None

    def apply(self, fault: Fault) -> str:
        self.applied.append((str(fault.kind), self.clock.monotonic()))
        if len(self.applied) == 1:
            self.clock.sleep(self.slow_s)
        return ""


def test_the_plan_fires_each_fault_at_its_time_on_the_schedule(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Anchored on the plan's start: a slow repair does not push the next fault later than
    its time, and a fault whose time has passed fires at once."""
    steps = (FaultStep(do="heal", target="all", after_s=0.2, at_s=0.2),
             FaultStep(do="heal", target="all", after_s=0.1, at_s=0.3),  # passed: at once
             FaultStep(do="heal", target="all", after_s=0.1, at_s=1.0))
    clock = VirtualClock()
    monkeypatch.setattr(plan_module, "time", clock)
    lab = TimedLab(clock, slow_s=0.4)
    plan = FaultPlan(steps, lab, None, "chaos", tmp_path, 0, lambda line: None)  # type: ignore[arg-type]
    started = clock.monotonic()
    plan.run()
    offsets = [at - started for _, at in lab.applied]
    assert plan.error is None
    assert offsets == pytest.approx([0.2, 0.6, 1.0])  # the second right after the slow first;
    # the third not at 0.6 + 0.1: on the schedule's clock


class LateController:
    """Stand-in for the cluster's decisions: no controller for the first `none_for` asks (one
    being elected), then broker 2."""

    def __init__(self, none_for: int) -> None:
        self.none_for, self.asked = none_for, 0

    def controller(self) -> int | None:
        self.asked += 1
        if self.asked <= self.none_for:
            return None
        return 2


def test_a_role_that_names_nobody_yet_is_asked_again_then_skipped_with_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A nemesis's 'kill controller' while one is being elected waits for it (it had ended
    the plan); one never elected skips the step with the reason, and the plan goes on."""
    clock = VirtualClock()
    monkeypatch.setattr(plan_module, "time", clock)
    steps = (FaultStep(do="kill", target="controller", at_s=0.0),
             FaultStep(do="heal", target="all", at_s=0.0))
    lab = TimedLab(clock, slow_s=0.0)
    plan = FaultPlan(steps, lab, LateController(3), "chaos", tmp_path, 0,  # type: ignore[arg-type]
                     lambda line: None)
    plan.run()
    assert plan.error is None and plan.log.skipped == []
    assert [kind for kind, _ in lab.applied] == ["kill", "heal"]

    lab = TimedLab(clock, slow_s=0.0)
    never = int(plan_module.RESOLVE_WAIT_S / plan_module.RESOLVE_POLL_S) + 10
    plan = FaultPlan(steps, lab, LateController(never), "chaos", tmp_path, 0,  # type: ignore[arg-type]
                     lambda line: None)
    plan.run()
    assert plan.error is None
    assert plan.log.skipped == ["kill controller: there is no controller to hit for 30 s"]
    assert [kind for kind, _ in lab.applied] == ["heal"]


@dataclass
class StandInNode:
    name: str
    state: NodeState


class ExitingLab:
    """Stand-in for the lab (the plan's handling of a dead node is under test): kafka2 has
    died by itself, as a broker whose ZooKeeper session expired while it started does; a pause
    of a node that is not running is refused, as the real lab refuses it."""

    def __init__(self) -> None:
        self.nodes = {name: StandInNode(name, NodeState.RUNNING) for name in ("kafka1", "kafka2")}
        self.nodes["kafka2"].state = NodeState.EXITED
        self.applied: list[str] = []

    def state(self) -> Any:
        nodes = list(self.nodes.values())
        return type("State", (), {"nodes": nodes, "brokers": nodes})()

    def apply(self, fault: Fault) -> str:
        node = self.nodes[str(fault.node)]
        if fault.kind is FaultKind.PAUSE and node.state is not NodeState.RUNNING:
            raise KinspectError(f"{node.name} is {node.state}; cannot pause it")
        node.state = {FaultKind.START: NodeState.RUNNING, FaultKind.PAUSE: NodeState.PAUSED,
                      FaultKind.RESUME: NodeState.RUNNING}[fault.kind]
        self.applied.append(f"{fault.kind} {node.name}")
        return ""


def test_a_node_dead_by_itself_is_started_again_before_the_next_fault(tmp_path: Path) -> None:
    """It had ended the hour's nemesis at its 88th fault: 'kafka2 is exited; cannot pause it'.
    Now the plan starts it again, says so, names it in the log, and carries the step out; a
    step on another node starts it again too (it may be the last in-sync replica)."""
    said: list[str] = []
    lab = ExitingLab()
    step = FaultStep(do="pause", target="kafka2", at_s=0.0, for_s=0.0)
    plan = FaultPlan((step,), lab, None, "chaos", tmp_path, 0,  # type: ignore[arg-type]
                     said.append)
    plan.run()
    assert plan.error is None, plan.error
    assert lab.applied == ["start kafka2", "pause kafka2", "resume kafka2"]
    assert plan.log.revived == ["kafka2"]
    assert [e.do for e in plan.log.entries] == ["pause", "resume"]  # the schedule, as drawn
    assert said[0] == "fault plan: kafka2 had exited by itself; starting it again before 'pause'"

    lab = ExitingLab()
    step = FaultStep(do="pause", target="kafka1", at_s=0.0, for_s=0.0)
    plan = FaultPlan((step,), lab, None, "chaos", tmp_path, 0,  # type: ignore[arg-type]
                     said.append)
    plan.run()
    assert lab.applied == ["start kafka2", "pause kafka1", "resume kafka1"]


@dataclass
class StandInPartition:
    leader: int | None
    isr: tuple[int, ...]


class StuckFollowers:
    """Stand-in for the cluster's decisions: chaos-1's followers never rejoin (as Kafka 3.9.2's
    kept truncating to one offset after an hour's power cuts); with `led=False`, no leader."""

    def __init__(self, led: bool = True) -> None:
        self.led = led

    def partition(self, topic: str, p: int) -> StandInPartition:
        if p == 1:
            return StandInPartition(1 if self.led else None, (1,))
        return StandInPartition(3, (1, 2, 3))


def test_an_isr_that_never_fills_is_a_note_and_the_run_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The post-mortem still runs (the leaders serve the final log); no leader at all ends
    the run with one line."""
    monkeypatch.setattr(scenario_run, "HEAL_WAIT_S", 0.3)
    monkeypatch.setattr(scenario_run, "LEADER_WAIT_S", 0.3)
    scenario = chaos_scenario(ChaosPlan(7, 120, fault_words("kill")))
    said: list[str] = []
    note = scenario_run.settle(StuckFollowers(), scenario, said.append)  # type: ignore[arg-type]
    assert note == ("chaos was not healed 0 s after the last repair (short ISR: chaos-1 (ISR 1 "
                    "of 3)); the post-mortem read what the leaders hold")
    assert said == [note]
    row = scenario_run.result_row(scenario, Report.from_json({"acked": 100}), {}, PlanLog(), {},
                                  None, unhealed=note)
    assert note in row["notes"]  # the result says it, beside the report
    with pytest.raises(KinspectError, match="a leader for every partition of chaos"):
        scenario_run.settle(StuckFollowers(led=False), scenario, said.append)  # type: ignore[arg-type]


class SlowLab:
    """Stand-in for the lab: each fault takes `seconds` of real time to carry out, as a
    broker's power-on does on a loaded machine."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.applied: list[str] = []

    def state(self) -> None:
        return None

    def apply(self, fault: Fault) -> str:
        time.sleep(self.seconds)
        self.applied.append(str(fault.kind))
        return ""


def test_a_plan_past_its_time_finishes_its_step_and_skips_the_rest(tmp_path: Path) -> None:
    """The runner heals only once the plan has stopped touching the lab: healing beside a plan
    still powering brokers on had been refused ('kafka3 is running; cannot power-on')."""
    steps = tuple(FaultStep(do="heal", target="all", after_s=0.0) for _ in range(3))
    lab = SlowLab(0.5)
    plan = FaultPlan(steps, lab, None, "t", tmp_path, 0, lambda line: None)  # type: ignore[arg-type]
    said: list[str] = []
    plan.start()
    scenario_run.end_plan(plan, 0.1, said.append)
    assert not plan.is_alive()
    assert lab.applied == ["heal"]  # the step under way was carried out whole
    assert plan.log.skipped == ["heal all: the plan ran past its time and was stopped"] * 2
    assert said == ["the fault plan ran past its time: its current step finishes, the rest "
                    "are skipped"]
