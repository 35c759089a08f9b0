"""Load generator, ack ledger and verify against the real lab."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kinspect.lab.topics import create_topics
from kinspect.load.ack_ledger import read_ledger
from tests.helpers import kinspect, wait_until

pytestmark = pytest.mark.lab


def final_log_ids(run_dir: Path) -> list[str]:
    table = pq.read_table(run_dir / "final_log")
    return [i for i in table["id"].to_pylist() if i is not None]


def run(run_dir: Path, *args: str) -> dict[str, Any]:
    proc = kinspect("load", "run", "--run-dir", str(run_dir), "--json", *args, timeout=300)
    return dict(json.loads(proc.stdout))


def test_no_faults_everything_acked_is_in_the_log(lab: dict[str, Any], tmp_path: Path) -> None:
    create_topics(lab["bootstrap"], {"clean": 3})
    summary = run(tmp_path, "--topic", "clean", "--count", "5000", "--acks", "all")
    assert summary["sent"] == summary["acked"] == 5000 and summary["failed"] == 0
    verify = json.loads(kinspect("verify", "--topic", "clean", "--run-dir", str(tmp_path),
                                 "--json").stdout)
    assert verify["in_log"] == 5000
    assert sum(p["high_watermark"] for p in verify["partitions"]) == 5000
    ledger = read_ledger(tmp_path)
    acked = set(pc.filter(ledger["id"], pc.equal(ledger["status"], "acked")).to_pylist())
    assert acked <= set(final_log_ids(tmp_path))
    assert pc.min(ledger["offset"]).as_py() >= 0
    settings = json.loads((tmp_path / "settings.json").read_text())
    assert settings["acks"] == "all" and settings["count"] == 5000


def test_acks0_is_not_called_acknowledged(lab: dict[str, Any], tmp_path: Path) -> None:
    create_topics(lab["bootstrap"], {"fire": 1})
    summary = run(tmp_path, "--topic", "fire", "--count", "2000", "--acks", "0")
    assert "no broker acknowledged" in summary["note"]
    ledger = read_ledger(tmp_path)
    assert set(ledger["offset"].to_pylist()) == {-1}


def test_several_producers_unique_ids(lab: dict[str, Any], tmp_path: Path) -> None:
    create_topics(lab["bootstrap"], {"multi": 6})
    summary = run(tmp_path, "--topic", "multi", "--count", "9000", "--producers", "3",
                  "--rate", "max", "--acks", "1")
    assert summary["sent"] == 9000 and summary["acked"] == 9000
    ledger = read_ledger(tmp_path)
    assert len(ledger) == pc.count_distinct(ledger["id"]).as_py() == 9000
    assert sorted(set(ledger["producer"].to_pylist())) == [0, 1, 2]


def test_sigkill_mid_run_keeps_flushed_reports(lab: dict[str, Any], tmp_path: Path) -> None:
    create_topics(lab["bootstrap"], {"crash": 1})
    proc = subprocess.Popen([sys.executable, "-m", "kinspect", "load", "run", "--topic", "crash",
                             "--count", "1000000", "--rate", "5000", "--run-dir", str(tmp_path),
                             "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    wait_until(lambda: len(list((tmp_path / "ledger").glob("*.parquet"))) >= 4
               if (tmp_path / "ledger").exists() else None, 60, "a few ledger chunks")
    workers = json.loads((tmp_path / "workers.json").read_text())
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its worker, no goodbye
    proc.wait()
    for pid in workers:
        wait_until(lambda pid=pid: not Path(f"/proc/{pid}").exists()
                   or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2], 10, "worker dead")
    time.sleep(0.5)
    ledger = read_ledger(tmp_path)  # reads cleanly
    acked = ledger.filter(pc.equal(ledger["status"], "acked"))
    assert len(acked) > 0
    kinspect("verify", "--topic", "crash", "--run-dir", str(tmp_path))
    in_log = set(final_log_ids(tmp_path))
    assert set(acked["id"].to_pylist()) <= in_log
    # The only messages the ledger cannot account for are the last second's reports.
    unaccounted = in_log - set(ledger["id"].to_pylist())
    assert len(unaccounted) <= 5000 * 1.5


@pytest.mark.parametrize(("args", "message"), [
    (["--acks", "7"], "--acks"),
    (["--rate", "-5"], "--rate"),
    (["--topic", "no-such-topic"], "does not exist"),
])
def test_bad_arguments(lab: dict[str, Any], tmp_path: Path, args: list[str],
                       message: str) -> None:
    base = ["--topic", "clean", "--count", "10", "--run-dir", str(tmp_path)]
    proc = kinspect("load", "run", *base, *args, check=False)
    assert proc.returncode == 2 and message in proc.stderr
    assert "Traceback" not in proc.stderr
    missing = kinspect("load", "run", "--topic", "clean", check=False)
    assert missing.returncode == 2 and "--run-dir" in missing.stderr


def test_a_sigkilled_runner_leaves_no_worker_behind(lab: dict[str, Any], tmp_path: Path) -> None:
    """A closed terminal or a SIGKILL of `load run`: its workers stop within seconds (parent-death
    signal), recording what was in flight, instead of producing on."""
    create_topics(lab["bootstrap"], {"orphans": 1})
    runner = subprocess.Popen([sys.executable, "-m", "kinspect", "load", "run", "--topic", "orphans",
                               "--duration", "120", "--rate", "2000", "--producers", "2",
                               "--run-dir", str(tmp_path), "--json", "--no-timeline"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        workers = wait_until(lambda: json.loads((tmp_path / "workers.json").read_text())
                             if (tmp_path / "workers.json").exists() else None, 30, "the workers")
        wait_until(lambda: len(list((tmp_path / "ledger").glob("*.parquet"))) >= 2
                   if (tmp_path / "ledger").exists() else None, 30, "the load under way")
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)

        def gone() -> bool:
            return not any(os.path.exists(f"/proc/{pid}") and
                           b"zombie" not in open(f"/proc/{pid}/status", "rb").read().lower()
                           for pid in workers)

        wait_until(gone, 5, "every worker to stop after its runner was killed")
    finally:
        if runner.poll() is None:
            runner.kill()
    ledger = read_ledger(tmp_path)
    assert ledger.num_rows > 0 and set(ledger["status"].to_pylist()) <= {"acked", "unknown", "failed"}
