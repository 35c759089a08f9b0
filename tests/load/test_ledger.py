"""The ack ledger: crash-safe chunks, synthesized unknowns, summaries; and load settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kinspect.errors import KinspectError
from kinspect.load.ack_ledger import LedgerMark, LedgerWriter, ledger_summary, read_ledger, read_marks
from kinspect.load.runsettings import LoadSettings
from kinspect.load.runstats import StatsPublisher, aggregate, read_stats


def test_round_trip_and_unknowns(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path, 0, "test1", "1")
    for seq in range(5):
        writer.note_sent(seq, 1000 + seq)
    writer.record(0, 0, 10, 4, "acked", None, 1000, 1005)
    writer.record(1, 0, -1, None, "failed", "_MSG_TIMED_OUT", 1001, 1900)
    writer.flush(2000)
    writer.record(2, 0, 11, 4, "acked", None, 1002, 1006)
    writer.close([(3, 1003)])  # seq 4 was sent and never reported: synthesized
    table = read_ledger(tmp_path)
    rows = {r["id"]: r for r in table.to_pylist()}
    assert rows["0-0"]["offset"] == 10 and rows["0-0"]["leader_epoch"] == 4
    assert rows["0-1"]["error"] == "_MSG_TIMED_OUT"
    assert rows["0-3"]["status"] == "unknown" and rows["0-4"]["status"] == "unknown"
    summary = ledger_summary(table)
    assert summary.to_json() == {"sent": 5, "acked": 2, "failed": 1, "unknown": 2,
                       "failed_by_error": {"_MSG_TIMED_OUT": 1}}
    meta = pq.read_schema(next((tmp_path / "ledger").glob("*.parquet"))).metadata
    assert meta[b"kinspect.acks"] == b"1"


WRITER = """
import sys, time
from pathlib import Path
from kinspect.load.ack_ledger import LedgerWriter
w = LedgerWriter(Path(sys.argv[1]), 7, "t", "all")
seq = 0
while True:
    w.note_sent(seq, seq)
    w.record(seq, 0, seq, 1, "acked", None, seq, seq)
    seq += 1
    if seq % 1000 == 0:
        w.flush(seq)
        print(seq, flush=True)
