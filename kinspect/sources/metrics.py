"""The model as Prometheus metrics (`kinspect exporter`): kinspect's verdicts and counts,
scrapeable, so its ISR health reaches the alerting people already run.

Each scrape reads the newest snapshot the observer built (nothing is asked of the cluster on a
scrape) and the counters of its events since the exporter started. Names follow Prometheus'
conventions: `kinspect_` prefix, base units (bytes, seconds), `_total` for counters. A flag the
cluster did not tell (a refused DescribeConfigs) is NaN, never 0, and the unmade checks are
counted in `kinspect_unchecked`.

Every metric served is declared once, in METRICS (name, type, labels, help): the collector
builds each family from its declaration, and the reference page of metrics is generated from
the same table (docs.generate)."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Literal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kinspect.model import ClusterSnapshot, Event, EventKind, Unknown, assess
from kinspect.model.assessment import HealthReport, Verdict
from kinspect.model.health_checks import HEALTH_CHECKS
from kinspect.model.partition_schema import GaugeValue, gauges
from kinspect.model.severity import Severity

MetricType = Literal["gauge", "counter"]


@dataclass(frozen=True)
class MetricDef:
    """One metric the exporter serves: its family's name (a counter's samples add `_total`),
    its type, its help and its labels."""

    name: str
    type: MetricType
    help: str
    labels: tuple[str, ...] = ()

    @property
    def served(self) -> str:
        """The sample's name in a scrape."""
        if self.type == "counter":
            return f"{self.name}_total"
        return self.name

    def family(self, value: float | None = None) -> GaugeMetricFamily | CounterMetricFamily:
        """An empty family to add samples to, or (no labels) one holding `value`."""
        labels = None
        if self.labels:
            labels = list(self.labels)
        if self.type == "counter":
            return CounterMetricFamily(self.name, self.help, value=value, labels=labels)
        return GaugeMetricFamily(self.name, self.help, value=value, labels=labels)


def _counter(name: str, words: str) -> MetricDef:
    return MetricDef(f"kinspect_{name}", "counter", f"{words} since the exporter started")


UP = MetricDef("kinspect_up", "gauge", "1 when the brokers answered kinspect's last poll")
COUNTED: dict[EventKind, MetricDef] = {
    EventKind.ISR_SHRANK: _counter("isr_shrinks", "ISR shrinks seen"),
    EventKind.ISR_EXPANDED: _counter("isr_expands", "ISR expansions seen"),
    EventKind.LEADER_CHANGED: _counter("leader_changes", "partition leader changes seen"),
    EventKind.CONTROLLER_CHANGED: _counter("controller_changes", "controller changes seen"),
    EventKind.BROKER_GONE: _counter("brokers_gone", "brokers leaving the cluster seen")}
HEALTH = MetricDef("kinspect_health", "gauge", "1 for the verdict kinspect health gives now",
                   ("verdict",))
EXIT_CODE = MetricDef("kinspect_health_exit_code", "gauge", "kinspect health's exit code now")
UNCHECKED = MetricDef("kinspect_unchecked", "gauge", "reasons a check health's verdict rests "
                      "on could not be made (a refused or unsupported request)", ("check",))
FINDINGS = MetricDef("kinspect_findings", "gauge", "cluster findings now, by the check that "
                     "makes them, their kind and severity", ("check", "kind", "severity"))
CONTROLLER_ID = MetricDef("kinspect_controller_id", "gauge",
                          "the active controller's id (NaN: none)")
LEADS = MetricDef("kinspect_broker_leader_partitions", "gauge", "partitions the broker leads",
                  ("broker",))
OUT_OF_ISR = MetricDef("kinspect_broker_out_of_isr_partitions", "gauge",
                       "ISRs the broker is missing from", ("broker",))
LOG_DIR_OFFLINE = MetricDef("kinspect_broker_log_dir_offline", "gauge", "1 when the log dir is "
                            "offline (a failed or full disk)", ("broker", "dir"))
LOG_DIR_BYTES = MetricDef("kinspect_broker_log_dir_bytes", "gauge",
                          "bytes the log dir's replicas hold", ("broker", "dir"))
GROUP_LAG = MetricDef("kinspect_consumer_group_lag", "gauge",
                      "records behind the log ends (NaN: not told)", ("group",))
GROUP_LAG_SECONDS = MetricDef("kinspect_consumer_group_lag_seconds", "gauge",
                              "age of the oldest unconsumed record (NaN: not read)", ("group",))


def partition_metrics() -> tuple[MetricDef, ...]:
    """A gauge per partition fact the schema gives one (partition_schema.Gauge)."""
    defs = []
    for fact in gauges():
        gauge = fact.gauge
        assert gauge is not None
        defs.append(MetricDef(f"kinspect_partition_{gauge.name}", "gauge", gauge.help,
                              ("topic", "partition")))
    return tuple(defs)


