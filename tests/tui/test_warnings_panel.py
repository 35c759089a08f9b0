"""The warnings panel says each finding's severity, in its word and colour from the registry."""

from __future__ import annotations

import dataclasses

from kinspect.model import BrokerLogDirs, LogDir, LogDirReplica, PartitionStateZ, build_snapshot
from kinspect.model.health_checks import KINDS
from kinspect.tui.render import SEVERITY_COLOURS, warnings_text
from tests.helpers.model_fixtures import T0, broker_view, zk_view


def test_each_finding_says_its_severity_in_its_colour() -> None:
    """Broker 2's second log dir failed (critical) and broker 3 is not registered (warn): the
    panel leads each line with its registry severity, the worst first."""
    zk = zk_view(states={("test1", 0): PartitionStateZ(1, 2, (1, 2), 3, T0 - 10_000)},
                 replicas={"test1": {0: (1, 2, 3)}}, brokers={1: "a:9092", 2: "b:9092"})
    failed = BrokerLogDirs(2, (LogDir("/data/a", None), LogDir("/data/b", "KafkaStorageError")),
                           {("test1", 0): LogDirReplica(2, "/data/a", 1_000, 0, False)})
    broker = dataclasses.replace(broker_view(zk), log_dirs={2: failed})
    snapshot = build_snapshot(zk, broker, [1, 2, 3], T0)
    kinds = [f.kind for f in snapshot.findings]
    assert kinds[0] == "log_dir_offline" and "broker_missing" in kinds
    text = warnings_text(snapshot)
    lines = text.plain.split("\n")
    for finding, line in zip(snapshot.findings, lines, strict=False):
        severity = KINDS[finding.kind].severity
        assert line == f"▲ {severity} {finding.message}"
        start = text.plain.index(line)
        marks = [s for s in text.spans if s.start == start]
        assert [str(s.style) for s in marks] == [SEVERITY_COLOURS[severity]]
    assert lines[0].startswith("▲ critical broker 2: log dir /data/b is offline")