"""


def test_sigkill_leaves_a_readable_ledger(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    flushed = 0
    while flushed < 20_000:
        flushed = int(proc.stdout.readline())
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    table = read_ledger(tmp_path)
    acked = set(r["seq"] for r in table.to_pylist() if r["status"] == "acked")
    assert set(range(flushed)) <= acked  # every report older than the last flush we saw
    seqs = sorted(r["seq"] for r in table.to_pylist())
    assert seqs == list(range(len(seqs)))  # unknowns fill every gap up to sent_upto



def test_the_mark_is_read_and_raises_sent_upto(tmp_path: Path) -> None:
    """A batch granted by the write-ahead mark and not yet in any chunk: unknown, not missing."""
    writer = LedgerWriter(tmp_path, 0, "t", "1", run_id="0a1b2c3d")
    writer.grant(199)
    for seq in range(150):
        writer.note_sent(seq, 1)
        writer.record(seq, 0, seq, 1, "acked", None, 1, 2)
    writer.flush(0)  # the chunk says sent_upto 149; 150..199 may be in the log too
    assert read_marks(tmp_path)[0] == LedgerMark(0, 199, "0a1b2c3d", "t", "1")
    table = read_ledger(tmp_path)
    rows = {r["seq"]: r for r in table.to_pylist()}
    assert sorted(rows) == list(range(200))
    assert {rows[s]["status"] for s in range(150, 200)} == {"unknown"}
    assert rows[199]["id"] == "0a1b2c3d-0-199" and rows[199]["topic"] == "t"
    assert ledger_summary(table).unknown == 50


def test_a_producer_with_only_a_mark(tmp_path: Path) -> None:
    """Killed before its first flush: no chunk at all, its mark still names run and topic."""
    writer = LedgerWriter(tmp_path, 3, "topic.x", "all", run_id="0a1b2c3d")
    writer.grant(399)
    assert not list((tmp_path / "ledger").glob("*.parquet"))
    table = read_ledger(tmp_path)
    assert table.num_rows == 400 and set(table["status"].to_pylist()) == {"unknown"}
    assert set(table["producer"].to_pylist()) == {3}
    assert set(table["topic"].to_pylist()) == {"topic.x"}
    assert sorted(table["id"].to_pylist())[:2] == ["0a1b2c3d-3-0", "0a1b2c3d-3-1"]
    # and beside a producer that did flush: each keeps its own seqs
    other = LedgerWriter(tmp_path, 1, "topic.x", "all", run_id="0a1b2c3d")
    other.grant(9)
    for seq in range(10):
        other.note_sent(seq, 1)
        other.record(seq, 0, seq, 1, "acked", None, 1, 2)
    other.close([])
    table = read_ledger(tmp_path)
    assert ledger_summary(table).to_json() == {"sent": 410, "acked": 10, "failed": 0, "unknown": 400,
                                     "failed_by_error": {}}


def test_a_fresh_writer_marks_nothing(tmp_path: Path) -> None:
    """The mark file exists from the start, says -1 (nothing sent) and adds no row."""
    LedgerWriter(tmp_path, 0, "t", "1")
    assert (tmp_path / "ledger" / "_p000.mark").read_bytes()[:20] == b"-0000000000000000001"
    assert read_ledger(tmp_path).num_rows == 0


def test_the_mark_is_one_fixed_width_write_in_place(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path, 0, "t", "1")
    path = tmp_path / "ledger" / "_p000.mark"
    size = path.stat().st_size
    for upto in (199, 399, 123_456_789_012):
        writer.grant(upto)
        assert path.stat().st_size == size and read_marks(tmp_path)[0].upto == upto


def acked_writer(tmp_path: Path, granted: int, acked: int) -> LedgerWriter:
    """A writer granted up to `granted` that sent and saw acknowledged seqs 0..acked-1."""
    writer = LedgerWriter(tmp_path, 0, "t", "1")
    writer.grant(granted)
    for seq in range(acked):
        writer.note_sent(seq, 1)
        writer.record(seq, 0, seq, 1, "acked", None, 1, 2)
    return writer


def test_a_clean_close_lowers_the_mark_to_what_was_sent(tmp_path: Path) -> None:
    """Granted but never sent (a BufferError, then stop): a clean close knows, so no over-count."""
    writer = acked_writer(tmp_path, granted=199, acked=120)
    writer.close([])
    assert read_marks(tmp_path)[0].upto == 119
    table = read_ledger(tmp_path)
    assert table.num_rows == 120 and ledger_summary(table).unknown == 0


def test_a_mark_below_the_chunks_changes_nothing(tmp_path: Path) -> None:
    """max(chunks' sent_upto, mark): an old mark never hides what a chunk says was sent."""
    writer = LedgerWriter(tmp_path, 0, "t", "1")
    for seq in range(30):
        writer.note_sent(seq, 1)
    writer.record(0, 0, 0, 1, "acked", None, 1, 2)
    writer.flush(0)
    assert read_marks(tmp_path)[0].upto == -1
    assert read_ledger(tmp_path).num_rows == 30


def test_the_ledger_dir_still_reads_as_a_parquet_dataset(tmp_path: Path) -> None:
    """The mark is a `_` side file, as Parquet's own are: Arrow reading ledger/ skips it."""
    writer = acked_writer(tmp_path, granted=9, acked=10)
    writer.flush(0)
    assert pq.read_table(tmp_path / "ledger").num_rows == 10

def test_a_garbled_mark_is_an_error_not_a_silent_undercount(tmp_path: Path) -> None:
    LedgerWriter(tmp_path, 0, "t", "1")
    (tmp_path / "ledger" / "_p000.mark").write_bytes(b"garbage")
    with pytest.raises(KinspectError, match=r"_p000\.mark"):
        read_ledger(tmp_path)


def test_the_post_mortem_inputs_take_the_mark(tmp_path: Path) -> None:
    """The post-mortem reads footers, not read_ledger: it must raise sent_upto to the mark too,
    so logged seqs above the chunks are unknown there, never 'not in ledger'; and a producer
    with a mark alone is a producer."""
    from kinspect.load.verify import FINAL_LOG_SCHEMA
    from kinspect.postmortem.evidence.inputs import load_inputs

    flushed = LedgerWriter(tmp_path, 0, "t", "1", run_id="0a1b2c3d")
    flushed.grant(199)
    for seq in range(100):
        flushed.note_sent(seq, 1)
        flushed.record(seq, 0, seq, 1, "acked", None, 1, 2)
    flushed.flush(0)
    LedgerWriter(tmp_path, 1, "t", "1", run_id="0a1b2c3d").grant(399)
    (tmp_path / "final_log").mkdir()
    pq.write_table(FINAL_LOG_SCHEMA.empty_table(), tmp_path / "final_log" / "part-0000.parquet")
    inputs = load_inputs(tmp_path)
    assert {p: (m.sent_upto, m.rows) for p, m in inputs.producers.items()} == {
        0: (199, 100), 1: (399, 0)}
    assert (inputs.topic, inputs.acks, inputs.run_id) == ("t", "1", "0a1b2c3d")

MARKING_WORKER = """
import sys
from pathlib import Path
from kinspect.load.ack_ledger import LedgerWriter
w = LedgerWriter(Path(sys.argv[1]), 0, "t", "1", run_id="0a1b2c3d")
seq = 0
while True:
    w.grant(seq + 199)
    for _ in range(200):
        w.note_sent(seq, seq)
        seq += 1
    if seq % 100_000 == 0:
        print(seq, flush=True)
"""


def test_sigkill_keeps_the_mark_without_any_flush(tmp_path: Path) -> None:
    """The worker's order (mark, then sends) under SIGKILL: never one chunk written, yet every
    seq 'sent' before the kill is counted, and at most one batch more."""
    proc = subprocess.Popen([sys.executable, "-c", MARKING_WORKER, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    seen = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not list((tmp_path / "ledger").glob("*.parquet"))
    upto = read_marks(tmp_path)[0].upto
    assert upto >= seen - 1 and (upto + 1) % 200 == 0
    table = read_ledger(tmp_path)
    assert table.num_rows == upto + 1 and ledger_summary(table).unknown == upto + 1

def test_stats_publish_and_aggregate(tmp_path: Path) -> None:
    a, b = StatsPublisher(tmp_path, 0), StatsPublisher(tmp_path, 1)
    for latency in (1, 2, 3, 50):
        a.acked(latency)
    b.failed("NOT_ENOUGH_REPLICAS")
    a.maybe_publish(5000, sent=5, in_flight=1, force=True)
    b.maybe_publish(5000, sent=1, in_flight=0, done=True, force=True)
    totals = aggregate(read_stats(tmp_path))
    assert totals.sent == 6 and totals.acked == 4 and totals.failed == 1
    assert totals.failed_by_error == {"NOT_ENOUGH_REPLICAS": 1}
    assert 1 <= totals.latency_p50_ms <= 4 and totals.latency_p99_ms >= 40
    assert not totals.done and totals.producers == 2


@pytest.mark.parametrize(("changes", "message"), [
    ({"acks": "7"}, "--acks"), ({"rate": -5.0}, "--rate"), ({"producers": 0}, "--producers"),
    ({"size": 4}, "--size"), ({"count": 10, "duration_s": 5.0}, "not both"),
    ({"idempotent": True}, "--idempotent"),
])
def test_bad_settings(changes: dict[str, object], message: str) -> None:
    settings = LoadSettings(topic="t", bootstrap="b:1", **changes)  # type: ignore[arg-type]
    with pytest.raises(KinspectError, match=message):
        settings.validate()


def test_settings_round_trip(tmp_path: Path) -> None:
    settings = LoadSettings(topic="t", bootstrap="b:1", acks="all", idempotent=True, retries=3)
    settings.validate()
    settings.save(tmp_path)
    assert LoadSettings.load(tmp_path) == settings
    config = settings.to_producer_config()
    assert config["acks"] == "all" and config["enable.idempotence"] is True
    assert config["retries"] == 3 and "delivery.timeout.ms" not in config


def test_load_stop_reaches_the_workers_of_a_runner_that_died(tmp_path: Path) -> None:
    """A SIGKILLed runner leaves load.pid behind; `load stop` then stops its workers itself.
    The worker here points at a closed loopback port: it sends nothing anywhere."""
    from kinspect.load.producer_run import stop_load

    LoadSettings(topic="t", bootstrap="127.0.0.1:1", count=None, duration_s=600.0).save(tmp_path)
    worker = subprocess.Popen([sys.executable, "-m", "kinspect.load.producer_worker", "--run-dir",
                               str(tmp_path.resolve()), "--producer", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "load.pid").write_text(str(dead.pid))
    (tmp_path / "workers.json").write_text(f"[{worker.pid}, {dead.pid}]")
    try:
        time.sleep(1.0)
        assert worker.poll() is None
        assert stop_load(tmp_path) is True
        assert worker.wait(timeout=20) == 0  # stopped cleanly: its ledger is written
        assert list((tmp_path / "ledger").glob("p000-*.parquet"))
        assert stop_load(tmp_path) is False  # nothing left to stop
    finally:
        if worker.poll() is None:
            worker.kill()
