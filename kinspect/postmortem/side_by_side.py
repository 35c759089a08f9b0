"""Small Spark jobs side by side.

On a demo's run (100,000 messages) each Spark job is mostly fixed cost: planning, scheduling,
the round trips through py4j. Jobs that do not need each other's results overlap those on the
two cores (a 100,000-message run with 56,000 lost, in a warm session: 8.1-8.8 s before,
5.6-7.0 s with this and the one-job ack timing). On a big run they would
share the driver's heap instead, so above SIDE_BY_SIDE_ROWS they run one after another.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

SIDE_BY_SIDE_ROWS = 5_000_000  # ledger rows + final log records


def small(inputs: Any) -> bool:
    return int(inputs.ledger_rows) + int(inputs.final_log_rows) <= SIDE_BY_SIDE_ROWS


def run_jobs(together: bool, *jobs: Callable[[], Any]) -> list[Any]:
    """Each job's result, in order; the first failure is raised once all have ended."""
    if not together or len(jobs) < 2:
        return [job() for job in jobs]
    with ThreadPoolExecutor(len(jobs), thread_name_prefix="kinspect-spark") as pool:
        futures = [pool.submit(job) for job in jobs]
        return [future.result() for future in futures]
