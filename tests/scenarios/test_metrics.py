"""Every metric a scenario can name is an attribute of the report or of the runner's own
measurements: a renamed field fails here, not as a silent None in an expectation."""

from __future__ import annotations

import pytest

from kinspect.postmortem.story.values import Report
from kinspect.scenarios.catalog import builtin
from kinspect.scenarios.measured import MEASURED, REPORTED, Measured, UnknownMetric, metric_value
from kinspect.scenarios.spec import METRICS


def test_every_metric_is_the_reports_or_the_runners() -> None:
    named = set(METRICS) | {c.metric for s in builtin() for c in s.expect}
    assert named - (MEASURED | REPORTED) == set()
    assert not MEASURED & REPORTED  # one source each


def test_a_metric_reads_its_attribute_and_an_unknown_one_fails_loudly() -> None:
    measured = Measured(faults_applied=1, lost_blamed_on_target=0.5, generator_crashes=0)
    report = Report(acked_lost=7, no_leader_ms=1200)
    assert metric_value("acked_lost", report, measured) == 7
    assert metric_value("no_leader_ms", report, measured) == 1200
    assert metric_value("lost_blamed_on_target", report, measured) == 0.5
    assert metric_value("never_processed", report, measured) is None  # no group ran
    with pytest.raises(UnknownMetric, match="acked_lots"):
        metric_value("acked_lots", report, measured)
