"""A scenario is data: lab settings, a topic, a load, a fault plan and what should happen.

Scenarios live in TOML files (the built-in catalog in kinspect/scenarios/catalog/, or any
file a user passes by path). Parsing is strict: an unknown key or a bad value is one line
naming the file and the key, never a traceback halfway through a run.
"""

from __future__ import annotations

import operator
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinspect.errors import KinspectError
from kinspect.lab import dist, presets
from kinspect.lab.faults import Fault, FaultKind, Scope
from kinspect.lab.shaping import Direction, LinkShape
from kinspect.lab.topology import (
    CONTROLLER_ID_BASE,
    ZOOKEEPER_NODE,
    broker_id_of,
    broker_node,
    controller_id_of,
)
from kinspect.load.consumers.settings import ConsumeSettings
from kinspect.load.runsettings import LoadSettings
from kinspect.scenarios.platform import NEEDS, Platform
from kinspect.validation import number, topic_name

# A step's `do`, in the scenario files' words, is one of the lab's faults (FaultKind.in_steps);
# an isolation names a scope other than all in the word ("isolate-zk").
STEP_FAULTS: dict[str, tuple[FaultKind, Scope]] = {
    **{kind.value: (kind, Scope.ALL) for kind in FaultKind if kind.in_steps},
    **{f"{FaultKind.ISOLATE}-{scope}": (FaultKind.ISOLATE, scope)
       for scope in Scope if scope is not Scope.ALL},
}
STEP_WORDS = tuple(STEP_FAULTS)
# The actions that break something are exactly those with an undo; the rest (start, resume,
# heal, unslow) repair, and do not count as the fault having happened.
DISRUPTIVE = frozenset(do for do, (kind, _) in STEP_FAULTS.items() if kind.disruptive)
ROLE_TARGETS = ("leader", "follower", "followers", "controller", "offsets-leader", "all")
HALVES = "halves"  # a partition's target: half the lab's nodes, drawn (halves-SEED), cut from the rest
# What an [expect] condition may name, and what each means (docs/development/scenarios.md).
METRICS: dict[str, str] = {
    "acked": "messages the producer saw acknowledged",
    "in_log": "messages in the final log",
    "acked_lost": "acknowledged, and not in the final log",
    "live_lost": "acknowledged by a leader that was no longer the leader, as judged live at the "
                 "end of the load (load/liveloss.py); the post-mortem's acked_lost, known early",
    "unacked_present": "never acknowledged, and in the final log anyway",
    "duplicates": "extra copies of messages in the final log",
    "reordered": "messages behind a later message of the same producer in the final log",
    "failed": "sends the producer was told failed",
    "unknown": "sends never reported (the generator died)",
    "indefinite": "sends with no definite answer (Jepsen's :info): failed with a timeout or a "
                  "lost connection (model/sends.py), or never reported",
    "indefinite_present": "of the indefinite sends, those in the final log (no anomaly)",
    "failed_present": "sends that failed with a definite error, and in the final log anyway",
    "offsets_rewritten": "acknowledged offsets that hold another record in the final log "
                         "(Jepsen's inconsistent offsets)",
    "consumed_during_fault": "records read mid-fault (by the consumer group, if [consumer] has one)",
    "no_leader_ms": "time without a leader, all no-leader windows added up",
    "unavailable_ms": "the longest single window without a successful acknowledgement (to the "
                      "load's end when they never came back)",
    "unavailable_total_ms": "all such windows added up",
    "slowed_left_isr_ms": "from a link slowed to its broker leaving the ISR (the first one)",
    "isr_min": "the fewest in-sync replicas any ISR change of the run left",
    "faults_applied": "disruptive steps the plan carried out (kill stop pause isolate* partition slow "
                      "power-off)",
    "lost_outside_power_cuts": "acked_lost that no power cut's dropped batches hold (by the "
                               "filesystem's own record, against every lost message in the "
                               "post-mortem's lost.parquet; None without a power cut)",
    "lost_blamed_on_target": "share (0.0-1.0) of acked_lost the post-mortem attributes to the "
                             "broker the first disruptive step hit",
    "refused": "sends the client refused because its buffer was full (_QUEUE_FULL)",
    "generator_crashes": "generators killed as planned ([load] crash_at_s): the client's fault",
    "consumer_crashes": "[group]: consumers killed as planned (crash_after, crash_at_s)",
    "client_lost": "sent, never answered, and not in the final log: lost inside the client "
                   "when the generator died",
    "never_processed": "[group]: records the group committed past without processing them",
    "committed_unprocessed": "[group]: of those, the ones a commit covered before processing "
                             "(crash, failure or abort after the commit)",
    "processed_twice": "[group]: records processed more than once",
    "redelivered": "[group]: records delivered again to the group (nonmonotonic polls)",
    "aborted_visible": "[group] with output: records of aborted transactions a "
                       "read_uncommitted consumer of the output sees",
    "output_duplicates": "[group] with output: extra copies in the output as read_committed "
                         "consumers see it",
    "elr_elections": "KRaft: leaders the controller's log says it chose from the eligible "
                     "leader replicas (Kafka 4.x, KIP-966)",
    "unclean_elections": "KRaft: leaders the controller's log calls UNCLEAN (outside the ISR "
                         "and the ELR)",
}
# What a [group] table may say (kinspect consume run's options, in the scenario files' words).
_GROUP_KEYS = {"commit": str, "auto_commit_ms": int, "consumers": int, "batch": int,
               "process_ms": float, "fail_rate": float, "crash_after": int, "crash_at_s": float,
               "restart": bool, "isolation": str, "output": str, "idle_stop_s": float}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le,
    ">": operator.gt, "<": operator.lt}
