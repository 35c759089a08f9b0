"""`kinspect snapshot --json` beside `kcat -L -J` and `kafka-topics --describe` at 2,000, 5,000
and 10,000 partitions (`--steps` for more, `--mode kraft` for a KRaft lab).

One lab, grown step by step: topics `snap-NN` of 1,000 partitions each are added until the
bench topics total the step's size (the lab's own topics come on top). At each step, once every
partition has a leader, the three run from fresh processes, in turn, 5 times, each given only
the bootstrap servers (as against any cluster); the medians are compared, and the last answers
must list the same partitions with the same leaders.
Replication factor 2 by default: 10,000 partitions at RF 3 is 30,000 replicas, 10,000 logs per
broker, more than three 384 MB brokers on two cores carry (`--rf 3` to try).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from bench.lab import bench_lab
from bench.observer import delete_topics
from kinspect.clients.kafka import quiet_admin
from kinspect.lab import dist

STEPS = (2000, 5000, 10000)
TOPIC_SIZE = 1000
RUNS = 5
Leaders = dict[tuple[str, int], int]


def grow(bootstrap: str, total: int, rf: int) -> list[str]:
    """Bench topics totalling `total` partitions (created as needed), every one with a leader."""
    admin = quiet_admin(bootstrap, **{"socket.timeout.ms": 30000})
    names = [f"snap-{i:02d}" for i in range(total // TOPIC_SIZE)]
    existing = set(_metadata(admin))
    missing = [NewTopic(n, TOPIC_SIZE, rf) for n in names if n not in existing]
    for topic in missing:  # one at a time: a small-heap controller chokes on a burst
        print(f"bench: creating {topic.topic} ({TOPIC_SIZE} partitions, RF {rf}) …",
              file=sys.stderr)
        try:
            admin.create_topics([topic], request_timeout=300,
                                operation_timeout=300)[topic.topic].result()
        except KafkaException as exc:
            print(f"bench: create_topics said {exc}; waiting for the partitions", file=sys.stderr)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        topics = _metadata(admin)
        if all(n in topics and len(topics[n].partitions) == TOPIC_SIZE
               and all(p.leader >= 0 for p in topics[n].partitions.values()) for n in names):
            return names
        time.sleep(2.0)
    raise SystemExit(f"bench: the bench topics never got all {total:,} leaders")


def _metadata(admin: AdminClient, timeout_s: float = 300) -> dict[str, Any]:
    """Every topic's metadata, once the brokers answer in full: a lab restarted with thousands
    of partitions loads its logs for a while, and answers "partial response" meanwhile."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return dict(admin.list_topics(timeout=60).topics)
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(2.0)


def timed(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(command)} failed: {proc.stderr.strip()[-300:]}")
    return elapsed, proc.stdout


def ours_leaders(out: str) -> Leaders:
    return {(t["name"], p["partition"]): p["leader"] if p["leader"] is not None else -1
            for t in json.loads(out)["topics"] for p in t["partitions"]}


def kcat_leaders(out: str) -> Leaders:
    return {(t["topic"], p["partition"]): p["leader"]
            for t in json.loads(out)["topics"] for p in t["partitions"]}


def topics_leaders(out: str) -> Leaders:
    """`kafka-topics --describe`'s partition lines (tests/helpers/oracles.py reads the rest)."""
    out_leaders: Leaders = {}
    for line in out.splitlines():
        cells = dict(c.split(": ", 1) for c in line.strip().split("\t") if ": " in c)
        if "Partition" in cells and "Topic" in cells:
            leader = cells.get("Leader", "none")
            out_leaders[(cells["Topic"], int(cells["Partition"]))] = (
                -1 if leader in ("none", "-1") else int(leader))
    return out_leaders


