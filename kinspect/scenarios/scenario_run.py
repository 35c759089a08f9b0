"""One scenario, start to finish: reset the lab, load, break, heal, verify, post-mortem, judge.

Everything a run produces stays in its run dir (ledger, final log, timeline, faults, broker
logs, post-mortem, scenario.json), so a result can always be explained after the fact.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.clients.decisions import Decisions
from kinspect.errors import KinspectError
from kinspect.lab import open_backend, power, reset_lab
from kinspect.lab.backend import LabBackend, UpOptions
from kinspect.lab.decision_link import lab_decisions
from kinspect.lab.faults import Fault, FaultKind
from kinspect.lab.state import LabState, NodeState
from kinspect.lab.topics import create_topics
from kinspect.lab.topology import broker_id_of, broker_node
from kinspect.load.consumers.settings import ConsumeSettings
from kinspect.load.producer_run import run_load
from kinspect.load.run_timeline import recording_timeline
from kinspect.load.rundir import BROKER_LOGS_DIR, SCENARIO_FILE, new_run_dir, new_run_id
from kinspect.model.events import Election
from kinspect.postmortem.finish import finish_run
from kinspect.postmortem.story.report import blamed
from kinspect.postmortem.story.values import ConsumerSide, Report
from kinspect.scenarios import probes
from kinspect.scenarios.measured import Measured, metric_value
from kinspect.scenarios.plan import FaultPlan, PlanLog
from kinspect.scenarios.platform import Platform
from kinspect.scenarios.spec import METRICS, Scenario

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject
    from kinspect.model.views import PartitionStateZ

Say = Callable[[str], None]
CONSUMER_DRAIN_S = 300.0  # the group reads what the load left, then stops when idle
HEAL_WAIT_S = 180.0  # after the last repair, for a full ISR (else a note, and the run goes on)
LEADER_WAIT_S = 120.0  # then, for a leader of every partition (else the run ends: no report)


def default_run_dir(name: str) -> Path:
    """Where a scenario's evidence goes unless told: $KINSPECT_HOME/runs/scenario-NAME-TIME."""
    return new_run_dir(f"scenario-{Path(name).stem}")


def _wait(probe: Callable[[], bool], timeout_s: float, what: str) -> None:
    if not _waited(probe, timeout_s):
        raise KinspectError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _waited(probe: Callable[[], bool], timeout_s: float) -> bool:
    """Whether the probe said yes within timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if probe():
                return True
        except Exception:  # a node still starting: ask again
            pass
        time.sleep(0.25)
    return False


def end_plan(plan: FaultPlan, budget_s: float, say: Say) -> None:
    """Wait for the plan; past its budget, let the step it is carrying out finish and skip
    the rest. Healing beside a plan still powering brokers on had raced it: the heal found
    kafka3 powered off, the plan powered it on, and the heal's own power-on was refused."""
    plan.join(timeout=budget_s)
    if not plan.is_alive():
        return
    say("the fault plan ran past its time: its current step finishes, the rest are skipped")
    plan.stopped.set()
    plan.join()


def heal_everything(lab: LabBackend, say: Say) -> None:
    """Undo whatever the plan left behind: partitions, paused and stopped nodes."""
    state = lab.state()
    if state is None:
        return
    if state.groups:
        lab.apply(Fault(FaultKind.HEAL))
    for node in state.nodes:
        if node.state == NodeState.PAUSED:
            lab.apply(Fault(FaultKind.RESUME, node.name))
        elif node.state == NodeState.POWERED_OFF:
            say(f"powering {node.name} on again")
            lab.apply(Fault(FaultKind.POWER_ON, node.name))
        elif node.state != NodeState.RUNNING:
            say(f"starting {node.name} again")
            lab.apply(Fault(FaultKind.START, node.name))
    lab.apply(Fault(FaultKind.UNSLOW))


def _states(decided: Decisions, scenario: Scenario) -> list[PartitionStateZ | None]:
    """Each partition's state as the cluster decided it, read once per probe."""
    return [decided.partition(scenario.topic, p) for p in range(scenario.partitions)]


