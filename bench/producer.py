"""Our load generator beside kcat (librdkafka in C) and Kafka's ProducerPerformance.

    python -m bench.producer [--count 500000] [--rounds 3] [--producers 1,2]
                             [--rss 1000000,10000000]

Same topic (6 partitions, RF 3), same count and size (100 B), acks=all and the same batching
for all three: linger.ms=5, batch.size=1000000 (librdkafka's default, given to the Java client
too), and for the two librdkafka clients batch.num.messages=10000 and
queue.buffering.max.messages=200000 (what kinspect sets). kcat writes no ledger; ours records
every delivery report in the Parquet ledger. One kcat run warms the brokers first (not
counted); then rounds alternate the tools. Medians are reported; "of kcat" is the median of
each round's ratio to the kcat run just before it (the machine is shared: conditions drift
between rounds more than within one).

kcat's rate is count / its wall time (process start included, a few ms); ours is acknowledged
/ (last ack - first send) from the ledger's footers, and also acknowledged / wall time of
`kinspect load run` (Python start and the summary included). ProducerPerformance reports its
own. CPU per message is each tool's whole process tree (user + system, startup included):
on a shared 2-core machine it says more than a rate does. `--rss` runs `kinspect load run`
at each count and samples the resident memory of its process tree (runner + workers) every
100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from confluent_kafka import Consumer, TopicPartition

from bench.lab import bench_lab
from bench.memory import descendants
from kinspect.lab.dist import ensure
from kinspect.lab.topics import create_topics

TOPIC, PARTITIONS, SIZE = "bench-load", 6, 100
BATCHING = {"linger.ms": "5", "batch.size": "1000000"}
LIBRDKAFKA = {**BATCHING, "batch.num.messages": "10000", "queue.buffering.max.messages": "200000"}


def high_watermarks(bootstrap: str) -> int:
    """The topic's messages in all (sum of high watermarks): what a run really added."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kinspect-bench",
                         "enable.auto.commit": False})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
                   for p in range(PARTITIONS))
    finally:
        consumer.close()


def children_cpu_s() -> float:
    """CPU seconds (user + system) of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def kcat(bootstrap: str, count: int, payload: Path) -> dict[str, float]:
    """kcat -P from a file of `count` lines of SIZE bytes; msg/s over its wall time."""
    before = high_watermarks(bootstrap)
    options = [arg for k, v in {"acks": "all", **LIBRDKAFKA}.items() for arg in ("-X", f"{k}={v}")]
    with payload.open("rb") as lines:
        cpu, started = children_cpu_s(), time.perf_counter()
        proc = subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", TOPIC, *options],
                              stdin=lines, capture_output=True, text=True, timeout=600)
        wall, cpu = time.perf_counter() - started, children_cpu_s() - cpu
    added = high_watermarks(bootstrap) - before
    if proc.returncode != 0 or added != count:
        raise SystemExit(f"bench: kcat wrote {added} of {count}: {proc.stderr[-500:]}")
    return {"rate": count / wall, "cpu_us": cpu / count * 1e6}


def producer_performance(bootstrap: str, count: int) -> dict[str, float]:
    import re

    props = [f"{k}={v}" for k, v in {"bootstrap.servers": bootstrap, "acks": "all",
                                     **BATCHING}.items()]
    command = ensure().tool_command(
        "org.apache.kafka.tools.ProducerPerformance", "--topic", TOPIC, "--num-records",
        str(count), "--record-size", str(SIZE), "--throughput", "-1", "--producer-props",
        *props, heap="512m")
    cpu = children_cpu_s()
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600).stdout
    cpu = children_cpu_s() - cpu
    match = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", out)
    if not match:
        raise SystemExit(f"bench: cannot read ProducerPerformance output:\n{out[-500:]}")
    return {"rate": float(match[-1][1]), "cpu_us": cpu / count * 1e6}


def ledger_span_ms(run_dir: Path) -> int:
    """Last ack - first send over every chunk, from the footers' statistics alone."""
    first, last = None, None
    for path in (run_dir / "ledger").glob("p*.parquet"):
        meta = pq.read_metadata(path)
        names = meta.schema.to_arrow_schema().names
        for group in range(meta.num_row_groups):
            send = meta.row_group(group).column(names.index("send_ts")).statistics
            ack = meta.row_group(group).column(names.index("ack_ts")).statistics
            if send is not None and send.has_min_max:
                first = send.min if first is None else min(first, send.min)
            if ack is not None and ack.has_min_max:
                last = ack.max if last is None else max(last, ack.max)
    return (last - first) if first is not None and last is not None else 0


def load_command(count: int, producers: int, run_dir: Path) -> list[str]:
    options = [arg for k, v in LIBRDKAFKA.items() for arg in ("-X", f"{k}={v}")
               if k != "queue.buffering.max.messages"]  # kinspect's own setting already
    return [sys.executable, "-m", "kinspect", "load", "run", "--topic", TOPIC, "--acks", "all",
            "--count", str(count), "--rate", "max", "--producers", str(producers), "--size",
            str(SIZE), "--no-timeline", "--json", "--run-dir", str(run_dir), *options]


