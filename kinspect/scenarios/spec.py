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
from kinspect.lab import presets
from kinspect.load.runsettings import LoadSettings

ACTIONS = ("kill", "stop", "start", "pause", "resume", "isolate", "isolate-zk",
           "isolate-brokers", "heal", "slow", "unslow")
UNDO = {"kill": "start", "stop": "start", "pause": "resume", "isolate": "heal",
        "isolate-zk": "heal", "isolate-brokers": "heal", "slow": "unslow"}
# The actions that break something are exactly those with an undo; the rest (start, resume,
# heal, unslow) repair, and do not count as the fault having happened.
DISRUPTIVE = frozenset(UNDO)
ROLE_TARGETS = ("leader", "follower", "followers", "controller", "offsets-leader", "all")
# What an [expect] condition may name, and what each means (README, "Writing a scenario").
METRICS: dict[str, str] = {
    "acked": "messages the producer saw acknowledged",
    "in_log": "messages in the final log",
    "acked_lost": "acknowledged, and not in the final log",
    "unacked_present": "never acknowledged, and in the final log anyway",
    "duplicates": "extra copies of messages in the final log",
    "failed": "sends the producer was told failed",
    "unknown": "sends never reported (the generator died)",
    "consumed_during_fault": "records read mid-fault (by the consumer group, if [consumer] has one)",
    "no_leader_ms": "time without a leader, all no-leader windows added up",
    "unavailable_ms": "the longest single window without a successful acknowledgement",
    "unavailable_total_ms": "all such windows added up",
    "faults_applied": "disruptive steps the plan carried out (kill stop pause isolate* slow)",
    "lost_blamed_on_target": "share (0.0-1.0) of acked_lost the post-mortem attributes to the "
                             "broker the first disruptive step hit",
}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le,
    ">": operator.gt, "<": operator.lt}
_NUMBER = r"\d+(?:\.\d+)?"
_CONDITION = re.compile(rf"^\s*(==|!=|>=|<=|>|<)\s*({_NUMBER})\s*$")
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*\.\.\s*({_NUMBER})\s*$")  # "0..2000", ends included


@dataclass(frozen=True)
class FaultStep:
    """One action of the fault plan; `at` is a share of the planned messages acknowledged,
    `after_s` is seconds after the previous step (or after the load starts)."""

    do: str
    target: str = "leader"
    at: float | None = None
    after_s: float | None = None
    for_s: float | None = None  # then undo it (kill -> start, isolate -> heal, ...)
    remember: str | None = None  # name the nodes hit, for a later target "@name"
    delay_ms: int = 0  # slow: netem delay and jitter
    jitter_ms: int = 0


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
    steps: tuple[FaultStep, ...] = ()
    expect: tuple[Condition, ...] = ()
    needs: tuple[str, ...] = ()  # "netem": skipped with a reason where the kernel lacks it
    path: Path | None = None

    def expectation_text(self) -> str:
        return " and ".join(str(c) for c in self.expect) or "-"

    def load_settings(self, bootstrap: str) -> LoadSettings:
        """The [load] table as the load generator's settings."""
        load = dict(self.load)
        extra = {str(k): str(v) for k, v in load.pop("extra", {}).items()}
        return LoadSettings(topic=self.topic, bootstrap=bootstrap, extra=extra, **load)


_LOAD_KEYS = {"acks": str, "count": int, "rate": float, "producers": int, "size": int,
              "idempotent": bool, "retries": int, "delivery_timeout_ms": int,
              "max_in_flight": int, "linger_ms": int, "extra": dict}


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