_NUMBER = r"\d+(?:\.\d+)?"
_CONDITION = re.compile(rf"^\s*(==|!=|>=|<=|>|<)\s*({_NUMBER})\s*$")
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*\.\.\s*({_NUMBER})\s*$")  # "0..2000", ends included


@dataclass(frozen=True)
class FaultStep:
    """One action of the fault plan; `at` is a share of the planned messages acknowledged,
    `after_s` is seconds after the previous step (or after the load starts); `at_s`, the
    nemesis's, anchors the step at seconds from the plan's start (after the previous step
    when that ran late)."""

    do: str
    target: str = "leader"
    at: float | None = None
    after_s: float | None = None
    at_s: float | None = None
    for_s: float | None = None  # then undo it (kill -> start, isolate -> heal, ...)
    remember: str | None = None  # name the nodes hit, for a later target "@name"
    shape: LinkShape | None = None  # slow: how bad the link gets

    def faults(self, nodes: list[str]) -> list[Fault]:
        """The lab's faults this step means for the nodes its target resolved to: one per
        node; an isolation cuts the first; heal acts on the whole lab once, and so does
        unslow unless it names its nodes (a node, a role, or @name)."""
        kind, scope = STEP_FAULTS[self.do]
        if kind is FaultKind.UNSLOW and self.target != "all":
            return [Fault(kind, node) for node in nodes]
        if kind is FaultKind.PARTITION:  # the target's nodes one group, the rest another
            return [Fault(kind, groups=(tuple(nodes),))]
        if not kind.needs_node:
            return [Fault(kind)]
        if kind in (FaultKind.POWER_OFF, FaultKind.POWER_ON):  # every one in the same instant
            return [Fault(kind, ",".join(nodes))]
        hit = nodes[:1] if kind is FaultKind.ISOLATE else nodes
        return [Fault(kind, node, scope, shape=self.shape) for node in hit]


