"""Shared helpers for tests that drive the real `kinspect` command and a real lab."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient

T = TypeVar("T")


def kinspect(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
             check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess, as a user would."""
    proc = subprocess.run([sys.executable, "-m", "kinspect", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise AssertionError(f"kinspect {' '.join(args)} exited {proc.returncode}:\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def lab_status() -> dict[str, Any]:
    return dict(json.loads(kinspect("lab", "status", "--json").stdout))


def wait_until(probe: Callable[[], T | None], timeout: float, what: str,
               interval: float = 0.1) -> T:
    """Poll until probe returns something truthy; fail with `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def partition_state(zk: KazooClient, topic: str, partition: int) -> dict[str, Any]:
    """ZooKeeper's view of a partition: what the controller decided."""
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return dict(json.loads(data))


def node_for_broker(status: dict[str, Any], broker_id: int) -> str:
    return str(next(n["name"] for n in status["nodes"] if n.get("broker_id") == broker_id))


def shaping_in_node(status: dict[str, Any], node: str) -> list[str]:
    """Link shaping present in a lab node's network namespace, read with tc, ip and iptables
    themselves (in the namespace, or in the docker node's `-net` container)."""
    from kinspect.lab import shaping

    record = next(n for n in status["nodes"] if n["name"] == node)
    prefix = (["ip", "netns", "exec", record["netns"]] if record.get("netns")
              else ["docker", "exec", f"{record['container']}-net"])

    def out(*cmd: str) -> str:
        return subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=30).stdout

    return shaping.left_behind(out("tc", "qdisc", "show"), out("ip", "-o", "link"),
                               out("iptables", "-S"))
