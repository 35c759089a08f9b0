"""`lab down` removes every process, namespace, veth, bridge and iptables rule it made."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab import netns
from tests.conftest import Lab
from tests.helpers import kinspect, wait_until

pytestmark = [pytest.mark.lab, pytest.mark.lab_lifecycle]


def test_down_leaves_nothing_behind(lab: dict[str, Any], lab_session: Lab) -> None:
    slot = netns.Slot(int(lab["nodes"][0]["address"].split(".")[2]))
    assert netns.leftovers(slot), "the running lab should own namespaces and links"
    kinspect("lab", "partition", "kafka1", "kafka2,kafka3,zk1")
    kinspect("lab", "down")
    assert netns.leftovers(slot) == []
    pids = subprocess.run(["pgrep", "-f", f"kinspect.lab={lab['lab_id']}"],
                          capture_output=True, text=True).stdout.split()
    assert pids == []
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    assert slot.bridge not in rules and f"198.18.{slot.number}." not in rules
    assert "nothing to do" in kinspect("lab", "down").stdout


def test_down_after_lab_up_was_sigkilled_mid_start(lab_home: Path) -> None:
    """State is on disk before anything is made: a SIGKILLed `lab up` is still cleaned up."""
    proc = subprocess.Popen([sys.executable, "-m", "kinspect", "lab", "up"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state_file = lab_home / "lab" / "state.json"

    def brokers_launched() -> dict[str, Any] | None:
        if not state_file.exists():
            return None
        state = json.loads(state_file.read_text())
        return state if all(n["pid"] for n in state["nodes"]) else None

    state = wait_until(brokers_launched, 120, "lab up to launch every node")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    slot = netns.Slot(state["slot"])
    assert netns.leftovers(slot)
    kinspect("lab", "down")
    assert netns.leftovers(slot) == []
    pids = subprocess.run(["pgrep", "-f", f"kinspect.lab={state['lab_id']}"],
                          capture_output=True, text=True).stdout.split()
    assert pids == []
