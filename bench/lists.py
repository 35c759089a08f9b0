"""`kinspect health --json` beside Kafka's own `kafka-topics --describe` filters.

An on-call engineer asks four questions of a cluster (under-replicated, under min ISR, at min
ISR, unavailable). Kafka's TopicCommand answers one per JVM; `kinspect health` answers all four
(and the rest of its verdict) in one run. On the lab, grown to `--partitions` partitions in
topics of 500 (RF 3, a broker stopped so the lists are not empty), both run from fresh
processes, alternately, `--runs` times; the medians are compared, and the last answers must
list the same partitions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from bench.lab import bench_lab, kinspect
from bench.observer import delete_topics
from kinspect.lab import dist
from kinspect.lab.topics import create_topics

FILTERS = {"under_replicated": "--under-replicated-partitions",
           "under_min_isr": "--under-min-isr-partitions",
           "at_min_isr": "--at-min-isr-partitions",
           "unavailable": "--unavailable-partitions"}
TOPIC_SIZE = 500


def kafka_lists(bootstrap: str) -> tuple[float, dict[str, set[str]]]:
    """The four filters, one TopicCommand each (as a person or a script runs them)."""
    kafka = dist.ensure()
    began = time.monotonic()
    out = {}
    for name, flag in FILTERS.items():
        lines = subprocess.run(kafka.tool_command("org.apache.kafka.tools.TopicCommand",
                                                  "--bootstrap-server", bootstrap, "--describe",
                                                  flag),
                               capture_output=True, text=True, check=True).stdout
        out[name] = {_name(line) for line in lines.splitlines() if "Partition:" in line}
    return time.monotonic() - began, out


def _name(line: str) -> str:
    cells = dict(c.split(": ", 1) for c in line.strip().split("\t") if ": " in c)
    return f"{cells['Topic']}-{cells['Partition']}"


def ours(bootstrap: str) -> tuple[float, dict[str, set[str]]]:
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kinspect", "health", "--json", "--bootstrap",
                           bootstrap], capture_output=True, text=True)
    report: dict[str, Any] = json.loads(proc.stdout)
    return time.monotonic() - began, {k: set(report[k]) for k in FILTERS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lists")
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    names = [f"lists-{i:02d}" for i in range(max(1, args.partitions // TOPIC_SIZE))]
    with bench_lab() as lab:
        bootstrap = lab["bootstrap"]
        for name in names:
            create_topics(bootstrap, {name: TOPIC_SIZE})
        kinspect("lab", "stop", "kafka3")
        try:
            time.sleep(15)  # the ISRs shrink (replica.lag.time.max.ms of the demo preset: 10 s)
            times: dict[str, list[float]] = {"kinspect": [], "kafka-topics": []}
            answers: dict[str, dict[str, set[str]]] = {}
            for _ in range(args.runs):
                for who, run in (("kinspect", ours), ("kafka-topics", kafka_lists)):
                    took, answers[who] = run(bootstrap)
                    times[who].append(took)
        finally:
            kinspect("lab", "start", "kafka3")
            delete_topics(bootstrap, names)
    same = answers["kinspect"] == answers["kafka-topics"]
    sizes = {k: len(v) for k, v in answers["kafka-topics"].items()}
    print(f"\n## The four lists ({args.partitions:,} partitions, RF 3, kafka3 stopped; "
          f"median of {args.runs} fresh processes)")
    print("| | time | lists |")
    print("|---|---:|---|")
    for who in ("kinspect", "kafka-topics"):
        what = "`kinspect health --json` (all four, and the rest of the verdict)" \
            if who == "kinspect" else "`kafka-topics --describe` with each of the four filters"
        print(f"| {what} | {statistics.median(times[who]):.2f} s | {json.dumps(sizes)} |")
    print(f"\nsame partitions in every list: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
