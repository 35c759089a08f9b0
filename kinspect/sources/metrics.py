"""The model as Prometheus metrics (`kinspect exporter`): kinspect's verdicts and counts,
scrapeable, so its ISR health reaches the alerting people already run.

Each scrape reads the newest snapshot the observer built (nothing is asked of the cluster on a
scrape) and the counters of its events since the exporter started. Names follow Prometheus'
conventions: `kinspect_` prefix, base units (bytes, seconds), `_total` for counters. A flag the
cluster did not tell (a refused DescribeConfigs) is NaN, never 0, and the unmade checks are
counted in `kinspect_unchecked`."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kinspect.model import ClusterSnapshot, Event, EventKind, Unknown, assess
from kinspect.model.assessment import HealthReport, Verdict
from kinspect.model.health_checks import HEALTH_CHECKS
from kinspect.model.partition_schema import GaugeValue, gauges
from kinspect.model.severity import Severity

COUNTED = {EventKind.ISR_SHRANK: ("isr_shrinks", "ISR shrinks seen"),
           EventKind.ISR_EXPANDED: ("isr_expands", "ISR expansions seen"),
           EventKind.LEADER_CHANGED: ("leader_changes", "partition leader changes seen"),
           EventKind.CONTROLLER_CHANGED: ("controller_changes", "controller changes seen"),
           EventKind.BROKER_GONE: ("brokers_gone", "brokers leaving the cluster seen")}


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
        yield GaugeMetricFamily("kinspect_up", "1 when the brokers answered kinspect's last poll",
                                value=float(snapshot is not None and snapshot.admin_state == "ok"))
        for kind, (name, words) in COUNTED.items():
            yield CounterMetricFamily(f"kinspect_{name}", f"{words} since the exporter started",
                                      value=counts[kind])
        if snapshot is None:
            return
        yield from _health(snapshot)
        yield from _partitions(snapshot)
        yield from _brokers(snapshot)
        yield from _groups(snapshot)


def _health(snapshot: ClusterSnapshot) -> Iterator[Metric]:
    report = assess(snapshot)
    verdict = GaugeMetricFamily("kinspect_health", "1 for the verdict kinspect health gives now",
                                labels=["verdict"])
    for value in Verdict:
        verdict.add_metric([str(value)], float(report.verdict is value))
    yield verdict
    yield GaugeMetricFamily("kinspect_health_exit_code", "kinspect health's exit code now",
                            value=report.exit_code)
    yield from _checks(snapshot, report)
    controller = snapshot.controller.id
    yield GaugeMetricFamily("kinspect_controller_id", "the active controller's id (NaN: none)",
                            value=math.nan if controller is None else controller)


def _checks(snapshot: ClusterSnapshot, report: HealthReport) -> Iterator[Metric]:
    """Every check of the registry (health_checks.py): why it could not be made, and its
    findings by kind. 0 is said for each, so an alert tells "none" from "not exported"."""
    unchecked = GaugeMetricFamily("kinspect_unchecked", "reasons a check health's verdict "
                                  "rests on could not be made (a refused or unsupported "
                                  "request)", labels=["check"])
    # an unmade check said at info (lag with no limit, free space before Kafka 3.3) is no
    # verdict's: counted, it would page for what health does not judge
    unmade = Counter(u.check for u in report.unchecked if u.severity is not Severity.INFO)
    for check in HEALTH_CHECKS:
        unchecked.add_metric([check.key], unmade[check.key])
    yield unchecked
    findings = GaugeMetricFamily("kinspect_findings", "cluster findings now, by the check that "
                                 "makes them, their kind and severity",
                                 labels=["check", "kind", "severity"])
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
    labels = ["topic", "partition"]
    families = []
    for fact in gauges():
        gauge = fact.gauge
        assert gauge is not None
        family = GaugeMetricFamily(f"kinspect_partition_{gauge.name}", gauge.help,
                                   labels=labels)
        families.append((attrgetter(fact.name), SAMPLES[gauge.value], family))
    for p in snapshot.partitions():
        key = [p.topic, str(p.partition)]
        for read, sample, family in families:
            family.add_metric(key, sample(read(p)))
    yield from (family for _, _, family in families)


def _brokers(snapshot: ClusterSnapshot) -> Iterator[Metric]:
    leads = GaugeMetricFamily("kinspect_broker_leader_partitions", "partitions the broker leads",
                              labels=["broker"])
    missing = GaugeMetricFamily("kinspect_broker_out_of_isr_partitions", "ISRs the broker is "
                                "missing from", labels=["broker"])
    offline = GaugeMetricFamily("kinspect_broker_log_dir_offline", "1 when the log dir is "
                                "offline (a failed or full disk)", labels=["broker", "dir"])
    size = GaugeMetricFamily("kinspect_broker_log_dir_bytes", "bytes the log dir's replicas "
                             "hold", labels=["broker", "dir"])
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
    lag = GaugeMetricFamily("kinspect_consumer_group_lag", "records behind the log ends (NaN: "
                            "not told)", labels=["group"])
    lag_s = GaugeMetricFamily("kinspect_consumer_group_lag_seconds", "age of the oldest "
                              "unconsumed record (NaN: not read)", labels=["group"])
    for g in snapshot.groups:
        lag.add_metric([g.group_id], _number(g.lag))
        ms = g.lag_ms(snapshot.taken_at)
        lag_s.add_metric([g.group_id], math.nan if ms is None else ms / 1000)
    yield from (lag, lag_s)
