"""The alerting rules shipped for the exporter (monitoring/kinspect.rules.yml): Prometheus's own
promtool judges them against their unit tests, and every metric they name is one the exporter
really serves (a scrape of it, rendered by prometheus_client)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kinspect.model import Event, EventKind
from kinspect.sources.metrics import SnapshotMetrics
from tests.helpers.model_fixtures import demo_snapshot

MONITORING = Path(__file__).parents[2] / "monitoring"
RULES = MONITORING / "kinspect.rules.yml"
METRIC = re.compile(r"\bkinspect_[a-z_]+")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool not found: `make system-deps` installs Debian's prometheus package")
    return found


def test_promtool_passes_the_rules_and_their_unit_tests() -> None:
    tool = promtool()
    checked = subprocess.run([tool, "check", "rules", str(RULES)], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 8 rules found" in checked.stdout
    tested = subprocess.run([tool, "test", "rules", "kinspect.rules.test.yml"], cwd=MONITORING,
                            capture_output=True, text=True, timeout=60)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_metric_a_rule_names_is_served_by_the_exporter() -> None:
    exprs = [line.split("expr:", 1)[1] for line in RULES.read_text().splitlines()
             if "expr:" in line]
    named = {name for expr in exprs for name in METRIC.findall(expr)}
    assert named  # the rules do name kinspect's metrics
    metrics = SnapshotMetrics()
    snapshot = demo_snapshot(isolated_leader=True)
    metrics.observe(snapshot, [Event(snapshot.taken_at, EventKind.ISR_SHRANK, "3 left",
                                     "test1-0", 3)])
    registry = CollectorRegistry()
    registry.register(metrics)
    families = list(text_string_to_metric_families(generate_latest(registry).decode()))
    served = {f.name for f in families} | {s.name for f in families for s in f.samples}
    assert named <= served, named - served
