"""What an [expect] condition reads: the post-mortem's report, and what the scenario runner
measures beside it. Every metric is an attribute of one of the two; a name that is neither
is a bug, and fails loudly instead of judging a run on None."""

from __future__ import annotations

from dataclasses import dataclass, fields

from kinspect.postmortem.story.values import Report


class UnknownMetric(LookupError):
    """A metric name that neither the report nor the runner's measurements carry (a bug)."""


@dataclass(frozen=True, slots=True)
class Measured:
    """The runner's own metrics (spec.METRICS says what each means); None: not measured."""

    faults_applied: int
    lost_blamed_on_target: float | None
    generator_crashes: int
    consumed_during_fault: int | None = None
    # The consumer group's, under the names [expect] uses (None: no group ran).
    never_processed: int | None = None
    consumer_crashes: int | None = None
    committed_unprocessed: int | None = None
    processed_twice: int | None = None
    redelivered: int | None = None
    aborted_visible: int | None = None
    output_duplicates: int | None = None
    # KRaft: how the controller's log says it chose leaders (None: a ZooKeeper lab's log
    # is not read for this)
    elr_elections: int | None = None
    unclean_elections: int | None = None


MEASURED = frozenset(f.name for f in fields(Measured))
REPORTED = frozenset(f.name for f in fields(Report))


def metric_value(name: str, report: Report, measured: Measured) -> int | float | None:
    """The value of metric `name` for this run."""
    if name in MEASURED:
        value: object = getattr(measured, name)
    elif name in REPORTED:
        value = getattr(report, name)
    else:
        raise UnknownMetric(f"metric {name!r} is neither the post-mortem report's nor the "
                            "scenario runner's (kinspect/scenarios/measured.py)")
    if value is not None and not isinstance(value, int | float):
        raise UnknownMetric(f"metric {name!r} is not a number ({type(value).__name__})")
    return value