def _led(states: list[PartitionStateZ | None]) -> bool:
    return all(state is not None and state.leader is not None for state in states)


def _short_isrs(states: list[PartitionStateZ | None], scenario: Scenario) -> list[str]:
    """The partitions whose ISR is short of the replication factor, as "chaos-1 (ISR 1 of 3)"."""
    short = []
    for p, state in enumerate(states):
        if state is not None and len(state.isr) < scenario.replication_factor:
            short.append(f"{scenario.topic}-{p} (ISR {len(state.isr)} of "
                         f"{scenario.replication_factor})")
    return short


def _full_isr(decided: Decisions, scenario: Scenario) -> bool:
    states = _states(decided, scenario)
    return _led(states) and not _short_isrs(states, scenario)


def settle(decided: Decisions, scenario: Scenario, say: Say) -> str | None:
    """After the last repair: every partition led with a full ISR, or a note saying which ISR
    stayed short, and the run goes on to its post-mortem (the leaders serve the final log).
    After an hour's power cuts a follower of Kafka 3.9.2 kept truncating to the same offset
    for half an hour and never rejoined; the run had ended with no report. No leader at all
    after LEADER_WAIT_S more is an error: nothing could read the final log."""
    if _waited(lambda: _full_isr(decided, scenario), HEAL_WAIT_S):
        return None
    _wait(lambda: _led(_states(decided, scenario)), LEADER_WAIT_S,
          f"a leader for every partition of {scenario.topic}")
    short = ", ".join(_short_isrs(_states(decided, scenario), scenario)) or "none now"
    note = (f"{scenario.topic} was not healed {HEAL_WAIT_S:.0f} s after the last repair (short "
            f"ISR: {short}); the post-mortem read what the leaders hold")
    say(note)
    return note


ELECTED = {"leader_changed", "partition_online", "log_leader_start", "log_leader_and_isr"}


def failover_ms(report: Report, fault_ts: int | None) -> int | None:
    """From the first fault to the first leader the observer saw elected after it (an election
    seen by several sources is one timeline entry; `seen` keeps the observer's own time)."""
    if fault_ts is None:
        return None
    for entry in report.timeline:
        if entry.get("kind") not in ELECTED or entry.get("new") in (None, -1):
            continue
        observed = _observed_at(entry)
        if isinstance(observed, int) and observed > fault_ts:
            return int(observed - fault_ts)
    return None


def _observed_at(entry: Mapping[str, object]) -> object:
    """When the observer saw a timeline entry: its time in the entry's `seen`, else the
    entry's own when the observer told it (None: the observer did not see it)."""
    seen = entry.get("seen")
    if isinstance(seen, dict) and seen:
        return seen.get("observer")
    if entry.get("source") == "observer":
        return entry["ts"]
    return None


def result_row(scenario: Scenario, report: Report, summary: dict[str, Any],
               log: PlanLog, probe: dict[str, int], plan_error: str | None,
               platform: Platform | None = None, controller_log: bool = False,
               unhealed: str | None = None) -> JsonObject:
    """One run judged. A skipped step or a failed plan fails the expectation by itself: a run
    whose fault never happened demonstrates nothing, however its numbers look. How the KRaft
    controller chose leaders is counted only from its own log (`controller_log`: kept in the
    run dir); without it the counts are unknown, not zero."""
    kraft = platform is not None and platform.kraft
    crashes = int((summary.get("crashed") or {}).get("generators", 0))
    measured = _measured(report, crashes, log, probe, kraft and controller_log)
    row: JsonObject = {"scenario": scenario.name, "status": "ran", "source": scenario.source}
    row.update({name: metric_value(name, report, measured) for name in METRICS})
    row["blamed_broker"] = blamed_broker(report)
    row["failed_by_error"] = summary.get("failed_by_error", {})
    row["failover_ms"] = failover_ms(report, log.first_fault_ms)
    problems = plan_problems(log, plan_error)
    row["expectation"] = scenario.expectation_text(platform)
    row["expectation_failed"] = [*problems, *(str(c) for c in scenario.conditions(platform)
                                              if not c.holds(row))]
    row["expectation_met"] = not row["expectation_failed"]
    row["faults"] = [entry.to_json() for entry in log.entries]
    row["revived"] = list(log.revived)
    row["notes"] = _notes(log, problems, kraft and not controller_log, unhealed)
    row["explanation"] = report.explanation
    return row


