"""A send's three outcomes, read from the ledger's status and error as the post-mortem reads
them (its Spark coding in matching/frames.py must agree: tests/postmortem recounts in DuckDB)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from kinspect.model.sends import INDEFINITE_ERRORS, Answer, answer


@pytest.mark.parametrize(("status", "error", "expected"), [
    ("acked", None, Answer.OK),
    ("failed", "_MSG_TIMED_OUT", Answer.INDEFINITE),
    ("failed", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", Answer.INDEFINITE),
    ("failed", "NOT_ENOUGH_REPLICAS", Answer.FAILED),  # refused before the append
    ("failed", "_QUEUE_FULL", Answer.FAILED),  # never left the client
    ("failed", "_UNKNOWN_PARTITION", Answer.FAILED),
    ("unknown", None, Answer.INDEFINITE),  # never answered: the generator died
])
def test_each_row_has_one_outcome(status: str, error: str | None, expected: Answer) -> None:
    assert answer(status, error) is expected


def test_every_indefinite_error_is_one_librdkafka_names() -> None:
    """A misspelt name would turn every such failure definite without a word."""
    for name in INDEFINITE_ERRORS:
        assert isinstance(getattr(KafkaError, name, None), int), name
    assert [a.jepsen for a in Answer] == [":ok", ":fail", ":info"]


def test_every_named_anomaly_is_a_metric_a_scenario_can_expect() -> None:
    """The glossary's keys are the report's and the scenarios' own: a renamed count fails
    here, not in a reader's hands."""
    from kinspect.model.anomalies import ANOMALIES
    from kinspect.scenarios.spec import METRICS

    assert [a.key for a in ANOMALIES if a.key not in METRICS] == []
    assert len({a.key for a in ANOMALIES}) == len(ANOMALIES)