def _step(raw: Any, index: int, path: Path) -> FaultStep:
    where = f"fault step {index + 1}"
    if not isinstance(raw, dict):
        raise _fail(path, f"{where} must be a table")
    _only(raw, {"do", "target", "at", "after_s", "for_s", "as", "delay_ms", "jitter_ms"},
          where, path)
    do = raw.get("do")
    if do not in ACTIONS:
        raise _fail(path, f"{where}: do must be one of {', '.join(ACTIONS)}, not {do!r}")
    target = str(raw.get("target", "all" if do == "heal" else "leader"))
    if not (target in ROLE_TARGETS or target.startswith("@")
            or re.fullmatch(r"(kafka\d+|zk1)", target)):
        raise _fail(path, f"{where}: target {target!r} is not a role ({', '.join(ROLE_TARGETS)}),"
                          " a node (kafka2, zk1) or a remembered name (@old_leader)")
    at, after = raw.get("at"), raw.get("after_s")
    if (at is None) == (after is None):
        raise _fail(path, f"{where}: give exactly one of at (0..1 of the messages acknowledged) "
                          "or after_s (seconds after the previous step)")
    if at is not None and not (isinstance(at, int | float) and 0 <= at <= 1):
        raise _fail(path, f"{where}: at must be between 0 and 1")
    for name in ("after_s", "for_s"):
        value = raw.get(name)
        if value is not None and not (isinstance(value, int | float) and value >= 0):
            raise _fail(path, f"{where}: {name} must be a non-negative number of seconds")
    if raw.get("for_s") is not None and do not in UNDO:
        raise _fail(path, f"{where}: {do} cannot be undone, so it takes no for_s")
    return FaultStep(do=do, target=target, at=at, after_s=after, for_s=raw.get("for_s"),
                     remember=raw.get("as"), delay_ms=int(raw.get("delay_ms", 0)),
                     jitter_ms=int(raw.get("jitter_ms", 0)))


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
                 "fault", "expect"}, "the top level", path)
    for key in ("name", "title", "why"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise _fail(path, f"{key} is required (a string)")
    lab, topic, load = _table(data, "lab", path), _table(data, "topic", path), _table(data, "load", path)
    _only(lab, {"preset", "brokers", "broker_config"}, "[lab]", path)
    _only(topic, {"name", "partitions", "replication_factor", "config"}, "[topic]", path)
    _only(load, set(_LOAD_KEYS), "[load]", path)
    for key, kind in _LOAD_KEYS.items():
        if key in load and not isinstance(load[key], kind) and not (kind is float
                                                                 and isinstance(load[key], int)):
            raise _fail(path, f"[load] {key} must be a {kind.__name__}")
    preset = str(lab.get("preset", "demo"))
    if preset not in presets.PRESETS:
        raise _fail(path, f"[lab] preset must be one of {', '.join(presets.PRESETS)}")
    brokers = int(lab.get("brokers", 3))
    if not 1 <= brokers <= 5:
        raise _fail(path, "[lab] brokers must be between 1 and 5")
    steps = data.get("fault", [])
    if not isinstance(steps, list):
        raise _fail(path, "fault must be an array of tables ([[fault]])")
    expect = _table(data, "expect", path)
    needs = data.get("needs", [])
    if not isinstance(needs, list) or any(n != "netem" for n in needs):
        raise _fail(path, "needs may only list \"netem\"")
    consumer = _table(data, "consumer", path)
    _only(consumer, {"group"}, "[consumer]", path)
    scenario = Scenario(
        name=data["name"], title=data["title"].strip(), why=" ".join(data["why"].split()),
        source=str(data.get("source", "")), preset=preset, brokers=brokers,
        broker_config=_strings(_table(lab, "broker_config", path), "lab.broker_config", path),
        topic=str(topic.get("name", "test1")), partitions=int(topic.get("partitions", 1)),
        replication_factor=int(topic.get("replication_factor", 3)),
        topic_config=_strings(_table(topic, "config", path), "topic.config", path),
        load=dict(load), consumer_group=bool(consumer.get("group", False)),
        steps=tuple(_step(raw, i, path) for i, raw in enumerate(steps)),
        expect=tuple(parse_condition(k, v, path) for k, v in expect.items()),
        needs=tuple(needs), path=path)
    try:  # the load generator's own rules (acks, idempotence needs acks=all, ...), before any lab
        scenario.load_settings("").validate()
    except KinspectError as exc:
        raise _fail(path, f"[load]: {exc}") from None
    return scenario


def read(path: Path) -> Scenario:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise KinspectError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise KinspectError(f"{path.name}: not valid TOML: {exc}") from None
    return parse(data, path)
