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
from kinspect.load.ledger import LedgerWriter, ledger_summary, read_ledger
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
    assert summary == {"sent": 5, "acked": 2, "failed": 1, "unknown": 2,
                       "failed_by_error": {"_MSG_TIMED_OUT": 1}}
    meta = pq.read_schema(next((tmp_path / "ledger").glob("*.parquet"))).metadata
    assert meta[b"kinspect.acks"] == b"1"


WRITER = """
import sys, time
from pathlib import Path
from kinspect.load.ledger import LedgerWriter
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


def test_stats_publish_and_aggregate(tmp_path: Path) -> None:
    a, b = StatsPublisher(tmp_path, 0), StatsPublisher(tmp_path, 1)
    for latency in (1, 2, 3, 50):
        a.acked(latency)
    b.failed("NOT_ENOUGH_REPLICAS")
    a.maybe_publish(5000, sent=5, in_flight=1, force=True)
    b.maybe_publish(5000, sent=1, in_flight=0, done=True, force=True)
    totals = aggregate(read_stats(tmp_path))
    assert totals["sent"] == 6 and totals["acked"] == 4 and totals["failed"] == 1
    assert totals["failed_by_error"] == {"NOT_ENOUGH_REPLICAS": 1}
    assert 1 <= totals["latency_p50_ms"] <= 4 and totals["latency_p99_ms"] >= 40
    assert not totals["done"]


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
    from kinspect.load.runner import stop_load

    LoadSettings(topic="t", bootstrap="127.0.0.1:1", count=None, duration_s=600.0).save(tmp_path)
    worker = subprocess.Popen([sys.executable, "-m", "kinspect.load.worker", "--run-dir",
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
