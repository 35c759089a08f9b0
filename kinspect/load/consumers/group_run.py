"""Running a consumer group: C worker processes, restarts after a crash, a summary.

The consumers' files live in RUN_DIR/consumer/ (settings, ledger, stats, offsets, summary), so
a producer run and the group that reads it share one run dir and one run id. The runner is
registered like a load (RUN_DIR/consumer/load.pid, KINSPECT_HOME/loads/): `kinspect consume
stop`, `lab down` and the TUI stop it the same way. The group's committed offsets are read at
the start and at the end (offsets.json): what lies between them is what the group took
responsibility for, which is what the post-mortem holds its processing to.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kinspect.errors import KinspectError
from kinspect.load.active import registered
from kinspect.load.consumers.consumer_ledger import ledger_path
from kinspect.load.consumers.settings import ConsumeSettings, consumer_dir
from kinspect.load.consumers.stats import read_consumer_stats
from kinspect.load.producer_run import check_topic, hand_over
from kinspect.load.rundir import PID_FILE, new_run_id, now_ms, read_run

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

OFFSETS_FILE = "offsets.json"
SUMMARY_FILE = "summary.json"
RESTART_PAUSE_S = 1.0


def check_consumer_dir(run_dir: Path) -> None:
    """One group per run dir: never mix two groups' ledgers."""
    folder = ledger_path(run_dir)
    if folder.is_dir() and any(folder.iterdir()):
        raise KinspectError(f"{run_dir} already holds a consumer ledger; use a new --run-dir")


@dataclass(frozen=True)
class PartitionOffsets:
    """One partition's log start and high watermark, and the group's committed offset there
    (None: never committed)."""

    partition: int
    log_start: int
    high_watermark: int
    committed: int | None

    def lag(self) -> int:
        """kafka-consumer-groups' LAG: the high watermark less the committed offset (a commit
        at 0 is a commit); a group that never committed counts from the log start."""
        if self.committed is None:
            return self.high_watermark - self.log_start
        return self.high_watermark - self.committed

    def to_json(self) -> JsonObject:
        return {"partition": self.partition, "log_start": self.log_start,
                "high_watermark": self.high_watermark, "committed": self.committed}


@dataclass(frozen=True)
class GroupOffsets:
    """The group's offsets on each partition of its topic at `ts` (epoch ms): offsets.json's
    `start` and `end`."""

    ts: int
    partitions: tuple[PartitionOffsets, ...]

    def to_json(self) -> JsonObject:
        return {"ts": self.ts, "partitions": [p.to_json() for p in self.partitions]}


