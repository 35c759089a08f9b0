"""The ledger in column batches, the worker's send window and its per-message path, and the
runner's streamed summary: same rows, same counts, memory that does not grow with the run.

The worker tests run against librdkafka's own mock cluster (`test.mock.num.brokers`), in
process: real delivery reports, offsets and partitions, no lab needed."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from confluent_kafka import KafkaError, KafkaException

from kinspect.load.ack_ledger import (
    ACKED,
    FAILED,
    QUEUE_FULL,
    LedgerWriter,
    ledger_summary,
    read_ledger,
)
from kinspect.load.producer_worker import SEND_BATCH, SendWindow, Worker
from kinspect.load.runsettings import LoadSettings
from kinspect.load.runstats import StatsPublisher, ledger_totals

MOCK = {"test.mock.num.brokers": "3"}


def test_batches_and_single_rows_keep_their_order(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path, 2, "t", "all", run_id="0a1b2c3d")
    writer.note_sent(5)
    writer.record(0, -1, -1, None, "failed", QUEUE_FULL, 10, 10)
    writer.append(np.array([2, 1, 3]), [0, 1, 0], [7, None, -1001], [3, None, -1],
                  np.array([ACKED, FAILED, ACKED], np.int8), [None, "_MSG_TIMED_OUT", None],
                  np.array([11, 12, 13]), np.array([20, 21, 22]))
    writer.record(4, 0, 8, 3, "acked", None, 14, 23)
    writer.unknown(np.array([5]), np.array([15]))
    writer.flush(0)
    (chunk,) = (tmp_path / "ledger").glob("p002-*.parquet")
    table = pq.read_table(chunk)
    assert table.column_names == ["id", "producer", "seq", "topic", "partition", "offset",
                                  "leader_epoch", "status", "error", "send_ts", "ack_ts"]
    rows = table.to_pylist()
    assert [r["seq"] for r in rows] == [0, 2, 1, 3, 4, 5]  # as they arrived
    assert [r["id"] for r in rows][:2] == ["0a1b2c3d-2-0", "0a1b2c3d-2-2"]
    assert {r["producer"] for r in rows} == {2} and {r["topic"] for r in rows} == {"t"}
    assert [r["offset"] for r in rows] == [-1, 7, -1, -1, 8, -1]  # none known: -1
    assert [r["leader_epoch"] for r in rows] == [None, 3, None, None, 3, None]
    assert [r["status"] for r in rows] == ["failed", "acked", "failed", "acked", "acked",
                                           "unknown"]
    assert rows[5]["ack_ts"] is None and rows[5]["send_ts"] == 15
    meta = table.schema.metadata
    assert meta[b"kinspect.refused"] == b"1" and meta[b"kinspect.sent_upto"] == b"5"


def test_a_flush_with_nothing_new_writes_nothing(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path, 0, "t", "1")
    writer.flush(0)  # the first chunk, even empty: sent_upto -1 on disk
    writer.flush(1000)
    assert len(list((tmp_path / "ledger").glob("*.parquet"))) == 1
    writer.note_sent(3)
    writer.flush(2000)  # sent_upto moved: a chunk with no rows says so
    assert len(list((tmp_path / "ledger").glob("*.parquet"))) == 2


def mixed_run(run_dir: Path) -> None:
    """Three producers: gaps below sent_upto, a mark ahead of the chunks, a mark alone,
    failures by two errors, unknowns written and synthesized, several chunks."""
    a = LedgerWriter(run_dir, 0, "t", "1", run_id="0a1b2c3d")
    a.grant(299)
    for seq in range(250):
        a.note_sent(seq)
        if seq % 7 == 3:
            continue  # never reported, never recorded: synthesized from sent_upto
        status, error = (("failed", "_MSG_TIMED_OUT") if seq % 11 == 0 else
                         ("failed", "NOT_ENOUGH_REPLICAS") if seq % 13 == 0 else ("acked", None))
        a.record(seq, seq % 3, seq, 1, status, error, seq, seq + 1)
        if seq % 60 == 59:
            a.flush(seq)
    a.flush(0)
    b = LedgerWriter(run_dir, 1, "t", "1", run_id="0a1b2c3d")
    b.grant(199)
    b.append(np.arange(100), np.zeros(100, np.int32), np.arange(100), None,
             np.zeros(100, np.int8), None, np.arange(100), np.arange(100) + 5)
    b.note_sent(119)
    b.unknown(np.arange(100, 120), np.arange(100, 120))
    b.close()
    LedgerWriter(run_dir, 2, "t", "1", run_id="0a1b2c3d").grant(49)


def test_the_streamed_totals_equal_the_whole_table_summary(tmp_path: Path) -> None:
    mixed_run(tmp_path)
    expected = ledger_summary(read_ledger(tmp_path))
    assert expected.unknown > 50 and len(expected.failed_by_error) == 2
    assert ledger_totals(tmp_path) == expected


def test_the_streamed_totals_of_an_empty_ledger(tmp_path: Path) -> None:
    assert ledger_totals(tmp_path) == ledger_summary(read_ledger(tmp_path))
    assert ledger_totals(tmp_path).to_json() == {
        "sent": 0, "acked": 0, "failed": 0, "unknown": 0, "failed_by_error": {}}


def test_the_send_window_slides_and_stays_its_size() -> None:
    window = SendWindow(size=1000)
    sent = 0
    for step in range(50):  # 50 batches of 100, each reported one step late
        room = window.room()
        assert room >= 100, (step, room)
        window.sent(sent, sent + 100, 1000 + step)
        if sent >= 100:
            assert (window.report(np.arange(sent - 100, sent)) == 1000 + step - 1).all()
        sent += 100
    assert window.base >= 4000 and len(window.ts) == 1000
    seqs, ts = window.unreported()
    assert seqs.tolist() == list(range(4900, 5000)) and set(ts.tolist()) == {1049}
    with pytest.raises(RuntimeError):
        window.report(np.array([5000]))  # never sent


def test_a_full_window_waits_for_its_oldest_report() -> None:
    window = SendWindow(size=SEND_BATCH * 2)
    window.sent(0, SEND_BATCH * 2, 1)
    window.report(np.arange(1, SEND_BATCH * 2))
    assert window.room() == 0  # seq 0 holds the window
    window.report(np.array([0]))
    assert window.room() == SEND_BATCH * 2


def test_latencies_in_bulk_fill_the_same_buckets(tmp_path: Path) -> None:
    one, bulk = StatsPublisher(tmp_path, 0), StatsPublisher(tmp_path, 1)
    latencies = [0, 1, 2, 3, 7, 50, 400, 10**9]
    for latency in latencies:
        one.acked(latency)
    bulk.acked_many(np.array(latencies))
    assert bulk.hist == one.hist and bulk.acked_count == one.acked_count == len(latencies)


def mock_worker(run_dir: Path, count: int, **changes: Any) -> Worker:
    settings = LoadSettings(**{"topic": "mock", "bootstrap": "mock:1", "acks": "all",
                               "count": count, "rate": None, "run_id": "0a1b2c3d", **changes,
                               "extra": {**MOCK, **changes.get("extra", {})}})
    settings.save(run_dir)
    return Worker(settings, 0, run_dir)


def test_the_worker_ledgers_every_report(tmp_path: Path) -> None:
    worker = mock_worker(tmp_path, 30_000)
    assert worker.run() == 0
    ledger = read_ledger(tmp_path)
    assert sorted(ledger["seq"].to_pylist()) == list(range(30_000))
    assert set(ledger["status"].to_pylist()) == {"acked"}
    assert pc.min(ledger["offset"]).as_py() >= 0
    assert ledger["id"][0].as_py().startswith("0a1b2c3d-0-")
    latency = pc.subtract(ledger["ack_ts"], ledger["send_ts"])
    assert pc.min(latency).as_py() >= 0 and pc.max(latency).as_py() < 30_000
    assert ledger_totals(tmp_path) == ledger_summary(ledger)
    # each (partition, offset) once: the reports' offsets, not a count of ours
    pairs = set(zip(ledger["partition"].to_pylist(), ledger["offset"].to_pylist(), strict=True))
    assert len(pairs) == 30_000
    assert worker.stats.acked_count == 30_000 and worker.in_flight == 0


def test_acks0_reports_carry_no_offsets(tmp_path: Path) -> None:
    worker = mock_worker(tmp_path, 5_000, acks="0")
    assert worker.run() == 0
    ledger = read_ledger(tmp_path)
    assert set(ledger["offset"].to_pylist()) == {-1}
    assert set(ledger["leader_epoch"].to_pylist()) == {None}
    assert ledger_totals(tmp_path).acked == 5_000


def test_a_full_buffer_waits_and_every_seq_is_sent_once(tmp_path: Path) -> None:
    worker = mock_worker(tmp_path, 20_000, extra={"queue.buffering.max.messages": "300"})
    assert worker.run() == 0
    ledger = read_ledger(tmp_path)
    assert sorted(ledger["seq"].to_pylist()) == list(range(20_000))
    assert set(ledger["status"].to_pylist()) == {"acked"}


def test_a_full_buffer_refused_is_ledgered_as_refused(tmp_path: Path) -> None:
    worker = mock_worker(tmp_path, 20_000, buffer_full="refuse",
                         extra={"queue.buffering.max.messages": "500"})
    assert worker.run() == 0
    ledger = read_ledger(tmp_path)
    assert sorted(ledger["seq"].to_pylist()) == list(range(20_000))
    refused = ledger.filter(pc.equal(ledger["error"], QUEUE_FULL)).num_rows
    assert refused > 0
    footers = sum(int(pq.read_schema(p).metadata[b"kinspect.refused"])
                  for p in (tmp_path / "ledger").glob("p*.parquet"))
    assert footers == refused
    assert ledger_totals(tmp_path).failed_by_error == {QUEUE_FULL: refused}


@pytest.mark.parametrize("size", [16, 100])
def test_seqs_are_read_back_from_any_value_size(tmp_path: Path, size: int) -> None:
    worker = mock_worker(tmp_path, 10, size=size)
    seqs = [0, 9, 10, 99, 100, 12345, 10**12 + 7]
    values = []
    for seq in seqs:
        template, _ = worker._value_template(seq)
        values.append(template % seq)
        assert len(values[-1]) == max(size, len(worker.prefix) + len(str(seq)) + 1)
    assert worker._seqs(values).tolist() == seqs


def held_after(run_dir: Path, count: int) -> int:
    """Python allocations the worker still holds when its run is over (the peak moves with
    how many reports one poll happens to serve; what is held is what a long run piles up)."""
    worker = mock_worker(run_dir, count)
    tracemalloc.start()
    try:
        assert worker.run() == 0
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def test_the_worker_memory_does_not_grow_with_the_count(tmp_path: Path) -> None:
    """Four times the messages, nothing more held (a list entry per message held about
    40 bytes each: 3.6 MB more here)."""
    small = held_after(tmp_path / "small", 30_000)
    large = held_after(tmp_path / "large", 120_000)
    assert large - small < 500_000, (small, large)


class RefusingProducer:
    """Stand-in around the real producer (on librdkafka's mock cluster): produce() raises
    _UNKNOWN_TOPIC for 1,000 sends after the 5,000th, as librdkafka does while its metadata
    lacks the topic (just after every broker of a lab came back from a power cut)."""

    def __init__(self, real: Any) -> None:
        self.real, self.calls = real, 0

    def produce(self, topic: str, value: bytes) -> None:
        self.calls += 1
        if 5_000 < self.calls <= 6_000:
            raise KafkaException(KafkaError(KafkaError._UNKNOWN_TOPIC))
        self.real.produce(topic, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __len__(self) -> int:
        return len(self.real)


def test_a_send_the_client_refuses_is_a_failed_send_and_the_load_goes_on(
        tmp_path: Path) -> None:
    worker = mock_worker(tmp_path, 30_000)
    worker.producer = RefusingProducer(worker.producer)  # type: ignore[assignment]
    assert worker.run() == 0
    ledger = read_ledger(tmp_path)
    assert sorted(ledger["seq"].to_pylist()) == list(range(30_000))
    failed = ledger.filter(pc.equal(ledger["status"], "failed"))
    assert failed.num_rows == 1_000
    assert set(failed["error"].to_pylist()) == {"_UNKNOWN_TOPIC"}
    assert sorted(failed["seq"].to_pylist()) == list(range(5_000, 6_000))
    assert worker.stats.acked_count == 29_000 and worker.in_flight == 0