# Every metric served, in a scrape's order: up and the counters always, the rest once a
# snapshot has been made.
METRICS: tuple[MetricDef, ...] = (
    UP, *COUNTED.values(), HEALTH, EXIT_CODE, UNCHECKED, FINDINGS, CONTROLLER_ID,
    *partition_metrics(), LEADS, OUT_OF_ISR, LOG_DIR_OFFLINE, LOG_DIR_BYTES, GROUP_LAG,
    GROUP_LAG_SECONDS)


def _number(value: Any) -> float:
    """A flag or a count as a sample: Unknown is NaN (not told), never 0."""
    if isinstance(value, Unknown) or value is None:
        return math.nan
    return float(value)


class SnapshotMetrics(Collector):
    """Holds the newest snapshot and the event counts; renders them on each scrape."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot: ClusterSnapshot | None = None
        self._counts: Counter[EventKind] = Counter()

    def observe(self, snapshot: ClusterSnapshot, events: Iterable[Event]) -> None:
        """The observer's callback: the newest snapshot and what changed."""
        with self._lock:
            self._snapshot = snapshot
            self._counts.update(e.kind for e in events)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snapshot, counts = self._snapshot, Counter(self._counts)
        yield UP.family(float(snapshot is not None and snapshot.admin_state == "ok"))
        for kind, counter in COUNTED.items():
            yield counter.family(counts[kind])
        if snapshot is None:
            return
        yield from _health(snapshot)
        yield from _partitions(snapshot)
        yield from _brokers(snapshot)
        yield from _groups(snapshot)


def _health(snapshot: ClusterSnapshot) -> Iterator[Metric]:
    report = assess(snapshot)
    verdict = HEALTH.family()
    for value in Verdict:
        verdict.add_metric([str(value)], float(report.verdict is value))
    yield verdict
    yield EXIT_CODE.family(report.exit_code)
    yield from _checks(snapshot, report)
    controller = snapshot.controller.id
    controller_id = math.nan
    if controller is not None:
        controller_id = controller
    yield CONTROLLER_ID.family(controller_id)


def _checks(snapshot: ClusterSnapshot, report: HealthReport) -> Iterator[Metric]:
    """Every check of the registry (health_checks.py): why it could not be made, and its
    findings by kind. 0 is said for each, so an alert tells "none" from "not exported"."""
    unchecked = UNCHECKED.family()
    # an unmade check said at info (lag with no limit, free space before Kafka 3.3) is no
    # verdict's: counted, it would page for what health does not judge
    unmade = Counter(u.check for u in report.unchecked if u.severity is not Severity.INFO)
    for check in HEALTH_CHECKS:
        unchecked.add_metric([check.key], unmade[check.key])
    yield unchecked
    findings = FINDINGS.family()
    found = Counter(f.kind for f in snapshot.findings)
    for check in HEALTH_CHECKS:
        for kind in check.kinds:
            findings.add_metric([check.key, kind.key, str(kind.severity)], found[kind.key])
    yield findings


def _count(value: object) -> float:
    assert isinstance(value, tuple)
    return float(len(value))


def _seconds(value: object) -> float:
    return _number(value) / 1000


# A partition fact as its gauge's sample: the value (NaN: not told), its length, ms as seconds;
# chosen once per gauge, not per partition (100,000 partitions, a dozen gauges).
SAMPLES: dict[GaugeValue, Callable[[object], float]] = {
    "value": _number, "count": _count, "seconds": _seconds}


def _partitions(snapshot: ClusterSnapshot) -> Iterator[Metric]:
    """A gauge per partition fact the schema gives one (partition_schema.Gauge)."""
    families = []
    for fact, metric in zip(gauges(), partition_metrics(), strict=True):
        gauge = fact.gauge
        assert gauge is not None
        families.append((attrgetter(fact.name), SAMPLES[gauge.value], metric.family()))
    for p in snapshot.partitions():
        key = [p.topic, str(p.partition)]
        for read, sample, family in families:
            family.add_metric(key, sample(read(p)))
    yield from (family for _, _, family in families)


def _brokers(snapshot: ClusterSnapshot) -> Iterator[Metric]:
    leads, missing = LEADS.family(), OUT_OF_ISR.family()
    offline, size = LOG_DIR_OFFLINE.family(), LOG_DIR_BYTES.family()
    parts = snapshot.partitions()
    led = Counter(p.leader for p in parts)
    out = Counter(r for p in parts for r in p.missing)
    for b in snapshot.brokers:
        leads.add_metric([str(b.id)], led[b.id])
        missing.add_metric([str(b.id)], out[b.id])
        for d in b.log_dirs if isinstance(b.log_dirs, tuple) else ():
            offline.add_metric([str(b.id), d.path], float(d.offline))
            size.add_metric([str(b.id), d.path], d.size)
    yield from (leads, missing, offline, size)


def _groups(snapshot: ClusterSnapshot) -> Iterator[Metric]:
    lag, lag_s = GROUP_LAG.family(), GROUP_LAG_SECONDS.family()
    for g in snapshot.groups:
        lag.add_metric([g.group_id], _number(g.lag))
        ms = g.lag_ms(snapshot.taken_at)
        lag_s.add_metric([g.group_id], math.nan if ms is None else ms / 1000)
    yield from (lag, lag_s)
