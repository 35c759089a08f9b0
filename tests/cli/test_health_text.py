"""`kinspect health`'s text says each problem's severity, in the registry's words."""

from __future__ import annotations

from kinspect.cli.health import problem_lines, report_json
from kinspect.model import assess
from kinspect.model.health_checks import KINDS
from tests.helpers.model_fixtures import demo_snapshot


def test_each_problem_line_says_its_severity() -> None:
    """The isolated leader's demo: partitions under min ISR (critical), a broker missing and
    replication factor 1 (warn): each line starts with its own severity, critical first."""
    snapshot = demo_snapshot(isolated_leader=True)
    report = assess(snapshot)
    lines = problem_lines(report)
    assert len(lines) == len(report.problems) and report.critical and report.warnings
    assert lines[0].startswith("  - critical: ") and lines[-1].startswith("  - warn: ")
    by_message = {line.split(": ", 1)[1]: line.split(": ", 1)[0].strip(" -")
                  for line in lines}
    assert report.findings
    for finding in report.findings:  # every finding is said, with its kind's severity
        assert by_message[finding.message] == KINDS[finding.kind].severity
    assert "  - warn: broker 3 is expected but not registered in ZooKeeper" in lines
    said = report_json(report, snapshot)
    assert [f["severity"] for f in said["findings"]] == [f.severity for f in report.findings]
