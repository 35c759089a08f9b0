"""Small Spark jobs side by side.

On a demo's run (100,000 messages) each Spark job is mostly fixed cost: planning, scheduling,
the round trips through py4j. Jobs that do not need each other's results overlap those on the
two cores (a 100,000-message run with 56,000 lost, in a warm session: 8.1-8.8 s before,
5.6-7.0 s with this and the one-job ack timing). On a big run they would
share the driver's heap instead, so above SIDE_BY_SIDE_ROWS they run one after another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

SIDE_BY_SIDE_ROWS = 5_000_000  # ledger rows + final log records


def small(inputs: Any) -> bool:
    return int(inputs.ledger_rows) + int(inputs.final_log_rows) <= SIDE_BY_SIDE_ROWS


def run_jobs(together: bool, *jobs: Callable[[], Any],
             say: Callable[[str], None] | None = None, labels: Sequence[str] = ()) -> list[Any]:
    """Each job's result, in order; the first failure is raised once all have ended. The
    labels (one per job, "" for none) are said before each job, or all in one line when the
    jobs go side by side: a progress display times stages, and these are one stage then."""
    say = say or (lambda _line: None)
    labels = [*labels, *[""] * (len(jobs) - len(labels))]
    said = [label for label in labels if label]
    if not together or len(jobs) < 2:
        results = []
        for job, label in zip(jobs, labels, strict=True):
            if label:
                say(label)
            results.append(job())
        return results
    if said:
        say(" · ".join(label.rstrip("…") for label in said) + " (side by side)…")
    with ThreadPoolExecutor(len(jobs), thread_name_prefix="kinspect-spark") as pool:
        futures = [pool.submit(job) for job in jobs]
        return [future.result() for future in futures]