def group_offsets(bootstrap: str, group: str, topic: str, partitions: int,
                  extra: dict[str, str], timeout_s: float = 60.0) -> GroupOffsets:
    """The group's committed offset (None: never committed) and each partition's log start and
    high watermark, read without joining the group. A cluster still settling (a coordinator
    or leader just moved: a new topic, a failover) is asked again until `timeout_s`."""
    consumer = Consumer({**extra, "bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "log_level": 0})
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                return _offsets_once(consumer, topic, partitions)
            except KafkaException as exc:
                if time.monotonic() >= deadline:
                    raise KinspectError(f"cannot read the offsets of group {group!r}: "
                                        f"{exc.args[0].str()}") from None
                time.sleep(1.0)
    finally:
        consumer.close()


def _offsets_once(consumer: Consumer, topic: str, partitions: int) -> GroupOffsets:
    wanted = [TopicPartition(topic, p) for p in range(partitions)]
    rows = []
    for tp in consumer.committed(wanted, timeout=30):
        if tp.error is not None:
            raise KafkaException(tp.error)
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=15)
        committed = None
        if tp.offset >= 0:  # a negative offset: none committed (OFFSET_INVALID)
            committed = tp.offset
        rows.append(PartitionOffsets(tp.partition, low, high, committed))
    return GroupOffsets(now_ms(), tuple(rows))


def format_progress(totals: Mapping[str, int], elapsed: float) -> str:
    return (f"{elapsed:6.1f}s  received {totals['received']:>9,}  processed "
            f"{totals['processed']:>9,}  failed {totals['failed']:>6,}  aborted "
            f"{totals['aborted']:>6,}  commits {totals['commits']:>7,}  crashes "
            f"{totals['crashes']}")


def run_consumers(settings: ConsumeSettings, run_dir: Path,
                  progress: Callable[[str], None] | None = None,
                  secret_files: Sequence[Path] = ()) -> JsonObject:
    """Run the group until its workers stop (duration, idle, SIGTERM); return the summary."""
    settings.validate()
    check_consumer_dir(run_dir)
    partitions = check_topic(settings.bootstrap, settings.topic, config=settings.extra)
    if settings.output is not None:
        check_topic(settings.bootstrap, settings.output, config=settings.extra)
    # A group reading along with a load shares its run dir; the load gives the run its id
    # (it may begin after the group has started, so the group never claims the run dir).
    info = read_run(run_dir)
    run_id = info.run_id if info else (settings.run_id or new_run_id())
    settings = settings.with_run(run_id)
    folder = consumer_dir(run_dir)
    settings.save(run_dir, secret_files)
    start = group_offsets(settings.bootstrap, settings.group, settings.topic, partitions,
                          settings.extra)
    with registered(folder, settings.topic, settings.bootstrap, "consumer group",
                    f"kinspect consume stop --run-dir {run_dir.resolve()}"):
        elapsed, stopped, crashes = _run_workers(settings, run_dir, progress)
    end = group_offsets(settings.bootstrap, settings.group, settings.topic, partitions,
                        settings.extra)
    offsets = {"start": start.to_json(), "end": end.to_json()}
    (folder / OFFSETS_FILE).write_text(json.dumps(offsets, indent=2))
    summary: JsonObject = {**read_consumer_stats(run_dir), "run_id": run_id, "group": settings.group,
               "topic": settings.topic, "commit": settings.commit, "output": settings.output,
               "elapsed_s": round(elapsed, 3), "stopped": stopped, "crashes": crashes,
               "lag_at_end": sum(p.lag() for p in end.partitions)}
    (folder / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
    return summary


def _start(run_dir: Path, consumer: int, incarnation: int,
           settings: ConsumeSettings) -> subprocess.Popen[bytes]:
    """A worker, handed the client properties (secrets included) on its stdin."""
    worker = subprocess.Popen([sys.executable, "-m", "kinspect.load.consumers.consumer_worker",
                               "--run-dir", str(run_dir.resolve()), "--consumer", str(consumer),
                               "--incarnation", str(incarnation), "--parent", str(os.getpid()),
                               "--config-on-stdin"], stdin=subprocess.PIPE)
    hand_over(worker, json.dumps({"extra": settings.extra}).encode())
    return worker


def _run_workers(settings: ConsumeSettings, run_dir: Path,
                 progress: Callable[[str], None] | None) -> tuple[float, bool, int]:
    """Start C workers; start a new incarnation of one that was killed, when asked."""
    folder = consumer_dir(run_dir)
    (folder / PID_FILE).write_text(str(os.getpid()))
    workers = {c: (_start(run_dir, c, 0, settings), 0) for c in range(settings.consumers)}
    stopping = False
    crashed: set[tuple[int, int]] = set()

    def stop(*_args: Any) -> None:
        nonlocal stopping
        stopping = True
        for worker, _ in workers.values():
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    started = time.monotonic()
    try:
        while True:
            time.sleep(0.5)
            for consumer, (worker, incarnation) in list(workers.items()):
                worker.poll()
                if worker.returncode != -signal.SIGKILL or (consumer, incarnation) in crashed:
                    continue
                crashed.add((consumer, incarnation))
                if settings.restart and not stopping:
                    time.sleep(RESTART_PAUSE_S)  # as a supervisor would: not in a tight loop
                    workers[consumer] = (_start(run_dir, consumer, incarnation + 1, settings),
                                         incarnation + 1)
            if progress:
                progress(format_progress(read_consumer_stats(run_dir), time.monotonic() - started))
            if all(w.poll() is not None for w, _ in workers.values()):
                break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        (folder / PID_FILE).unlink(missing_ok=True)
    return time.monotonic() - started, stopping, len(crashed)


def main(argv: list[str] | None = None) -> int:
    """Run the group whose settings are saved in RUN_DIR/consumer (a scenario's): one JSON
    summary on stdout; an error is one line and exit 2."""
    import argparse
    from dataclasses import replace

    from kinspect.profiles import resolve_reference

    parser = argparse.ArgumentParser(prog="kinspect-consumers")
    parser.add_argument("--run-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        settings = ConsumeSettings.load(args.run_dir)
        settings = replace(settings, extra={k: resolve_reference(v, k, "settings.json")
                                            for k, v in settings.extra.items()})
        print(json.dumps(run_consumers(settings, args.run_dir)))
    except KinspectError as exc:
        print(f"kinspect-consumers: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
