"""Running a load: P worker processes, live progress, a summary, and stop from elsewhere.

The runner writes its pid to RUN_DIR/load.pid so another process (the TUI, `kinspect load
stop`) can stop it with SIGTERM; the workers then record what is still in flight as unknown.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from kinspect.clients.kafka import client_config, list_topics
from kinspect.errors import KinspectError
from kinspect.load.active import registered
from kinspect.load.counts import ProducerCounts
from kinspect.load.run_timeline import recording_timeline
from kinspect.load.rundir import (
    CRASH_SUFFIX,
    FAILURE_SUFFIX,
    LEDGER_DIR,
    PID_FILE,
    STATS_DIR,
    SUMMARY_FILE,
    WORKERS_FILE,
    begin_run,
    mark,
    now_ms,
)
from kinspect.load.runsettings import LoadSettings
from kinspect.load.runstats import aggregate, ledger_totals, read_stats
from kinspect.procs import read_process

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject


def check_topic(bootstrap: str, topic: str, timeout_s: float = 10.0,
                config: Mapping[str, str] | None = None) -> int:
    """The topic's partition count; a missing topic is bad input, not something to create.
    A refused login is said as such, within a second (KinspectError)."""
    settings, auth = client_config({**(config or {}), "bootstrap.servers": bootstrap,
                                    "socket.timeout.ms": 5000})
    admin = AdminClient(settings)
    deadline = time.monotonic() + timeout_s
    while True:  # a broker that just learnt of a topic may answer with a partial response
        try:
            metadata = list_topics(admin, auth, max(1.0, deadline - time.monotonic()), topic)
            break
        except KafkaException as exc:
            if time.monotonic() >= deadline:
                raise KinspectError(f"cannot reach the brokers at {bootstrap}: "
                                    f"{exc.args[0].str()}") from None
            time.sleep(0.5)
    info = metadata.topics.get(topic)
    if info is None or info.error is not None:
        raise KinspectError(f"topic {topic!r} does not exist (create it first, e.g. with "
                            "`kinspect demo` or kafka-topics)")
    return len(info.partitions)


def check_run_dir(run_dir: Path) -> None:
    """A fresh run dir, or one without a ledger: never mix two runs' ledgers."""
    if (run_dir / LEDGER_DIR).is_dir() and any((run_dir / LEDGER_DIR).iterdir()):
        raise KinspectError(f"{run_dir} already holds a ledger; use a new --run-dir")


def check_producer_config(settings: LoadSettings) -> None:
    """librdkafka checks every property when a client is made: make one before any worker
    starts, so a bad -X is one line here and not a traceback in each worker."""
    try:
        Producer({"bootstrap.servers": settings.bootstrap, **settings.to_producer_config()})
    except KafkaException as exc:
        raise KinspectError(f"librdkafka refuses the producer settings: "
                            f"{exc.args[0].str()}") from None


def prepare_run_dir(run_dir: Path) -> None:
    """A fresh run dir, or an empty one (nothing is overwritten)."""
    check_run_dir(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)


def format_progress(totals: ProducerCounts, elapsed: float) -> str:
    errors = " ".join(f"{k}={v}" for k, v in sorted(totals.failed_by_error.items())) or "-"
    return (f"{elapsed:6.1f}s  rate {totals.rate:>8.0f}/s  sent {totals.sent:>9}"
            f"  acked {totals.acked:>9}  failed {totals.failed:>6} ({errors})"
            f"  in flight {totals.in_flight:>6}  p50 {totals.latency_p50_ms:.0f}"
            f" ms  p99 {totals.latency_p99_ms:.0f} ms")


def run_load(settings: LoadSettings, run_dir: Path,
             progress: Callable[[str], None] | None = None, zookeeper: str | None = None,
             expected_brokers: Mapping[int, str] | None = None,
             zk_auth: list[tuple[str, str]] | None = None, origin: str = "load",
             secret_files: Sequence[Path] = (), run_id: str | None = None,
             controllers: Mapping[int, str] | None = None) -> JsonObject:
    """Run the workers to completion (or until stopped) and return the ledger summary.

    The run gets its id here (RUN_DIR/run.json); every message carries it. With a ZooKeeper
    address (or a KRaft lab's controllers) the cluster is observed meanwhile and its events land
    in RUN_DIR/timeline.jsonl, so the post-mortem can explain what the ledger shows.
    """
    settings.validate()
    check_producer_config(settings)
    check_run_dir(run_dir)
    check_topic(settings.bootstrap, settings.topic, config=settings.extra)
    prepare_run_dir(run_dir)
    info = begin_run(run_dir, settings.topic, origin, run_id)
    settings = dataclasses.replace(settings, run_id=info.run_id)
    settings.save(run_dir, secret_files)
    observing = (recording_timeline(settings.bootstrap, zookeeper, run_dir, expected_brokers,
                                    settings.extra, zk_auth, controllers)
                 if zookeeper or controllers else nullcontext())
    with observing, registered(run_dir, settings.topic, settings.bootstrap):
        summary = _run_workers(settings, run_dir, progress)
    ended = mark(run_dir, load_ended_at_ms=now_ms())
    summary.update(run_id=info.run_id, started_at_ms=info.started_at_ms,
                   ended_at_ms=ended.load_ended_at_ms if ended else None)
    failures = worker_failures(run_dir)
    if failures:
        summary["failure"] = failures[0]
    crashes = planned_crashes(run_dir)
    if crashes:  # what the dead generators' clients still held when they were killed
        summary["crashed"] = {"generators": len(crashes),
                              "in_client": sum(int(c.get("in_client", 0)) for c in crashes),
                              "unreported": sum(int(c.get("unreported", 0)) for c in crashes)}
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
    if failures:  # the ledger and the summary are kept; the reason is the one line
        raise KinspectError(f"{failures[0]} (the load stopped; what it recorded is in {run_dir})")
    return summary


