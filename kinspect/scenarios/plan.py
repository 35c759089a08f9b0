"""Carrying out a fault plan while the load runs: resolve roles to nodes, act, undo, log.

Roles are resolved at the moment a step fires ("the current leader of test1-0"), from
ZooKeeper, because after the first fault the leader is somebody else.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kinspect.clients.decisions import Decisions
from kinspect.errors import KinspectError
from kinspect.lab.backend import LabBackend
from kinspect.lab.faults import Fault, FaultKind
from kinspect.lab.state import NodeState
from kinspect.lab.topology import broker_node, node_of
from kinspect.load.runstats import aggregate, read_stats
from kinspect.model.views import PartitionStateZ
from kinspect.scenarios.spec import DISRUPTIVE, ROLE_TARGETS, FaultStep, halves_seed

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

Say = Callable[[str], None]


def resolve(target: str, decided: Decisions, topic: str, remembered: dict[str, list[str]],
            all_brokers: list[str], all_nodes: Sequence[str] = ()) -> list[str]:
    """Node names a target means right now."""
    seed = halves_seed(target)
    if seed is not None:
        return halves(all_nodes, seed)
    if target.startswith("@"):
        if target[1:] not in remembered:
            raise KinspectError(f"target {target} names nothing remembered by an earlier step")
        return remembered[target[1:]]
    if target in ("leader", "follower", "followers"):
        return _replica_role(target, decided, topic)
    if target == "controller":
        controller = decided.controller()
        if controller is None:
            raise KinspectError("there is no controller to hit")
        return [node_of(controller)]
    if target == "offsets-leader":
        offsets = decided.partition("__consumer_offsets", 0)
        if offsets is None:
            raise KinspectError("__consumer_offsets does not exist yet")
        if offsets.leader is None:
            raise KinspectError("__consumer_offsets-0 has no leader to hit")
        return [broker_node(offsets.leader)]
    if target == "all":
        return list(all_brokers)
    return [target]


def halves(nodes: Sequence[str], seed: int) -> list[str]:
    """Half the lab's nodes (rounded down), drawn by `seed` from their names in order: the same
    seed cuts the same nodes from the rest in every lab of the same shape (Jepsen's random
    halves)."""
    shuffled = sorted(nodes)
    random.Random(seed).shuffle(shuffled)
    return sorted(shuffled[:len(shuffled) // 2])


def _replica_role(target: str, decided: Decisions, topic: str) -> list[str]:
    """The leader, a follower (one still in sync: a second "follower" is another one) or the
    followers of partition 0, as decided right now."""
    state = decided.partition(topic, 0)
    leader = state.leader if state else None
    if target == "leader":
        if leader is None:
            raise KinspectError(f"{topic}-0 has no leader to hit")
        return [broker_node(leader)]
    followers = [b for b in decided.replicas(topic).get(0, ()) if b != leader]
    if target == "follower":
        return [broker_node(b) for b in _first_follower(followers, state)]
    return [broker_node(b) for b in followers]


def _first_follower(followers: list[int], state: PartitionStateZ | None) -> list[int]:
    """The first follower still in sync, else the first follower at all (none: none)."""
    in_sync = followers
    if state is not None:
        in_sync = [b for b in followers if b in state.isr] or followers
    return in_sync[:1]


STATS_POLL_S = 0.2  # the producers publish their stats once a second; no need to read faster
RESOLVE_WAIT_S, RESOLVE_POLL_S = 30.0, 0.5  # a role that names nobody yet: asked again


@dataclass(frozen=True)
class PlanEntry:
    """One step the plan carried out: when (epoch ms), what, on which nodes."""

    ts: int
    do: str
    nodes: tuple[str, ...]

    def to_json(self) -> JsonObject:
        """As the result row's `faults` hold it."""
        return {"ts": self.ts, "do": self.do, "nodes": list(self.nodes)}


@dataclass
class PlanLog:
    """What the plan did, with wall-clock times, for the result row and the report.

    `skipped` holds one reason per step that never fired ("isolate leader: the load ended
    before 30% was acknowledged"); the result row fails the expectation on any of them.
    `revived` names each node found dead by itself before a step and started again.
    """

    entries: list[PlanEntry] = field(default_factory=list)
    first_fault_ms: int | None = None
    skipped: list[str] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)

    def add(self, do: str, nodes: list[str]) -> None:
        ts = time.time_ns() // 1_000_000
        self.entries.append(PlanEntry(ts, do, tuple(nodes)))
        if self.first_fault_ms is None and do in DISRUPTIVE:
            self.first_fault_ms = ts

    def disruptive(self) -> list[PlanEntry]:
        """The entries that broke something, in order (not the starts, resumes and heals)."""
        return [entry for entry in self.entries if entry.do in DISRUPTIVE]