@dataclass(frozen=True)
class Condition:
    """`metric op value`, or with op ".." the inclusive range value..upper. A metric that was
    never measured (None) holds nothing: an unmeasured run must not pass by default."""

    metric: str
    op: str
    value: int | float
    upper: int | float | None = None

    def holds(self, row: Mapping[str, Any]) -> bool:
        actual = row.get(self.metric)
        if actual is None:
            return False
        if self.upper is not None:
            return bool(self.value <= actual <= self.upper)
        return _COMPARE[self.op](actual, self.value)

    def __str__(self) -> str:
        if self.upper is not None:
            return f"{self.metric} in {self.value}..{self.upper}"
        return f"{self.metric} {self.op} {self.value}"


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    why: str
    source: str = ""
    preset: str = "demo"
    brokers: int = 3
    broker_config: dict[str, str] = field(default_factory=dict)
    topic: str = "test1"
    partitions: int = 1
    replication_factor: int = 3
    topic_config: dict[str, str] = field(default_factory=dict)
    load: dict[str, Any] = field(default_factory=dict)
    consumer_group: bool = False  # a consumer group reads along (offsets-rf1)
    group: dict[str, Any] | None = None  # [group]: consumers with a ledger read along
    steps: tuple[FaultStep, ...] = ()
    expect: tuple[Condition, ...] = ()
    needs: tuple[str, ...] = ()  # platform.NEEDS: skipped with a reason where it is lacking
    # [expect.kraft], [expect.kafka4]: conditions that replace the base one of the same metric
    # (or add one) on that platform: where today's Kafka really behaves otherwise (measured)
    expect_on: dict[str, tuple[Condition, ...]] = field(default_factory=dict)
    controllers: int | None = None  # KRaft: dedicated controllers (None: the lab's default, 1)
    features: dict[str, int] = field(default_factory=dict)  # 4.x feature levels, at format
    power: bool = False  # [lab] power: the brokers' disks can lose power (lab up --power)
    path: Path | None = None

    def conditions(self, platform: Platform | None = None) -> tuple[Condition, ...]:
        """What must hold on a platform: the base [expect], then [expect.kraft] in KRaft, then
        [expect.kafka4] on Kafka 4.x, each replacing a condition of the same metric."""
        chosen = {c.metric: c for c in self.expect}
        for scope in platform.scopes if platform else ():
            chosen.update({c.metric: c for c in self.expect_on.get(scope, ())})
        return tuple(chosen.values())

    def expectation_text(self, platform: Platform | None = None) -> str:
        return " and ".join(str(c) for c in self.conditions(platform)) or "-"

    def consume_settings(self, bootstrap: str, run_id: str = "") -> ConsumeSettings | None:
        """The [group] table as the consumer group's settings (None: no group)."""
        if self.group is None:
            return None
        values = {"idle_stop_s": 20.0, "idle_after_load": True, **self.group}
        return ConsumeSettings(topic=self.topic, bootstrap=bootstrap,
                               group=f"kinspect-{self.name}", run_id=run_id, **values)

    def load_settings(self, bootstrap: str) -> LoadSettings:
        """The [load] table as the load generator's settings."""
        load = dict(self.load)
        extra = {str(k): str(v) for k, v in load.pop("extra", {}).items()}
        return LoadSettings(topic=self.topic, bootstrap=bootstrap, extra=extra, **load)


_LOAD_KEYS = {"acks": str, "count": int, "rate": float, "producers": int, "size": int,
              "idempotent": bool, "retries": int, "delivery_timeout_ms": int,
              "max_in_flight": int, "linger_ms": int, "extra": dict, "crash_at_s": float,
              "buffer_full": str}


def _fail(path: Path, message: str) -> KinspectError:
    return KinspectError(f"{path.name}: {message}")


