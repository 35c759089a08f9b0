"""The two lab backends side by side: the same lab, the same faults, process vs docker.

For each backend, in a fresh KINSPECT_HOME: `lab up` (images already built), then ROUNDS times
each fault against the leader of a 1-partition, replication-factor-3 topic, timing the fault
command and the failover (fault command started → ZooKeeper names another leader), undoing it
and waiting for a full ISR; then `lab down`. One lab at a time.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from bench.lab import bench_lab, describe, kinspect
from kinspect.lab.topics import create_topics

TOPIC, ROUNDS = "bench-failover", 5
STATE = f"/brokers/topics/{TOPIC}/partitions/0/state"
FAULTS: dict[str, tuple[list[str], list[str]]] = {
    # fault, then its undo; NODE is the leader's node
    "kill": (["kill", "NODE"], ["start", "NODE"]),
    "pause": (["pause", "NODE"], ["resume", "NODE"]),
    "isolate from zk": (["isolate", "NODE", "--from", "zk"], ["heal"]),
}


def _wait(probe: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.02)
    raise SystemExit(f"bench: timed out waiting for {what}")


def _moved_from(state: Callable[[], dict[str, Any]], old: int) -> bool:
    return state()["leader"] not in (old, -1)


def measure(backend: str) -> dict[str, Any]:
    started = time.perf_counter()
    with bench_lab(backend, reuse=False) as lab:
        up_s = time.perf_counter() - started
        create_topics(lab["bootstrap"], {TOPIC: 1}, 3)
        zk = KazooClient(hosts=lab["zookeeper"], timeout=10.0)
        zk.start(timeout=20)
        node_of = {n["broker_id"]: n["name"] for n in lab["nodes"] if "broker_id" in n}

        def state() -> dict[str, Any]:
            return dict(json.loads(zk.get(STATE)[0]))

        result: dict[str, Any] = {"backend": backend, "up_s": up_s}
        try:
            for fault, (action, undo) in FAULTS.items():
                command_s, failover_s = [], []
                for _ in range(ROUNDS):
                    _wait(lambda: len(state()["isr"]) == 3 and state()["leader"] >= 0, 120, "full ISR")
                    leader = state()["leader"]
                    node = node_of[leader]
                    t0 = time.perf_counter()
                    kinspect("lab", *[node if a == "NODE" else a for a in action])
                    command_s.append(time.perf_counter() - t0)
                    _wait(functools.partial(_moved_from, state, leader), 60, "a new leader")
                    failover_s.append(time.perf_counter() - t0)
                    kinspect("lab", *[node if a == "NODE" else a for a in undo])
                result[fault] = {"command_ms": [c * 1000 for c in command_s],
                                 "failover_s": failover_s}
                print(f"  {backend:8} {fault:16} command ms {describe(result[fault]['command_ms'])}"
                      f" | failover s {describe(failover_s)}", file=sys.stderr)
        finally:
            zk.stop()
            zk.close()
            t0 = time.perf_counter()
    result["down_s"] = time.perf_counter() - t0
    return result


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m bench.backends", description=__doc__).parse_args(argv)
    results = [measure(backend) for backend in ("process", "docker")]
    out = Path("bench/out/backends.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"{'backend':8} {'lab up':>7} {'lab down':>8}  fault: command p50 / failover p50 (max)")
    for r in results:
        faults = "  ".join(
            f"{f}: {sorted(r[f]['command_ms'])[ROUNDS // 2]:.0f} ms / "
            f"{sorted(r[f]['failover_s'])[ROUNDS // 2]:.1f} s ({max(r[f]['failover_s']):.1f})"
            for f in FAULTS)
        print(f"{r['backend']:8} {r['up_s']:6.1f}s {r['down_s']:7.1f}s  {faults}")
    print(f"(written to {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
