"""The model as Prometheus metrics, rendered by prometheus_client and read back with its own
text parser: names and labels as Prometheus wants them, Unknown as NaN (never 0), and the
event counters."""

from __future__ import annotations

import dataclasses
import math

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kinspect.model import Event, EventKind, Unknown
from kinspect.sources.metrics import SnapshotMetrics
from tests.helpers.model_fixtures import demo_snapshot


def scrape(metrics: SnapshotMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_before_a_snapshot_only_up_and_the_counters() -> None:
    samples = scrape(SnapshotMetrics())
    assert samples[("kinspect_up", ())] == 0
    assert samples[("kinspect_isr_shrinks_total", ())] == 0
    assert not any(name.startswith("kinspect_partition") for name, _ in samples)


def test_a_cut_off_leader_as_metrics() -> None:
    snapshot = demo_snapshot(isolated_leader=True)
    metrics = SnapshotMetrics()
    shrank = Event(snapshot.taken_at, EventKind.ISR_SHRANK, "3 left the ISR", "test1-0", 3)
    metrics.observe(snapshot, [shrank, shrank])
    samples = scrape(metrics)
    test1 = (("partition", "0"), ("topic", "test1"))
    p = snapshot.partition("test1", 0)
    assert p is not None
    assert samples[("kinspect_partition_under_replicated", test1)] == float(
        p.under_replicated is True)
    assert samples[("kinspect_partition_isr_replicas", test1)] == len(p.isr)
    assert samples[("kinspect_isr_shrinks_total", ())] == 2
    verdict = [labels[0][1] for (name, labels), value in samples.items()
               if name == "kinspect_health" and value == 1]
    assert len(verdict) == 1
    assert samples[("kinspect_up", ())] == 1
    led = sum(1 for q in snapshot.partitions() if q.leader == 1)
    assert samples[("kinspect_broker_leader_partitions", (("broker", "1"),))] == led


def test_a_flag_not_told_is_nan() -> None:
    snapshot = demo_snapshot()
    topics = tuple(dataclasses.replace(t, partitions=tuple(
        dataclasses.replace(q, min_isr=Unknown("no DescribeConfigs permission on the topic"))
        for q in t.partitions)) for t in snapshot.topics)
    metrics = SnapshotMetrics()
    metrics.observe(dataclasses.replace(snapshot, topics=topics), [])
    samples = scrape(metrics)
    assert math.isnan(samples[("kinspect_partition_at_min_isr",
                               (("partition", "0"), ("topic", "test1")))])
    assert samples[("kinspect_unchecked", (("check", "under_min_isr"),))] == 1  # one reason
    assert samples[("kinspect_health_exit_code", ())] == 3  # not judged: a check refused


def test_every_check_of_the_registry_is_exported_with_its_findings() -> None:
    """A finding by its check, kind and severity; every registered kind and check said, 0 when
    none, so an alert on `kinspect_findings > 0` tells none from not exported."""
    from kinspect.model.health_checks import HEALTH_CHECKS

    metrics = SnapshotMetrics()
    metrics.observe(demo_snapshot(isolated_leader=True), [])  # broker 3 not registered
    samples = scrape(metrics)
    missing = (("check", "brokers"), ("kind", "broker_missing"), ("severity", "warn"))
    assert samples[("kinspect_findings", missing)] == 1
    fenced = (("check", "brokers"), ("kind", "broker_fenced"), ("severity", "warn"))
    assert samples[("kinspect_findings", fenced)] == 0
    kinds = {dict(labels)["kind"] for name, labels in samples if name == "kinspect_findings"}
    assert kinds == {k.key for c in HEALTH_CHECKS for k in c.kinds}
    checks = {dict(labels)["check"] for name, labels in samples if name == "kinspect_unchecked"}
    assert checks == {c.key for c in HEALTH_CHECKS}


def test_an_unmade_check_health_does_not_judge_is_not_counted() -> None:
    """A group not describable is said at info when lag is not judged (the exporter judges
    none): counted, KinspectChecksUnmade would page for what health does not judge."""
    snapshot = demo_snapshot()
    refused = dataclasses.replace(snapshot, groups_unknown=(
        ("orders-app", Unknown("GROUP_AUTHORIZATION_FAILED")),))
    metrics = SnapshotMetrics()
    metrics.observe(refused, [])
    assert scrape(metrics)[("kinspect_unchecked", (("check", "group_lag"),))] == 0