def _measured(report: Report, generator_crashes: int, log: PlanLog, probe: dict[str, int],
              read_controller: bool) -> Measured:
    """The run's numbers under the names [expect] uses; the KRaft controller's election counts
    only when its log was read (unknown otherwise, not zero)."""
    counted: dict[str, int | None] = {}
    if read_controller:
        counted = elections(report)
    return Measured(
        faults_applied=len(log.disruptive()),
        lost_blamed_on_target=lost_blamed_on_target(report, log),
        generator_crashes=generator_crashes,
        consumed_during_fault=probe.get("consumed_during_fault"),
        **group_metrics(report.consumers), **counted)


def _notes(log: PlanLog, problems: list[str], controller_unread: bool,
           unhealed: str | None) -> list[str]:
    """What a reader of the row must know beside its numbers, one line each."""
    revived = [f"{name} died by itself during the plan and was started again before its next "
               "fault" for name in log.revived]
    notes = [*problems, *revived]
    if controller_unread:
        notes.append(UNREAD_CONTROLLER)
    if unhealed is not None:  # settle()'s note: an ISR still short after the last repair
        notes.append(unhealed)
    return notes


UNREAD_CONTROLLER = ("no controller's log was kept: elr_elections and unclean_elections are "
                     "unknown")


def kept_controller_log(run_dir: Path, state: LabState) -> bool:
    """Whether a voter's controller.log is in the run dir's evidence (KRaft's decisions)."""
    logs = run_dir / BROKER_LOGS_DIR
    return any((logs / node.name / "controller.log").is_file() for node in state.voters)


def elections(report: Report) -> dict[str, int | None]:
    """How many of the timeline's elections the KRaft controller's log says it made from the
    eligible leader replicas, and how many it called UNCLEAN (the last leader's return after a
    kill among them); one entry per election, however many voters logged it."""
    said = [Election(str(entry["election"])) for entry in report.timeline
            if entry.get("kind") in ELECTED and entry.get("election") in set(Election)]
    return {"elr_elections": said.count(Election.ELR),
            "unclean_elections": sum(how.unclean for how in said)}


def group_metrics(side: ConsumerSide | None) -> dict[str, int | None]:
    """The consumer group's numbers under the names [expect] uses (none without a group)."""
    if not side:
        return {}
    metrics: dict[str, int | None] = {
        "never_processed": side.never_processed, "consumer_crashes": side.crashes,
        "committed_unprocessed": side.committed_unprocessed,
        "processed_twice": side.processed_twice, "redelivered": side.redelivered_records,
        "aborted_visible": None, "output_duplicates": None}  # none without an output topic
    if side.output_counts:
        metrics["aborted_visible"] = side.output_counts.aborted_visible
        metrics["output_duplicates"] = side.extra_processings
    return metrics


def plan_problems(log: PlanLog, plan_error: str | None) -> list[str]:
    """Why the planned faults did not all happen, one line each."""
    problems = [f"fault step skipped: {reason}" for reason in log.skipped]
    if plan_error:
        problems.append(f"fault plan failed: {plan_error}")
    return problems


def blamed_broker(report: Report) -> int | None:
    """The broker that acknowledged most of the lost messages, for display."""
    counts = blamed(report)
    if not counts:
        return None
    return max(counts, key=lambda broker: counts[broker])


