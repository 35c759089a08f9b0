"""The driver's half of ack timing (queries._fold_buckets) and the side-by-side runner, without
Spark: hand-made 100 ms buckets with known bounds, seconds and gaps."""

from __future__ import annotations

import threading
from dataclasses import asdict
from typing import Any

import pyarrow as pa
import pytest

from kinspect.postmortem.matching import queries
from kinspect.postmortem.spark.side_by_side import run_jobs

T = 1_700_000_000_000  # a whole second: bucket T // 100


def buckets(rows: list[tuple[int | None, int | None, int, int, int | None, int | None,
                             int | None, int | None]]) -> pa.Table:
    names = ["pp", "b", "acked", "failed", "lo", "hi", "after", "kept"]
    types = [pa.int32(), pa.int64(), *[pa.int64()] * 6]
    return pa.table({n: pa.array([r[i] for r in rows], t)
                     for i, (n, t) in enumerate(zip(names, types, strict=True))})


B = T // 100
TABLE = buckets([
    # partition 0: acks in its first two buckets, 1.5 s with none, acks again
    (0, B, 10, 0, T + 5, T + 95, None, None),
    (0, B + 1, 8, 1, T + 105, T + 190, T + 150, T + 150),
    (0, B + 17, 4, 0, T + 1_710, T + 1_780, T + 1_710, T + 1_750),
    # partition 1: a bucket with only failures inside what would be a gap: it does not close it
    (1, B, 5, 0, T + 20, T + 60, None, None),
    (1, B + 5, 0, 2, None, None, None, None),
    (1, B + 9, 6, 0, T + 950, T + 990, T + 950, T + 960),
    # unknown rows have no ack time: never drawn
    (1, None, 0, 0, None, None, None, None),
])


def _fold_buckets(table: pa.Table, after_fault: bool, gap_ms: int,
                  ) -> tuple[dict[str, Any], list[dict[str, int]], list[dict[str, Any]]]:
    """queries._fold_buckets's typed answer as plain values, to compare with literals."""
    timing = queries._fold_buckets(table, after_fault, gap_ms)
    return (asdict(timing.bounds), [s.to_json() for s in timing.per_second],
            [asdict(g) for g in timing.gaps])


def test_bounds_counts_seconds_and_gaps_come_from_the_buckets() -> None:
    bounds, per_second, gaps = _fold_buckets(TABLE, True, 1000)
    assert bounds == {"first_ack_ts": T + 5, "last_ack_ts": T + 1_780,
                      "first_ack_after_fault_ts": T + 150,
                      "first_kept_ack_after_fault_ts": T + 150}
    assert per_second == [{"second": T // 1000, "acked": 10 + 8 + 5 + 6, "failed": 1 + 2},
                          {"second": T // 1000 + 1, "acked": 4, "failed": 0}]
    # partition 0: 190 -> 1,710 is a gap; partition 1: 60 -> 950 is under a second
    assert gaps == [{"pp": 0, "start": T + 190, "end": T + 1_710}]
    assert _fold_buckets(TABLE, True, 800)[2] == [
        {"pp": 0, "start": T + 190, "end": T + 1_710}, {"pp": 1, "start": T + 60, "end": T + 950}]


def test_acks_that_never_came_back_leave_a_gap_to_the_end_of_the_load() -> None:
    """Partition 1's records after its last ack (T + 990) were never answered: it was
    unavailable until the load ended, at least. Partition 0 has no unanswered record."""
    unanswered = TABLE.append_column("unanswered", pa.array([0, 0, 0, 0, 0, 0, 40], pa.int64()))
    end = T + 30_000
    gaps = [asdict(g) for g in queries._fold_buckets(unanswered, True, 1000, end).gaps]
    assert gaps == [{"pp": 0, "start": T + 190, "end": T + 1_710},
                    {"pp": 1, "start": T + 990, "end": end}]
    assert [asdict(g) for g in queries._fold_buckets(unanswered, True, 1000).gaps] == gaps[:1]


def test_unanswered_records_without_a_partition_are_the_one_acked_partitions_only() -> None:
    """A record never answered has partition -1 in the ledger: on a one-partition run it is
    that partition's (kraft-quorum-lost: 44,952 such, acks stopped 126 s before the end)."""
    one = buckets([(0, B, 10, 0, T + 5, T + 95, None, None), (-1, None, 0, 0, None, None, None,
                                                               None)])
    one = one.append_column("unanswered", pa.array([0, 44_952], pa.int64()))
    end = T + 126_000
    assert [asdict(g) for g in queries._fold_buckets(one, True, 1000, end).gaps] == [
        {"pp": 0, "start": T + 95, "end": end}]
    two = TABLE.append_column("unanswered", pa.array([0, 0, 0, 0, 0, 0, 0], pa.int64()))
    nowhere = pa.concat_tables([two, buckets([(-1, None, 0, 0, None, None, None, None)])
                                .append_column("unanswered", pa.array([9], pa.int64()))])
    assert [asdict(g) for g in queries._fold_buckets(nowhere, True, 1000, end).gaps] == [
        {"pp": 0, "start": T + 190, "end": T + 1_710}]  # whose they were is not known


def test_without_a_fault_there_is_no_first_ack_after_it() -> None:
    bounds = _fold_buckets(TABLE, False, 1000)[0]
    assert bounds["first_ack_after_fault_ts"] is None
    assert bounds["first_kept_ack_after_fault_ts"] is None


def test_an_empty_ledger_folds_to_nothing() -> None:
    bounds, per_second, gaps = _fold_buckets(buckets([]), True, 1000)
    assert (per_second, gaps) == ([], [])
    assert set(bounds.values()) == {None}


def test_side_by_side_jobs_run_at_once_and_say_one_line() -> None:
    both_started = threading.Barrier(2, timeout=60)  # each job waits for the other: truly at once
    said: list[str] = []

    def job(value: int) -> int:
        both_started.wait()
        return value

    assert run_jobs(True, lambda: job(1), lambda: job(2), say=said.append,
                    labels=("first…", "second…")) == [1, 2]
    assert said == ["first · second (side by side)…"]


def test_one_after_another_each_label_before_its_job_and_a_failure_is_raised() -> None:
    said: list[str] = []
    order: list[str] = []
    run_jobs(False, lambda: order.append(said[-1]), lambda: order.append(said[-1]),
             say=said.append, labels=("a…", "b…"))
    assert order == ["a…", "b…"]

    def boom() -> None:
        raise ValueError("the job failed")

    with pytest.raises(ValueError, match="the job failed"):
        run_jobs(True, lambda: 1, boom)
