"""The price of `flush.messages=1`: Kafka's own ProducerPerformance on two topics of one lab,
Kafka's default (never fsync) beside an fsync after every append.

    python -m bench.flush_price [--count 200000] [--rounds 5] [--power]

Same lab, same partitions (3, RF 3, min ISR 2), acks=all, 100 B records, the same batching
(linger.ms=5) and no throttle; rounds alternate the two topics so drift hits both. Reported:
the median records/s, average and p99 latency of each, as ProducerPerformance prints them,
and the default's rate over the synced one's. `--power` measures on a `lab up --power` lab
(each broker's disk through kinspect's FUSE filesystem, what the power-loss scenarios run on);
without it the brokers write to this machine's disk directly, the price production pays.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

from bench.lab import bench_lab
from kinspect.lab.dist import ensure
from kinspect.lab.topics import create_topics

SIZE, PARTITIONS = 100, 3
TOPICS = {"flush-never": {}, "flush-every-message": {"flush.messages": "1"}}
RESULT = re.compile(r"(\d+) records sent, ([\d.]+) records/sec .*?, ([\d.]+) ms avg latency, "
                    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


def perf(bootstrap: str, topic: str, count: int) -> dict[str, float]:
    """One ProducerPerformance run: its own last line's rate and latencies."""
    props = [f"{k}={v}" for k, v in {"bootstrap.servers": bootstrap, "acks": "all",
                                     "linger.ms": "5"}.items()]
    command = ensure().tool_command(
        "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records",
        str(count), "--record-size", str(SIZE), "--throughput", "-1", "--producer-props",
        *props, heap="512m")
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=900).stdout
    found = RESULT.findall(out)
    if not found:
        raise SystemExit(f"bench: cannot read ProducerPerformance output:\n{out[-500:]}")
    _sent, rate, avg, _max, _p50, _p95, p99 = found[-1]
    return {"rate": float(rate), "avg_ms": float(avg), "p99_ms": float(p99)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.flush_price")
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--power", action="store_true",
                        help="on a lab made with --power (brokers' disks through FUSE)")
    args = parser.parse_args(argv)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in TOPICS}
    up_args = ["--power"] if args.power else []
    with bench_lab(reuse=False, up_args=up_args) as lab:
        bootstrap = lab["bootstrap"]
        for name, config in TOPICS.items():
            create_topics(bootstrap, {name: PARTITIONS}, 3, {"min.insync.replicas": "2",
                                                              **config})
        for name in TOPICS:  # warm-up, not counted
            perf(bootstrap, name, args.count // 4)
        for round_ in range(args.rounds):
            for name in TOPICS:
                print(f"bench: round {round_ + 1}/{args.rounds}: {name} …", file=sys.stderr)
                runs[name].append(perf(bootstrap, name, args.count))

    def median(name: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[name])

    disk = "kinspect's FUSE filesystem (--power)" if args.power else "this machine's disk"
    print(f"\n## The price of flush.messages=1 ({args.count:,} x {SIZE} B, {PARTITIONS} "
          f"partitions, RF 3, acks=all, on {disk}; median of {args.rounds}; load average "
          f"{os.getloadavg()[0]:.1f})")
    print("| topic | records/s | avg latency | p99 latency | runs (records/s) |")
    print("|---|---:|---:|---:|---|")
    for name in TOPICS:
        each = ", ".join(f"{r['rate'] / 1000:.1f}k" for r in runs[name])
        print(f"| {name} | {median(name, 'rate'):,.0f} | {median(name, 'avg_ms'):.1f} ms | "
              f"{median(name, 'p99_ms'):.0f} ms | {each} |")
    slower = median("flush-never", "rate") / median("flush-every-message", "rate")
    print(f"\nfsync after every append: {slower:.1f}x fewer records/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