def lost_blamed_on_target(report: Report, log: PlanLog) -> float | None:
    """The share of acked_lost acknowledged by a broker the first disruptive step hit: an
    isolation scenario's loss must come from the broker it cut off, not from anywhere.
    None when nothing was lost or the first fault hit no broker."""
    lost = report.acked_lost
    disruptive = log.disruptive()
    if not lost or not disruptive:
        return None
    hit = set(disruptive[0].nodes)
    if not any(broker_id_of(node) is not None for node in hit):
        return None
    on_target = sum(count for broker, count in blamed(report).items()
                    if broker is not None and broker_node(broker) in hit)
    return on_target / lost


def skipped_row(scenario: Scenario, reason: str, platform: Platform | None = None
                ) -> JsonObject:
    row: JsonObject = {"scenario": scenario.name, "status": "skipped", "reason": reason,
           "source": scenario.source, "expectation": scenario.expectation_text(platform),
           "expectation_met": None}
    if platform is not None:
        row.update(platform.fields)
    return row


def unshapeable(scenario: Scenario) -> str | None:
    """Why this lab's kernel cannot make a link the plan slows (None: it can, or none is)."""
    shapes = [step.shape for step in scenario.steps if step.shape is not None]
    if not shapes and "netem" not in scenario.needs:
        return None
    kit = open_backend().shaping_kit()
    if "netem" in scenario.needs and not kit.netem:
        return kit.unavailable or "this kernel has no netem (sch_netem)"
    for shape in shapes:
        why = kit.refuse(shape)
        if why is not None:
            return why
    return None


def unpowerable(scenario: Scenario) -> str | None:
    """Why this machine cannot give the lab disks that lose power (None: it can, or none
    is asked for)."""
    if not scenario.power:
        return None
    return power.problem()


def run_scenario(scenario: Scenario, run_dir: Path, say: Say, keep_lab: bool = False,
                 spark: Any = None, platform: Platform | None = None) -> JsonObject:
    """Run it on a lab of that platform (in KRaft the controller quorum stands where
    ZooKeeper stood); return the result row (also written to RUN_DIR/scenario.json). A
    platform the scenario needs more than (KRaft, Kafka 4.x) is a skipped row with why."""
    if platform is None:
        platform = Platform.of("zookeeper")
    why = (platform.refuses(scenario.needs, bool(scenario.features)) or unshapeable(scenario)
           or unpowerable(scenario))
    if why is not None:
        row = skipped_row(scenario, why, platform)
        _save(run_dir, row)
        return row
    lab, state = reset_lab(lab_options(scenario, platform), say)
    try:
        with lab_decisions(state) as decided:
            row = {**_run_on_lab(scenario, run_dir, say, lab, state, decided, spark, platform),
                   **platform.fields}
    finally:
        if not keep_lab:
            lab.down(say)
    _save(run_dir, row)
    return row


def lab_options(scenario: Scenario, platform: Platform) -> UpOptions:
    """The lab a scenario asks for, on this platform (the quorum's size and feature levels
    only where there is a quorum)."""
    controllers: int | None = None
    features: dict[str, int] = {}
    if platform.kraft:
        controllers, features = scenario.controllers, dict(scenario.features)
    return UpOptions(brokers=scenario.brokers, preset=scenario.preset,
                     overrides=scenario.broker_config, mode=platform.mode, kafka=platform.kafka,
                     controllers=controllers, features=features, power=scenario.power)


def _save(run_dir: Path, row: JsonObject) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / SCENARIO_FILE).write_text(json.dumps(row, indent=2))


