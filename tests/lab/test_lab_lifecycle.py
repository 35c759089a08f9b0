"""`lab down` removes everything it made: processes, namespaces, veths, bridges and iptables
rules (process backend), or containers and networks (docker backend)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab import netns, shaping
from kinspect.lab.topics import create_topics
from kinspect.load.ack_ledger import read_ledger
from tests.helpers import kinspect, wait_until
from tests.helpers.lab import Lab

pytestmark = [pytest.mark.lab, pytest.mark.lab_lifecycle, pytest.mark.backends("process", "docker")]


def leftovers(backend: str, lab_id: str, slot: int) -> list[str]:
    """Whatever of this lab is still on the machine."""
    if backend == "process":
        return netns.leftovers(netns.Slot(slot))
    import docker

    client = docker.from_env()
    ours = {"label": f"kinspect.lab={lab_id}"}
    found = [c.name for c in client.containers.list(all=True, filters=ours)]
    return found + [n.name for n in client.networks.list(filters=ours)]


def lab_processes(lab_id: str) -> list[str]:
    """JVMs tagged with the lab id: the process lab's, or those inside the docker lab's containers."""
    return subprocess.run(["pgrep", "-f", f"kinspect.lab={lab_id}"],
                          capture_output=True, text=True).stdout.split()


def test_down_leaves_nothing_behind(lab: dict[str, Any], lab_session: Lab, lab_backend: str,
                                    tmp_path: Path) -> None:
    state = json.loads((lab_session.home / "lab" / "state.json").read_text())
    assert leftovers(lab_backend, lab["lab_id"], state["slot"]), "the running lab owns things"
    runner, workers = start_endless_load(lab, tmp_path)
    kinspect("lab", "partition", "kafka1", "kafka2,kafka3,zk1")
    kinspect("lab", "slow", "kafka2", "--rate", "256kbit", "--loss", "5")  # qdiscs, ifb, rules
    down = kinspect("lab", "down")
    # the load aimed at the lab was stopped first, its ledger finished, no worker left
    assert "stopping the load on lab-down" in down.stderr
    assert runner.wait(timeout=5) == 0
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    assert read_ledger(tmp_path).num_rows > 0 and json.loads((tmp_path / "summary.json")
                                                              .read_text())["stopped"]
    assert leftovers(lab_backend, lab["lab_id"], state["slot"]) == []
    assert lab_processes(lab["lab_id"]) == []
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    block = {"process": "198.18", "docker": "198.19"}[lab_backend]
    assert f"{block}.{state['slot']}." not in rules
    assert shaping.CHAIN_IN not in rules and shaping.IFB not in subprocess.run(
        ["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "nothing to do" in kinspect("lab", "down").stdout


def start_endless_load(lab: dict[str, Any], run_dir: Path) -> tuple[subprocess.Popen[bytes],
                                                                      list[int]]:
    """A load that would run for an hour, under way (a ledger chunk written)."""
    create_topics(lab["bootstrap"], {"lab-down": 1})
    runner = subprocess.Popen([sys.executable, "-m", "kinspect", "load", "run", "--topic",
                               "lab-down", "--duration", "3600", "--rate", "1000", "--run-dir",
                               str(run_dir), "--json", "--no-timeline"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: (run_dir / "ledger").is_dir() and any((run_dir / "ledger").glob("*.parquet")),
               60, "the load under way")
    return runner, json.loads((run_dir / "workers.json").read_text())


def test_down_after_lab_up_was_sigkilled_mid_start(lab_home: Path, lab_backend: str) -> None:
    """State is on disk before anything is made: a SIGKILLed `lab up` is still cleaned up."""
    proc = subprocess.Popen([sys.executable, "-m", "kinspect", "lab", "up", "--backend", lab_backend],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state_file = lab_home / "lab" / "state.json"

    def brokers_launched() -> dict[str, Any] | None:
        if not state_file.exists():
            return None
        state = json.loads(state_file.read_text())
        return state if all(n["pid"] for n in state["nodes"]) else None

    state = wait_until(brokers_launched, 300, "lab up to launch every node")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert leftovers(lab_backend, state["lab_id"], state["slot"])
    kinspect("lab", "down")
    assert leftovers(lab_backend, state["lab_id"], state["slot"]) == []
    assert lab_processes(state["lab_id"]) == []
