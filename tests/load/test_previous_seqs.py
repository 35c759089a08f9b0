"""verify's prev_seq column: the seq before each record from the same run and producer in the
partition's offset order, across batches, against a plain Python walk."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinspect.load.verify import FINAL_LOG_SCHEMA, PreviousSeqs


def batch(rows: list[tuple[str | None, int | None, int | None]]) -> pa.RecordBatch:
    n = len(rows)
    return pa.record_batch({
        "topic": ["t"] * n, "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()), "id": [None] * n,
        "producer": pa.array([p for _, p, _ in rows], pa.int32()),
        "seq": pa.array([s for _, _, s in rows], pa.int64()),
        "leader_epoch": pa.array([None] * n, pa.int32()), "timestamp": pa.array([0] * n, pa.int64()),
        "run": pa.array([r for r, _, _ in rows], pa.string())}, schema=FINAL_LOG_SCHEMA)


def test_previous_seq_per_run_and_producer_across_batches() -> None:
    rng = np.random.default_rng(5)
    rows: list[tuple[str | None, int | None, int | None]] = []
    for _ in range(5000):
        if rng.random() < 0.05:
            rows.append((None, None, None))  # a foreign record
        else:
            rows.append((str(rng.choice(["aaaa0001", "bbbb0002"])) if rng.random() < 0.9 else None,
                         int(rng.integers(0, 4)), int(rng.integers(0, 1000))))
    expected, last = [], {}
    for run, producer, seq in rows:
        if producer is None:
            expected.append(None)
            continue
        expected.append(last.get((run, producer)))
        last[(run, producer)] = seq
    order = PreviousSeqs()
    got: list[int | None] = []
    for lo in range(0, len(rows), 777):
        got += order.of(batch(rows[lo:lo + 777])).to_pylist()
    assert got == expected
    assert order.of(batch([])).to_pylist() == []