class FaultPlan(threading.Thread):
    """Fires each step when its moment comes; `probe` runs once in the middle of the first
    held fault (reads or a consumer group, while the fault is on)."""

    def __init__(self, steps: tuple[FaultStep, ...], lab: LabBackend, decided: Decisions, topic: str,
                 run_dir: Path, planned: int, say: Say,
                 probe: Callable[[], None] | None = None) -> None:
        super().__init__(name="fault-plan", daemon=True)
        self.steps, self.lab, self.decided, self.topic = steps, lab, decided, topic
        self.run_dir, self.planned, self.say, self.probe = run_dir, planned, say, probe
        self.log = PlanLog()
        self.load_done = threading.Event()
        self.stopped = threading.Event()  # set by the runner once the plan ran past its time
        self.error: str | None = None
        self._remembered: dict[str, list[str]] = {}
        self._schedule_start = time.monotonic()  # run()'s start: the load starts with it
        state = lab.state()
        self._brokers = [b.name for b in state.brokers] if state else []
        self._nodes = [n.name for n in state.nodes] if state else []

    def run(self) -> None:
        """Every step in order; a step whose moment never came is skipped (and logged) and the
        next one still runs; an exception ends the plan, its reason kept in `error`."""
        self._schedule_start = time.monotonic()
        try:
            for step in self.steps:
                if self.stopped.is_set():
                    self.log.skipped.append(f"{step.do} {step.target}: the plan ran past its "
                                            "time and was stopped")
                    continue
                if not self._wait_for(step):
                    self.log.skipped.append(f"{step.do} {step.target}: the load ended before "
                                            f"{step.at:.0%} was acknowledged")
                    continue
                nodes = self._resolve(step)
                if nodes is None:
                    continue
                faults = step.faults(nodes)
                self._revive(step.do)
                self._apply(step.do, faults, nodes)
                if step.remember:
                    self._remembered[step.remember] = nodes
                if step.for_s is not None:
                    self._hold(step.for_s)
                    undo = [f for f in dict.fromkeys(f.undo() for f in faults) if f is not None]
                    self._apply(undo[0].kind, undo, nodes)
        except Exception as exc:  # reported in the result; the runner heals everything anyway
            self.error = str(exc) or type(exc).__name__
            self.say(f"fault plan failed: {self.error}")

    def _resolve(self, step: FaultStep) -> list[str] | None:
        """The nodes the step's target means now. A role that names nobody yet (no leader
        while one is elected after a heal) is asked again for RESOLVE_WAIT_S, then the step
        is skipped with why: it had ended an hour's nemesis at its 54th fault."""
        deadline = time.monotonic() + RESOLVE_WAIT_S
        while True:
            try:
                return resolve(step.target, self.decided, self.topic, self._remembered,
                               self._brokers, self._nodes)
            except KinspectError as exc:
                if step.target not in ROLE_TARGETS:
                    raise
                if time.monotonic() >= deadline:
                    self.log.skipped.append(f"{step.do} {step.target}: {exc} for "
                                            f"{RESOLVE_WAIT_S:.0f} s")
                    return None
            time.sleep(RESOLVE_POLL_S)

    def _revive(self, do: str) -> None:
        """Every node that died by itself is started again before the next step, as a service
        manager would, and said. A broker whose ZooKeeper session expires while it starts exits
        (Kafka's fatal startup error): in an hour's nemesis kafka2 did, the last in-sync replica
        of 52 partitions, which stayed offline, and the next fault on it ended the plan."""
        state = self.lab.state()
        if state is None:
            return
        for node in state.nodes:
            if node.state is not NodeState.EXITED:
                continue
            self.say(f"fault plan: {node.name} had exited by itself; starting it again "
                     f"before '{do}'")
            self.lab.apply(Fault(FaultKind.START, node.name))
            self.log.revived.append(node.name)

    def _acked(self) -> int:
        return aggregate(read_stats(self.run_dir)).acked

    def _wait_for(self, step: FaultStep) -> bool:
        if step.at_s is not None:  # on the schedule's clock, whatever the last repair took
            time.sleep(max(0.0, self._schedule_start + step.at_s - time.monotonic()))
            return True
        if step.after_s is not None:
            time.sleep(step.after_s)
            return True
        goal = (step.at or 0.0) * self.planned
        while self._acked() < goal:
            if self.load_done.is_set():
                return False
            time.sleep(STATS_POLL_S)
        return True

    def _hold(self, seconds: float) -> None:
        probe, self.probe = self.probe, None
        if probe is None:
            time.sleep(seconds)
            return
        started = time.monotonic()
        time.sleep(seconds / 3)
        probe()
        time.sleep(max(0.0, seconds - (time.monotonic() - started)))

    def _apply(self, do: str, faults: list[Fault], nodes: list[str]) -> None:
        self.say(f"fault: {do} {', '.join(nodes) or 'everything'}")
        for fault in faults:
            self.lab.apply(fault)
        self.log.add(do, nodes)