def _run_on_lab(scenario: Scenario, run_dir: Path, say: Say, lab: LabBackend, state: LabState,
                decided: Decisions, spark: Any, platform: Platform) -> JsonObject:
    bootstrap = state.bootstrap
    run_id = new_run_id()  # the load's and the group's: the group starts first
    group = scenario.consume_settings(bootstrap, run_id)
    _prepare_topics(scenario, group, bootstrap, decided)
    settings = scenario.load_settings(bootstrap)
    probe_result: dict[str, int] = {}
    plan = FaultPlan(scenario.steps, lab, decided, scenario.topic, run_dir, settings.count or 0, say,
                     _mid_fault_probe(scenario, platform, bootstrap, probe_result))
    expected = {b.broker_id: b.address for b in state.brokers if b.broker_id is not None}
    say(f"load: {settings.count:,} messages, acks={settings.acks}, "
        f"{settings.producers} producer(s)")
    # The timeline covers the whole run, not just the load: a failover that completes after
    # the last message was sent is still part of the story.
    with recording_timeline(bootstrap, state.zookeeper_address, run_dir, expected,
                            controllers=state.controller_addresses or None), \
            consumers_along(group, run_dir, say):
        plan.start()
        try:
            summary = run_load(settings, run_dir, None, None, expected, origin="scenario",
                               run_id=run_id)
        finally:
            plan.load_done.set()
        end_plan(plan, _plan_budget(scenario), say)
        heal_everything(lab, say)
        unhealed = settle(decided, scenario, say)
    say("verify, evidence and post-mortem (Spark)…")
    report = finish_run(run_dir, bootstrap, lab=lab.state() or state, spark=spark)
    return result_row(scenario, report, summary, plan.log, probe_result, plan.error, platform,
                      kept_controller_log(run_dir, state), unhealed)


def _prepare_topics(scenario: Scenario, group: ConsumeSettings | None, bootstrap: str,
                    decided: Decisions) -> None:
    """The scenario's topics (and its group's output topic) created with a full ISR, and the
    group assigned, before any fault."""
    topics = {scenario.topic: scenario.partitions}
    if group is not None and group.output is not None:
        topics[group.output] = scenario.partitions
    create_topics(bootstrap, topics, scenario.replication_factor, scenario.topic_config)
    _wait(lambda: _full_isr(decided, scenario), 90, f"a full ISR on {scenario.topic}")
    if scenario.consumer_group and not probes.warm_group(bootstrap, scenario.topic):
        raise KinspectError("the consumer group never got an assignment before the fault")


def _mid_fault_probe(scenario: Scenario, platform: Platform, bootstrap: str,
                     result: dict[str, int]) -> Callable[[], None] | None:
    """What the plan asks mid-fault, into `result`: can the group consume, or anyone still
    read? None when no condition looks at it."""
    wanted = any(c.metric == "consumed_during_fault" for c in scenario.conditions(platform))
    if not scenario.consumer_group and not wanted:
        return None
    count = probes.read_count
    if scenario.consumer_group:
        count = probes.group_count

    def probe() -> None:
        result["consumed_during_fault"] = count(bootstrap, scenario.topic, 6.0)
    return probe


@contextmanager
def consumers_along(group: ConsumeSettings | None, run_dir: Path, say: Say,
                    ) -> Iterator[None]:
    """The scenario's consumer group, as `kinspect consume run` in its own process (its
    workers need the main thread's signals), reading along from before the first message;
    at the end of the block it is left to drain until idle, then waited for."""
    if group is None:
        yield
        return
    said = f"consumer group {group.group}: {group.consumers} consumer(s), commit {group.commit}"
    if group.crash_after:
        said += f", crash after {group.crash_after:,} records"
    say(said)
    group.save(run_dir)  # the runner reads its settings from here (no secret in a lab's)
    process = subprocess.Popen([sys.executable, "-m", "kinspect.load.consumers.group_run",
                                "--run-dir", str(run_dir)], stdout=subprocess.DEVNULL)
    try:
        yield
        say("waiting for the consumer group to drain…")
        process.wait(timeout=CONSUMER_DRAIN_S)
    except subprocess.TimeoutExpired:
        process.terminate()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)
    if process.returncode != 0:
        raise KinspectError(f"the consumer group failed (exit {process.returncode}); "
                            f"see {run_dir}/consumer")


def _plan_budget(scenario: Scenario) -> float:
    """Long enough for every remaining wait and hold in the plan, plus slack."""
    return 30.0 + sum((s.after_s or 0) + (s.for_s or 0) for s in scenario.steps)

