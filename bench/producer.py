"""Our load generator against Kafka's own ProducerPerformance: same topic, size, acks; unthrottled.

ProducerPerformance counts a record when its callback fires; so do we, and we also write every
report to the Parquet ledger. Both rates are records acknowledged per second of sending.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from bench.lab import bench_lab, kinspect
from kinspect.lab.dist import ensure
from kinspect.lab.topics import create_topics
from kinspect.load.ledger import read_ledger

TOPIC, PARTITIONS, SIZE = "bench-load", 6, 100
_RATE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def producer_performance(bootstrap: str, acks: str, count: int) -> float:
    command = ensure().tool_command(
        "org.apache.kafka.tools.ProducerPerformance", "--topic", TOPIC, "--num-records",
        str(count), "--record-size", str(SIZE), "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={bootstrap}", f"acks={acks}", heap="512m")
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600).stdout
    match = _RATE.findall(out)
    if not match:
        raise SystemExit(f"bench: cannot read ProducerPerformance output:\n{out[-500:]}")
    return float(match[-1][1])


def ours(acks: str, count: int, producers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kinspect-bench-run-") as tmp:
        run_dir = Path(tmp) / "run"
        started = time.perf_counter()
        summary = json.loads(kinspect("load", "run", "--topic", TOPIC, "--acks", acks, "--count",
                                      str(count), "--rate", "max", "--producers", str(producers),
                                      "--size", str(SIZE), "--no-timeline", "--json",
                                      "--run-dir", str(run_dir)))
        wall = time.perf_counter() - started
        ledger = read_ledger(run_dir)
        span_ms = pc.max(ledger["ack_ts"]).as_py() - pc.min(ledger["send_ts"]).as_py()
    acked = int(summary["acked"])
    return {"acked": acked, "failed": summary["failed"], "unknown": summary["unknown"],
            "rate": acked / max(span_ms / 1000, 1e-3), "wall_rate": acked / wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.producer")
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--producers", type=int, default=2)
    args = parser.parse_args(argv)
    rows = []
    with bench_lab() as lab:
        create_topics(lab["bootstrap"], {TOPIC: PARTITIONS})
        for acks in ("1", "all"):
            print(f"bench: acks={acks}: ProducerPerformance …", file=sys.stderr)
            java = producer_performance(lab["bootstrap"], acks, args.count)
            print(f"bench: acks={acks}: kinspect load run ({args.producers} producers) …",
                  file=sys.stderr)
            mine = ours(acks, args.count, args.producers)
            rows.append((acks, java, mine))
    print(f"\n## Load generator vs ProducerPerformance ({args.count:,} x {SIZE} B, "
          f"{PARTITIONS} partitions, RF 3, unthrottled)")
    print("| acks | ProducerPerformance msg/s | kinspect msg/s (ledger span) | ratio | "
          "kinspect incl. process start |")
    print("|---|---|---|---|---|")
    for acks, java, mine in rows:
        print(f"| {acks} | {java:,.0f} | {mine['rate']:,.0f} | {mine['rate'] / java:.0%} | "
              f"{mine['wall_rate']:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