def worker_failures(run_dir: Path) -> list[str]:
    """Why workers stopped early (stats/pNNN.failure), one line each."""
    folder = run_dir / STATS_DIR
    if not folder.is_dir():
        return []
    return sorted({p.read_text().strip() for p in folder.glob(f"p*{FAILURE_SUFFIX}")})


def planned_crashes(run_dir: Path) -> list[dict[str, Any]]:
    """The counts each generator wrote just before its planned crash (stats/pNNN.crash)."""
    out = []
    for path in sorted((run_dir / STATS_DIR).glob(f"p*{CRASH_SUFFIX}")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def _run_workers(settings: LoadSettings, run_dir: Path,
                 progress: Callable[[str], None] | None) -> JsonObject:
    (run_dir / PID_FILE).write_text(str(os.getpid()))
    workers = [subprocess.Popen([sys.executable, "-m", "kinspect.load.producer_worker", "--run-dir",
                                 str(run_dir.resolve()), "--producer", str(p), "--parent",
                                 str(os.getpid()), "--config-on-stdin"],
                                stdin=subprocess.PIPE)
               for p in range(settings.producers)]
    # settings.json holds references and masks, not secrets: each worker gets the producer
    # properties themselves through a pipe, closed at once (nothing on disk, nothing in argv)
    secrets = json.dumps({"extra": settings.extra}).encode()
    for worker in workers:
        hand_over(worker, secrets)
    (run_dir / WORKERS_FILE).write_text(json.dumps([w.pid for w in workers]))
    stopping = False

    def stop(*_args: Any) -> None:
        nonlocal stopping
        stopping = True
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    started = time.monotonic()
    try:
        while any(w.poll() is None for w in workers):
            time.sleep(0.5)
            if not stopping and worker_failures(run_dir):
                stop()  # one worker's login was refused: the others' will be too
            if progress:
                progress(format_progress(aggregate(read_stats(run_dir)), time.monotonic() - started))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        (run_dir / PID_FILE).unlink(missing_ok=True)
    summary = ledger_totals(run_dir).to_json()  # streamed: flat memory however long the run
    summary.update(elapsed_s=round(time.monotonic() - started, 3), stopped=stopping,
                   acks=settings.acks, producers=settings.producers, topic=settings.topic,
                   worker_exit_codes=[w.returncode for w in workers])
    if settings.acks == "0":
        summary["note"] = ("acks=0: 'acked' means the client sent it; no broker acknowledged "
                           "anything")
    return summary


def hand_over(worker: subprocess.Popen[bytes], data: bytes) -> None:
    """Write to the worker's stdin and close it (a worker that died at once: its exit code
    tells)."""
    if worker.stdin is None:
        return
    try:
        worker.stdin.write(data)
        worker.stdin.flush()
    except BrokenPipeError:
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            worker.stdin.close()


def stop_load(run_dir: Path) -> bool:
    """Ask a running load (in any process) to stop; False when none runs in that run dir.

    The runner is asked (it stops its workers); when the runner is gone, its workers are
    stopped directly (each records what is in flight as unknown)."""
    pid_file = run_dir / PID_FILE
    try:
        os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
        return True
    except (OSError, ValueError):
        pid_file.unlink(missing_ok=True)
    return bool(stop_workers(run_dir))


def stop_workers(run_dir: Path) -> list[int]:
    """SIGTERM the live workers listed in RUN_DIR/workers.json (only processes that are a
    kinspect worker of this run dir: a pid reused by something else is left alone)."""
    try:
        pids = [int(p) for p in json.loads((run_dir / WORKERS_FILE).read_text())]
    except (OSError, ValueError, TypeError):
        return []
    stopped = []
    for pid in pids:
        process = read_process(pid)
        cmdline = process.args if process else ()
        if b"kinspect.load.producer_worker" in cmdline and str(run_dir.resolve()).encode() in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
                stopped.append(pid)
    return stopped