def ours(count: int, producers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kinspect-bench-run-") as tmp:
        run_dir = Path(tmp) / "run"
        cpu, started = children_cpu_s(), time.perf_counter()
        proc = subprocess.run(load_command(count, producers, run_dir), capture_output=True,
                              text=True, timeout=1800)
        wall, cpu = time.perf_counter() - started, children_cpu_s() - cpu
        if proc.returncode != 0:
            raise SystemExit(f"bench: kinspect load run failed: {proc.stderr[-500:]}")
        summary = json.loads(proc.stdout)
        span_ms = ledger_span_ms(run_dir)
    acked = int(summary["acked"])
    if acked != count:
        raise SystemExit(f"bench: kinspect acknowledged {acked} of {count}: {summary}")
    return {"rate": acked / max(span_ms / 1000, 1e-3), "wall_rate": acked / wall,
            "cpu_us": cpu / count * 1e6}


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_rss(count: int, producers: int) -> dict[str, Any]:
    """`kinspect load run` at `count`: peak RSS of its tree (sum) and of its largest process."""
    with tempfile.TemporaryDirectory(prefix="kinspect-bench-rss-") as tmp:
        started = time.perf_counter()
        proc = subprocess.Popen(load_command(count, producers, Path(tmp) / "run"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        peak = {"tree": 0, "largest": 0}

        def sample() -> None:
            while proc.poll() is None:
                sizes = [_rss_kb(pid) for pid in descendants(proc.pid)]
                peak["tree"] = max(peak["tree"], sum(sizes))
                peak["largest"] = max(peak["largest"], max(sizes, default=0))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out, err = proc.communicate(timeout=3600)
        sampler.join()
        if proc.returncode != 0:
            raise SystemExit(f"bench: kinspect load run failed: {err.decode()[-500:]}")
    summary = json.loads(out)
    return {"count": count, "acked": summary["acked"], "tree_mb": peak["tree"] / 1024,
            "largest_mb": peak["largest"] / 1024, "wall_s": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.producer")
    parser.add_argument("--count", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--producers", default="1,2", help="kinspect's producer counts")
    parser.add_argument("--no-java", action="store_true", help="skip ProducerPerformance")
    parser.add_argument("--rss", default="", help="counts to measure peak RSS at, e.g. 1000000")
    args = parser.parse_args(argv)
    producer_counts = [int(p) for p in args.producers.split(",") if p]
    runs: dict[str, list[dict[str, float]]] = {}
    rss = []
    with bench_lab() as lab, tempfile.TemporaryDirectory(prefix="kinspect-bench-kcat-") as tmp:
        bootstrap = lab["bootstrap"]
        create_topics(bootstrap, {TOPIC: PARTITIONS})
        payload = Path(tmp) / "payload"
        payload.write_bytes((b"x" * SIZE + b"\n") * args.count)
        print("bench: warm-up (kcat, not counted) …", file=sys.stderr)
        kcat(bootstrap, args.count, payload)  # the brokers' JIT and page cache, for everyone
        for round_ in range(args.rounds):
            print(f"bench: round {round_ + 1}/{args.rounds}: kcat …", file=sys.stderr)
            runs.setdefault("kcat", []).append(kcat(bootstrap, args.count, payload))
            for producers in producer_counts:
                name = f"kinspect, {producers} producer{'s' if producers > 1 else ''}"
                print(f"bench: round {round_ + 1}: {name} …", file=sys.stderr)
                runs.setdefault(name, []).append(ours(args.count, producers))
            if not args.no_java:
                print(f"bench: round {round_ + 1}: ProducerPerformance …", file=sys.stderr)
                runs.setdefault("ProducerPerformance", []).append(
                    producer_performance(bootstrap, args.count))
        for count in [int(c) for c in args.rss.split(",") if c]:
            print(f"bench: peak RSS of kinspect load run at {count:,} …", file=sys.stderr)
            rss.append(peak_rss(count, 1))
    def median(name: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[name])

    def of_kcat(name: str) -> float:  # round by round: kcat ran just before, same conditions
        return statistics.median(mine["rate"] / theirs["rate"]
                                 for mine, theirs in zip(runs[name], runs["kcat"], strict=True))

    print(f"\n## Producers side by side ({args.count:,} x {SIZE} B, {PARTITIONS} partitions, "
          f"RF 3, acks=all, median of {args.rounds}; load average {os.getloadavg()[0]:.1f})")
    print("| client | msg/s | of kcat | msg/s incl. process start | CPU µs/msg | runs |")
    print("|---|---:|---:|---:|---:|---|")
    for name, values in runs.items():
        rate = median(name, "rate")
        wall = f"{median(name, 'wall_rate'):,.0f}" if "wall_rate" in values[0] else "-"
        each = ", ".join(f"{v['rate'] / 1000:.0f}k" for v in values)
        print(f"| {name} | {rate:,.0f} | {of_kcat(name):.0%} | {wall} | "
              f"{median(name, 'cpu_us'):.2f} | {each} |")
    if rss:
        print("\n| `kinspect load run`, 1 producer | peak RSS, process tree | largest process | "
              "wall |")
        print("|---|---:|---:|---:|")
        for row in rss:
            print(f"| {row['count']:,} messages | {row['tree_mb']:,.0f} MB | "
                  f"{row['largest_mb']:,.0f} MB | {row['wall_s']:.0f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
