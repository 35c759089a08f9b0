"""The live loss figure against the real lab, recounted by kcat and DuckDB.

A leader cut off from everything keeps acknowledging acks=1 writes that the new leader's log
will never hold. While it happens, the figure in RUN_DIR/live_loss.jsonl (what the TUI's load
panel shows) must grow; once the run is over it must equal the acknowledged-but-lost count
that kcat's read-back and DuckDB's recount of the ledger give, not an estimate of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kinspect.lab.topics import create_topics
from kinspect.load.run_timeline import LIVE_LOSS_FILE, read_live_loss
from tests.helpers import kinspect, partition_state, wait_until
from tests.helpers.oracles import duckdb_recount, kcat_ids

pytestmark = [pytest.mark.lab, pytest.mark.slow]
TOPIC = "live-loss"


def live_lines(run_dir: Path) -> list[dict[str, Any]]:
    try:
        text = (run_dir / LIVE_LOSS_FILE).read_text()
    except OSError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


def test_the_live_figure_grows_while_a_cut_off_leader_acks_and_equals_the_loss(
        lab: dict[str, Any], zk: KazooClient, tmp_path: Path) -> None:
    bootstrap = lab["bootstrap"]
    create_topics(bootstrap, {TOPIC: 1})
    run_dir = tmp_path / "run"
    load = subprocess.Popen([sys.executable, "-m", "kinspect", "load", "run", "--topic", TOPIC,
                             "--acks", "1", "--rate", "4000", "--duration", "32", "--retries",
                             "0", "--run-dir", str(run_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: any(line["acked"] > 4000 for line in live_lines(run_dir)), 30,
                   "the live figure's first acknowledgements")
        assert live_lines(run_dir)[-1]["doomed"] == 0  # nothing doomed before the fault
        leader = partition_state(zk, TOPIC, 0)["leader"]
        kinspect("lab", "isolate", f"kafka{leader}")
        isolated = time.monotonic()
        elected = wait_until(lambda: partition_state(zk, TOPIC, 0)["leader"] not in (-1, leader)
                             and time.time(), 40, "a new leader")
        first = wait_until(lambda: next((line for line in live_lines(run_dir)
                                         if line["doomed"] > 0), None), 30, "a doomed ack")
        wait_until(lambda: next((line for line in live_lines(run_dir)
                                 if line["doomed"] > first["doomed"]), None), 30,
                   "the doomed count growing while the old leader still acks")
        print(f"live figure > 0 at {first['ts'] / 1000 - elected:+.1f} s from the election "
              f"seen in ZooKeeper")
        time.sleep(max(0.0, 16 - (time.monotonic() - isolated)))
        kinspect("lab", "heal")
        assert load.wait(timeout=120) == 0
    finally:
        if load.poll() is None:
            load.kill()
    final = read_live_loss(run_dir)
    assert final is not None and final["final"]
    # the cut-off leader's log held them (seen while it was cut off: it truncates on rejoining)
    assert final["writers"] == [leader], live_lines(run_dir)[-3:]
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    counts = duckdb_recount(run_dir, kcat_ids(bootstrap, TOPIC, run_id))
    assert counts["acked_lost"] > 1000  # the lesson happened
    assert final["doomed"] == counts["acked_lost"]
    assert final["acked"] == counts["acked"]