def _table(data: Mapping[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise _fail(path, f"[{key}] must be a table")
    return value


def _only(table: Mapping[str, Any], allowed: set[str], where: str, path: Path) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _fail(path, f"unknown key {unknown[0]!r} in {where} "
                          f"(allowed: {', '.join(sorted(allowed))})")


def _strings(table: Mapping[str, Any], where: str, path: Path) -> dict[str, str]:
    out = {}
    for key, value in table.items():
        if not isinstance(value, str | int | float):
            raise _fail(path, f"{where}.{key} must be a string or number")
        out[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _whole(table: Mapping[str, Any], key: str, default: int, low: int, high: int, where: str,
           path: Path) -> int:
    value = table.get(key, default)
    try:
        return int(number(value, f"{where} {key}", low, high, integer=True))
    except KinspectError as exc:
        raise _fail(path, str(exc)) from None


def _target(step: FaultStep, where: str, scenario: Scenario, named: set[str],
            path: Path) -> None:
    """The step's target must exist in this scenario's own lab, or be named by an earlier step."""
    target, brokers = step.target, scenario.brokers
    if target.startswith("@") and target[1:] not in named:
        raise _fail(path, f"{where}: target {target!r} names no earlier step's `as` "
                          f"({', '.join('@' + n for n in sorted(named)) or 'none yet'})")
    broker = broker_id_of(target)
    if broker is not None and not 1 <= broker <= brokers:
        raise _fail(path, f"{where}: target {target!r} is not in a lab of {brokers} brokers "
                          f"({broker_node(1)}..{broker_node(brokers)})")
    controller = controller_id_of(target)
    if controller is not None and not 1 <= controller - CONTROLLER_ID_BASE <= (
            scenario.controllers or 0):
        raise _fail(path, f"{where}: target {target!r} is not one of the scenario's dedicated "
                          f"controllers ([lab] controllers = {scenario.controllers or 0})")


def _step(raw: Any, index: int, path: Path) -> FaultStep:
    where = f"fault step {index + 1}"
    if not isinstance(raw, dict):
        raise _fail(path, f"{where} must be a table")
    _only(raw, {"do", "target", "at", "after_s", "for_s", "as", *_SHAPE_KEYS}, where, path)
    do = raw.get("do")
    if do not in STEP_WORDS:
        raise _fail(path, f"{where}: do must be one of {', '.join(STEP_WORDS)}, not {do!r}")
    target = _step_target(raw, do, where, path)
    at, after = _step_when(raw, where, path)
    _check_durations(raw, do, where, path)
    return FaultStep(do=do, target=target, at=at, after_s=after, for_s=raw.get("for_s"),
                     remember=_step_name(raw, where, path), shape=_shape(raw, do, where, path))


def _names_a_node(target: str) -> bool:
    """A broker, a dedicated controller or the ZooKeeper node."""
    if target == ZOOKEEPER_NODE:
        return True
    return broker_id_of(target) is not None or controller_id_of(target) is not None


def _step_target(raw: Mapping[str, Any], do: str, where: str, path: Path) -> str:
    """What the step acts on: by default everything for a repair, else the leader."""
    default = "all" if do in ("heal", "unslow") else "leader"
    target = str(raw.get("target", default))
    if target in ROLE_TARGETS or target.startswith("@") or _names_a_node(target):
        return target
    if do == FaultKind.PARTITION and halves_seed(target) is not None:
        return target
    raise _fail(path, f"{where}: target {target!r} is not a role ({', '.join(ROLE_TARGETS)}),"
                      " a node (kafka2, zk1, ctl2), a remembered name (@old_leader) or, for a "
                      f"partition, {HALVES}-N (half the nodes, drawn by seed N)")


def halves_seed(target: str) -> int | None:
    """N of `halves-N` (None: not such a target)."""
    word, _, seed = target.partition("-")
    if word != HALVES or not seed.isdigit():
        return None
    return int(seed)


def _step_when(raw: Mapping[str, Any], where: str,
               path: Path) -> tuple[float | None, float | None]:
    """When the step runs: exactly one of `at` (a share of the acknowledged messages) and
    `after_s` (seconds after the previous step)."""
    at, after = raw.get("at"), raw.get("after_s")
    if (at is None) == (after is None):
        raise _fail(path, f"{where}: give exactly one of at (0..1 of the messages acknowledged) "
                          "or after_s (seconds after the previous step)")
    if at is not None and not (isinstance(at, int | float) and 0 <= at <= 1):
        raise _fail(path, f"{where}: at must be between 0 and 1")
    return at, after


def _check_durations(raw: Mapping[str, Any], do: str, where: str, path: Path) -> None:
    """after_s and for_s are seconds; only a step that can be undone lasts for_s."""
    for name in ("after_s", "for_s"):
        value = raw.get(name)
        if value is not None and not (isinstance(value, int | float) and value >= 0):
            raise _fail(path, f"{where}: {name} must be a non-negative number of seconds")
    if raw.get("for_s") is not None and do not in DISRUPTIVE:
        raise _fail(path, f"{where}: {do} cannot be undone, so it takes no for_s")


def _step_name(raw: Mapping[str, Any], where: str, path: Path) -> str | None:
    """The step's `as`: a name later steps' targets can say as @name."""
    remember = raw.get("as")
    if remember is None:
        return None
    if isinstance(remember, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", remember):
        return remember
    raise _fail(path, f"{where}: as must be a name like old_leader, not {remember!r}")


_SHAPE_KEYS = ("delay_ms", "jitter_ms", "rate_kbit", "loss_pct", "direction")


def _shape(raw: Mapping[str, Any], do: str, where: str, path: Path) -> LinkShape | None:
    """A slow step's link shape (`lab slow`'s options in the scenario files' words)."""
    given = [key for key in _SHAPE_KEYS if key in raw]
    if do != "slow":
        if given:
            raise _fail(path, f"{where}: {given[0]} shapes a slow link; only do = \"slow\" "
                              "takes it")
        return None
    loss = raw.get("loss_pct", 0)
    if isinstance(loss, bool) or not isinstance(loss, int | float):
        raise _fail(path, f"{where}: loss_pct must be a number (a percentage)")
    direction = raw.get("direction", "both")
    if direction not in tuple(Direction):
        raise _fail(path, f"{where}: direction must be in, out or both, not {direction!r}")
    shape = LinkShape(delay_ms=_whole(raw, "delay_ms", 0, 0, 60_000, where, path),
                      jitter_ms=_whole(raw, "jitter_ms", 0, 0, 60_000, where, path),
                      rate_kbit=_whole(raw, "rate_kbit", 0, 0, 10_000_000, where, path),
                      loss_pct=float(loss), direction=Direction(direction))
    try:
        shape.check()
    except KinspectError as exc:
        words = str(exc).replace("--delay", "delay_ms").replace("--rate", "rate_kbit")
        words = words.replace("--loss", "loss_pct").replace("--jitter", "jitter_ms")
        raise _fail(path, f"{where}: {words}") from None
    return shape


def _number(text: str) -> int | float:
    return float(text) if "." in text else int(text)


def parse_condition(metric: str, text: Any, path: Path) -> Condition:
    """One [expect] entry: a comparison ("> 0", ">= 0.99") or an inclusive range ("0..2000")."""
    if metric not in METRICS:
        raise _fail(path, f"unknown metric {metric!r} in [expect] (known: {', '.join(METRICS)})")
    if match := _CONDITION.match(str(text)):
        return Condition(metric, match.group(1), _number(match.group(2)))
    if match := _RANGE.match(str(text)):
        low, high = _number(match.group(1)), _number(match.group(2))
        if low > high:
            raise _fail(path, f"[expect] {metric} = {text!r}: the range is empty "
                              f"({low} is above {high}); write low..high")
        return Condition(metric, "..", low, high)
    raise _fail(path, f"[expect] {metric} = {text!r}: write e.g. \"== 0\", \"> 0\", "
                      "\">= 0.99\" or \"0..2000\" (a range, both ends included)")


def parse(data: Mapping[str, Any], path: Path) -> Scenario:
    """A validated Scenario from a parsed TOML document."""
    _only(data, {"name", "title", "why", "source", "needs", "lab", "topic", "load", "consumer",
                 "group", "fault", "expect"}, "the top level", path)
    _check_required(data, path)
    lab, topic, load = _table(data, "lab", path), _table(data, "topic", path), _table(data, "load", path)
    _only(lab, {"preset", "brokers", "broker_config", "controllers", "features", "power"},
          "[lab]", path)
    _only(topic, {"name", "partitions", "replication_factor", "config"}, "[topic]", path)
    _only(load, set(_LOAD_KEYS), "[load]", path)
    _typed(load, _LOAD_KEYS, "[load]", path)
    preset = str(lab.get("preset", "demo"))
    if preset not in presets.PRESETS:
        raise _fail(path, f"[lab] preset must be one of {', '.join(presets.PRESETS)}")
    brokers = _whole(lab, "brokers", 3, 1, 5, "[lab]", path)
    name, partitions, replication = _topic(topic, brokers, path)
    steps = data.get("fault", [])
    if not isinstance(steps, list):
        raise _fail(path, "fault must be an array of tables ([[fault]])")
    expect = _table(data, "expect", path)
    needs = _needs(data, path)
    if not set(expect) - set(EXPECT_SCOPES):
        raise _fail(path, "[expect] names no condition: a scenario must say what should happen")
    scenario = Scenario(
        name=data["name"], title=data["title"].strip(), why=" ".join(data["why"].split()),
        source=str(data.get("source", "")), preset=preset, brokers=brokers,
        broker_config=_strings(_table(lab, "broker_config", path), "lab.broker_config", path),
        topic=name, partitions=partitions, replication_factor=replication,
        topic_config=_strings(_table(topic, "config", path), "topic.config", path),
        load=dict(load), consumer_group=_probe_group(data, path),
        group=_group(data, path),
        steps=tuple(_step(raw, i, path) for i, raw in enumerate(steps)),
        expect=tuple(parse_condition(k, v, path) for k, v in expect.items()
                     if k not in EXPECT_SCOPES),
        expect_on={scope: tuple(parse_condition(k, v, path)
                                for k, v in _table(expect, scope, path).items())
                   for scope in EXPECT_SCOPES if scope in expect},
        needs=tuple(needs), controllers=_controllers(lab, needs, path),
        features=_features(lab, needs, path), power=_power(lab, steps, path), path=path)
    _check_whole(scenario, path)
    return scenario


def _topic(topic: Mapping[str, Any], brokers: int, path: Path) -> tuple[Any, int, int]:
    """[topic]: its name (a valid topic name), partitions and replication factor (no more
    than the lab's brokers)."""
    name = topic.get("name", "test1")
    shown = name
    if not isinstance(name, str):
        shown = repr(name)
    try:
        topic_name(shown, "[topic] name")
    except KinspectError as exc:
        raise _fail(path, str(exc)) from None
    partitions = _whole(topic, "partitions", 1, 1, 1000, "[topic]", path)
    replication = _whole(topic, "replication_factor", 3, 1, 5, "[topic]", path)
    if replication > brokers:
        raise _fail(path, f"[topic] replication_factor {replication} is more than the lab's "
                          f"{brokers} brokers")
    return name, partitions, replication


def _needs(data: Mapping[str, Any], path: Path) -> list[str]:
    """needs = [...]: what the scenario's platform must have (platform.NEEDS)."""
    needs = data.get("needs", [])
    if not isinstance(needs, list) or any(n not in NEEDS for n in needs):
        raise _fail(path, f"needs may only list {', '.join(map(repr, NEEDS))}")
    return needs


def _controllers(lab: Mapping[str, Any], needs: list[str], path: Path) -> int | None:
    """[lab] controllers: a KRaft quorum of its own size (a scenario that needs KRaft)."""
    if "controllers" not in lab:
        return None
    if "kraft" not in needs and "elr" not in needs:
        raise _fail(path, "[lab] controllers is for KRaft: add needs = [\"kraft\"]")
    return _whole(lab, "controllers", 1, 0, 5, "[lab]", path)


def _power(lab: Mapping[str, Any], steps: list[Any], path: Path) -> bool:
    """[lab] power = true: what a power-off step needs (and nothing else asks for)."""
    power = lab.get("power", False)
    if not isinstance(power, bool):
        raise _fail(path, "[lab] power must be true or false")
    cuts = any(isinstance(s, dict) and s.get("do") == FaultKind.POWER_OFF for s in steps)
    if cuts and not power:
        raise _fail(path, "a power-off step needs [lab] power = true (the brokers' disks on "
                          "kinspect's filesystem)")
    return power


def _features(lab: Mapping[str, Any], needs: list[str], path: Path) -> dict[str, int]:
    """[lab] features: Kafka 4.x feature levels the lab is formatted with
    (eligible.leader.replicas.version = 0 turns ELR off)."""
    table = _table(lab, "features", path)
    if table and "elr" not in needs:
        raise _fail(path, "[lab] features need Kafka 4.x: add needs = [\"elr\"]")
    out = {}
    for name in table:
        if (problem := dist.feature_problem(name)) is not None:
            raise _fail(path, f"[lab] features: {problem}")
        out[name] = _whole(table, name, 0, 0, 32767, "[lab] features", path)
    return out


def _check_required(data: Mapping[str, Any], path: Path) -> None:
    """The keys every scenario needs (name, title, why, [load], [expect]), before the rest."""
    for key in ("name", "title", "why"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise _fail(path, f"{key} is required (a string)")
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", data["name"]):
        raise _fail(path, f"name {data['name']!r} must be lower-case letters, digits, '.', '_' "
                          "and '-' (it names the run dir)")
    for key in ("load", "expect"):
        if key not in data:
            raise _fail(path, f"[{key}] is required ("
                        + ("the load to run, e.g. acks and count)" if key == "load" else
                           "what should happen, e.g. acked_lost = \"== 0\")"))
    if not isinstance(data.get("source", ""), str):
        raise _fail(path, "source must be a string")


def _check_whole(scenario: Scenario, path: Path) -> None:
    """What needs the whole scenario: targets against its own lab and earlier `as` names, the
    load generator's and the consumer group's own rules, all before any lab is touched."""
    named: set[str] = set()
    for index, step in enumerate(scenario.steps):
        _target(step, f"fault step {index + 1}", scenario, named, path)
        if step.remember:
            named.add(step.remember)
    try:  # acks, idempotence needs acks=all, ...
        scenario.load_settings("").validate()
    except KinspectError as exc:
        raise _fail(path, f"[load]: {exc}") from None
    try:
        group = scenario.consume_settings("127.0.0.1:9092")
        if group is not None:
            group.validate()
    except KinspectError as exc:
        raise _fail(path, f"[group]: {exc}") from None


EXPECT_SCOPES = ("kraft", "kafka4")  # [expect.kraft], [expect.kafka4]


_KIND_WORDS: dict[type, str] = {int: "a whole number", float: "a number", str: "a string",
                                bool: "true or false", dict: "a table"}


def _probe_group(data: Mapping[str, Any], path: Path) -> bool:
    """[consumer] group = true: a group joins before the fault and is probed mid-fault."""
    consumer = _table(data, "consumer", path)
    _only(consumer, {"group"}, "[consumer]", path)
    if not isinstance(consumer.get("group", False), bool):
        raise _fail(path, "[consumer] group must be true or false")
    return bool(consumer.get("group", False))


def _group(data: Mapping[str, Any], path: Path) -> dict[str, Any] | None:
    """The [group] table, of the right keys and types (ranges: ConsumeSettings.validate)."""
    if "group" not in data:
        return None
    group = _table(data, "group", path)
    _only(group, set(_GROUP_KEYS), "[group]", path)
    _typed(group, _GROUP_KEYS, "[group]", path)
    return dict(group)


def _typed(table: Mapping[str, Any], kinds: Mapping[str, type], where: str, path: Path) -> None:
    """Each key of the table of its kind (a whole number is a number too; true is not one)."""
    for key, kind in kinds.items():
        if key not in table:
            continue
        value = table[key]
        number_ok = kind is float and isinstance(value, int) and not isinstance(value, bool)
        if not (isinstance(value, kind) and (kind is bool or not isinstance(value, bool))) \
                and not number_ok:
            words = _KIND_WORDS.get(kind, f"a {kind.__name__}")
            raise _fail(path, f"{where} {key} must be {words}")


def read(path: Path) -> Scenario:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise KinspectError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise KinspectError(f"{path.name}: not valid TOML: {exc}") from None
    return parse(data, path)