def same_answer(ours: Leaders, theirs: Leaders, who: str = "kcat") -> str | None:
    """None when both list the same partitions with the same leaders, else what differs."""
    if set(ours) != set(theirs):
        extra, missing = set(ours) - set(theirs), set(theirs) - set(ours)
        return f"partitions differ: {len(extra)} only ours, {len(missing)} only {who}'s"
    wrong = [key for key in ours if ours[key] != theirs[key]]
    return f"{len(wrong)} leaders differ, e.g. {wrong[0]}" if wrong else None


def installed_bytecode() -> None:
    """kinspect's modules compiled, as pip leaves an installed package: this machine sets
    PYTHONDONTWRITEBYTECODE, under which every fresh run compiled ~50 modules again (~0.1 s)
    that a user's install never compiles twice."""
    import kinspect

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(kinspect.__file__).parent)],
                   check=True)


def measure(lab: dict[str, Any], runs: int, tool_heap: str = "256m") -> dict[str, Any]:
    """Fresh runs of the three tools in turn; medians and the agreement of the last answers."""
    bootstrap = lab["bootstrap"]
    installed_bytecode()
    commands = {
        "ours": [sys.executable, "-m", "kinspect", "snapshot", "--json", "--bootstrap", bootstrap],
        "kcat": ["kcat", "-b", bootstrap, "-L", "-J", "-m", "30"],
        # kafka-topics.sh's own default heap (kafka-run-class.sh: -Xmx256M) unless --tool-heap
        "topics": dist.ensure().tool_command("org.apache.kafka.tools.TopicCommand",
                                             "--bootstrap-server", bootstrap, "--describe",
                                             heap=tool_heap)}
    timed(commands["ours"])  # warm the page cache: every run after this one is comparable
    times: dict[str, list[float]] = {who: [] for who in commands}
    outs: dict[str, str] = {}
    for _ in range(runs):
        for who, command in commands.items():
            elapsed, outs[who] = timed(command)
            times[who].append(elapsed)
    ours = ours_leaders(outs["ours"])
    disagreement = (same_answer(ours, kcat_leaders(outs["kcat"]))
                    or same_answer(ours, topics_leaders(outs["topics"]), "kafka-topics"))
    return {"partitions": len(ours), "disagreement": disagreement,
            **{f"{who}_s": statistics.median(t) for who, t in times.items()},
            **{f"{who}_all": t for who, t in times.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.snapshot")
    parser.add_argument("--rf", type=int, default=2, help="replication factor (default 2)")
    parser.add_argument("--steps", type=int, nargs="+", default=list(STEPS))
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--keep", action="store_true", help="leave the bench topics")
    parser.add_argument("--tool-heap", default="256m",
                        help="kafka-topics' heap (default 256m, as kafka-topics.sh runs it)")
    parser.add_argument("--mode", choices=("zookeeper", "kraft"), default="zookeeper",
                        help="the lab's mode when one is started for the run")
    args = parser.parse_args(argv)
    if shutil.which("kcat") is None:
        print("bench: kcat is not installed (make setup installs it)", file=sys.stderr)
        return 1
    rows = []
    failed = False
    with bench_lab(up_args=("--mode", args.mode)) as lab:
        try:
            for step in sorted(args.steps):
                grow(lab["bootstrap"], step, args.rf)
                row = {"step": step, **measure(lab, args.runs, args.tool_heap)}
                rows.append(row)
                failed |= row["disagreement"] is not None
                print(f"bench: {json.dumps(row)}", file=sys.stderr)
        finally:
            if not args.keep:  # a reused lab goes back to its own size for the next suite
                delete_topics(lab["bootstrap"], [f"snap-{i:02d}" for i in
                                                 range(max(args.steps) // TOPIC_SIZE)])
    print(f"\n## Snapshot (RF {args.rf}, {args.mode} lab, median of {args.runs} fresh processes)")
    print("| partitions in the cluster | `kinspect snapshot --json` | `kcat -L -J` | "
          "`kafka-topics --describe` | same answer |")
    print("|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['partitions']:,} | {row['ours_s']:.2f} s | {row['kcat_s']:.3f} s | "
              f"{row['topics_s']:.2f} s | {row['disagreement'] or 'yes'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
