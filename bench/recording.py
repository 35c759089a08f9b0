"""Recording size and replay seek time at 2,000 partitions: a minute idle, a minute from a
broker kill (its leaderships move: a failover of ~670 partitions), then seeks in what was
recorded. Run under the lab lock: `flock /tmp/kinspect-lab.lock python -m bench.recording`."""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from bench.lab import bench_lab, describe, kinspect
from bench.observer import _create_big_topic
from kinspect.sources.observer import Observer
from kinspect.sources.playback import Recording
from kinspect.sources.recording import Recorder


def size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.glob("seg-*"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recording", description=__doc__)
    parser.add_argument("window_s", nargs="?", type=float, default=60.0,
                        help="seconds of each phase, idle and after the kill (default 60)")
    window_s = parser.parse_args(argv).window_s
    with bench_lab() as lab, tempfile.TemporaryDirectory() as tmp:
        _create_big_topic(lab["bootstrap"])
        expected = {n["broker_id"]: n["address"] for n in lab["nodes"] if n.get("broker_id")}
        observer = Observer(lab["bootstrap"], lab["zookeeper"], expected_brokers=expected)
        root = Path(tmp) / "recording"
        recorder = Recorder(root)
        observer.subscribe(recorder.snapshot)
        observer.start()
        observer.wait_ready(60)
        time.sleep(5)  # the first keyframe and settling
        base = size(root)
        time.sleep(window_s)
        idle = size(root) - base
        killed = kinspect("lab", "kill", "kafka2")
        print(f"bench: {killed.strip()}", file=sys.stderr)
        time.sleep(window_s)
        failover = size(root) - base - idle
        kinspect("lab", "start", "kafka2")
        observer.stop()
        recorder.close()
        total = size(root)
        rec = Recording(root)
        seeks = []
        for _ in range(30):
            rec._cache.clear()  # a cold seek: decode the segment from its keyframe
            started = time.perf_counter()
            rec.frame(rec.locate(random.randint(rec.start_ms, rec.end_ms)))
            seeks.append((time.perf_counter() - started) * 1000)
    per_min = 60 / window_s
    print("\n## Recording (2,000 partitions, RF 3, keyframe every 30 s)")
    print(f"- idle: {idle * per_min / 1024:,.1f} KiB per minute")
    print(f"- minute from a broker kill: {failover * per_min / 1024:,.1f} KiB")
    print(f"- whole recording: {total / 1024:,.1f} KiB in {len(rec.paths)} segments")
    print(f"- cold seek (decode a segment from its keyframe), ms: {describe(seeks)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
