"""Peak memory of `kinspect load run` + `kinspect verify` at 1 M and 10 M messages.

    python -m bench.memory [--counts 1000000,10000000] [--acks all] [--producers 1]

Each count gets a topic of its own (6 partitions, RF 3) on one lab, 100-byte messages at
--rate max. The resident memory of each command's whole process tree (the runner and its
worker processes; verify's one process) is sampled from /proc every 100 ms; the peak is the
largest sum seen. Memory is bounded when the peak does not grow with the count: the ratio
RSS(10 M) / RSS(1 M) is what we aim to keep under 1.5, for load and verify each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.lab import bench_lab
from kinspect.lab.topics import create_topics

PARTITIONS, SIZE = 6, 100
PAGE = os.sysconf("SC_PAGE_SIZE")


def children() -> dict[int, list[int]]:
    """Every process's children, from /proc/*/stat."""
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(root: int) -> list[int]:
    """root and every process under it."""
    tree, out, todo = children(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(tree.get(pid, []))
    return out


def tree_rss(pid: int) -> dict[str, int]:
    """Resident bytes of pid and all its descendants, in all and by role (the command itself,
    its load workers, anything else it started); {} once it is gone."""
    out: dict[str, int] = {}
    for current in descendants(pid):
        try:
            rss = int(Path(f"/proc/{current}/statm").read_text().split()[1]) * PAGE
            cmdline = Path(f"/proc/{current}/cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        role = ("command" if current == pid else
                "worker" if b"kinspect.load.producer_worker" in cmdline else "other")
        out[role] = out.get(role, 0) + rss
        out["tree"] = out.get("tree", 0) + rss
    return out


@dataclass
class Measured:
    seconds: float
    peak_bytes: int  # the whole tree's
    peaks: dict[str, int]  # each role's own peak
    stdout: str


def measure(cmd: list[str], timeout: float = 1800) -> Measured:
    """Run cmd, sampling its process tree's RSS every 100 ms; its peak and wall time."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks: dict[str, int] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for role, rss in tree_rss(proc.pid).items():
                peaks[role] = max(peaks.get(role, 0), rss)
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd[2:5])} failed: {err.strip()[-500:]}")
    return Measured(time.perf_counter() - started, peaks.get("tree", 0), peaks, out)


def kinspect_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kinspect", *args]


def one(bootstrap: str, count: int, acks: str, producers: int, root: Path,
        extra: tuple[str, ...] = ()) -> dict[str, float]:
    topic = f"bench-memory-{count}"
    create_topics(bootstrap, {topic: PARTITIONS})
    run_dir = root / f"run-{count}"
    load = measure(kinspect_cmd("load", "run", "--topic", topic, "--count", str(count),
                                "--rate", "max", "--size", str(SIZE), "--acks", acks,
                                "--producers", str(producers), "--run-dir", str(run_dir),
                                "--json", *extra))
    summary = json.loads(load.stdout)
    verify = measure(kinspect_cmd("verify", "--topic", topic, "--run-dir", str(run_dir),
                                  "--json"))
    read = json.loads(verify.stdout)["in_log"]
    if summary["acked"] != count or read < count:
        raise SystemExit(f"bench: {count:,}: acked {summary['acked']:,}, read back {read:,}")
    return {"count": count, "load_s": load.seconds, "load_mib": load.peak_bytes / 2**20,
            "runner_mib": load.peaks.get("command", 0) / 2**20,
            "workers_mib": load.peaks.get("worker", 0) / 2**20,
            "load_rate": count / load.seconds, "verify_s": verify.seconds,
            "verify_mib": verify.peak_bytes / 2**20, "verify_rate": read / verify.seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="1000000,10000000")
    parser.add_argument("--acks", default="all")
    parser.add_argument("--producers", type=int, default=1)
    parser.add_argument("--no-timeline", action="store_true",
                        help="load without observing the cluster (default: observed, as users run it)")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    rows = []
    with bench_lab(reuse=False) as lab, tempfile.TemporaryDirectory(prefix="kinspect-mem-") as tmp:
        for count in counts:
            row = one(lab["bootstrap"], count, args.acks, args.producers, Path(tmp),
                      ("--no-timeline",) if args.no_timeline else ())
            rows.append(row)
            print(f"{count:>11,}  load {row['load_mib']:7.0f} MiB peak (runner "
                  f"{row['runner_mib']:.0f}, workers {row['workers_mib']:.0f}; {row['load_s']:.1f} s, "
                  f"{row['load_rate']:,.0f} msg/s wall)  verify {row['verify_mib']:6.0f} MiB peak "
                  f"({row['verify_s']:.1f} s, {row['verify_rate']:,.0f} records/s)", flush=True)
            shutil.rmtree(Path(tmp) / f"run-{count}", ignore_errors=True)
    if len(rows) >= 2:
        small, large = rows[0], rows[-1]
        print(f"RSS({large['count']:,}) / RSS({small['count']:,}): load "
              f"{large['load_mib'] / small['load_mib']:.2f}, verify "
              f"{large['verify_mib'] / small['verify_mib']:.2f}")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
