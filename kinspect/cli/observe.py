"""`kinspect snapshot` and `kinspect watch`: the observer from the command line."""

from __future__ import annotations

import argparse
import gc
import json
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.cli.common import (
    add_cluster_arguments,
    early_groups,
    resolve_cluster,
    resolve_with_admin,
)
from kinspect.errors import KinspectError
from kinspect.validation import option, topic_name, writable_dir

if TYPE_CHECKING:
    from kinspect.clients.groups_watch import GroupsWatch
    from kinspect.clients.kafka import WatchedAdmin
    from kinspect.model.snapshot import ClusterSnapshot
    from kinspect.target import ClusterTarget


def register(commands: Any) -> None:
    snap = commands.add_parser("snapshot", help="one consistent snapshot of the cluster")
    snap.add_argument("--json", action="store_true", help="the snapshot as one JSON object")
    snap.add_argument("--topic", action="append", default=[], help="only these topics")
    add_cluster_arguments(snap)
    snap.set_defaults(handler=cmd_snapshot, quick_exit=True)

    watch = commands.add_parser("watch", help="a live stream of events until Ctrl-C")
    watch.add_argument("--jsonl", action="store_true", help="one JSON object per event")
    watch.add_argument("--run-dir", type=Path, help="also append events to RUN_DIR/timeline.jsonl "
                       "and record the snapshots in RUN_DIR/recording/ (kinspect replay)")
    watch.add_argument("--interval", type=option(0.2, 300), help="AdminClient poll seconds (default: the "
                       "profile's refresh_s, else 1; 0.2 to 300)")
    add_cluster_arguments(watch)
    watch.set_defaults(handler=cmd_watch, long_lived=True)


def make_observer(args: argparse.Namespace, run_dir: Path | None = None,
                  one_shot: bool = False, cluster: ClusterTarget | None = None,
                  groups: GroupsWatch | None = None, admin: WatchedAdmin | None = None) -> Any:
    from kinspect.sources.observer import Observer

    cluster = cluster or resolve_cluster(args)
    return Observer(cluster.bootstrap, cluster.zookeeper, expected_brokers=cluster.expected_brokers,
                    interval_s=getattr(args, "interval", None) or cluster.refresh_s,
                    admin_config=cluster.kafka, zk_auth=list(cluster.zk_auth) or None,
                    run_dir=run_dir, one_shot=one_shot, controllers=cluster.controllers,
                    groups=groups, admin_client=admin)


def cmd_snapshot(args: argparse.Namespace) -> int:
    for topic in args.topic:
        topic_name(topic)
    from kinspect.cli.snapshot_json import snapshot_json
    from kinspect.cli.snapshot_text import render_snapshot
    from kinspect.model import snapshot_to_json, topic_to_json

    snapshot = _take_snapshot(args)
    known = {t.name for t in snapshot.topics}
    unknown = [t for t in args.topic if t not in known]
    if unknown:
        raise KinspectError(f"unknown topic {unknown[0]!r}")
    topics = [t for t in snapshot.topics if not args.topic or t.name in args.topic]
    if args.json:
        write_bytes(snapshot_json(snapshot, topics))
        return 0
    data = snapshot_to_json(snapshot, with_topics=False)
    data["topics"] = [topic_to_json(t) for t in topics]
    print(render_snapshot(data))
    return 0


def _take_snapshot(args: argparse.Namespace) -> ClusterSnapshot:
    """One snapshot of the cluster, by an observer started and stopped for it; a cluster that
    neither the AdminClient nor ZooKeeper reaches is one line (exit 2)."""
    cluster, admin = resolve_with_admin(args)
    groups = early_groups(cluster)
    try:
        observer = make_observer(args, one_shot=True, cluster=cluster, groups=groups, admin=admin)
    except BaseException:
        if groups is not None:
            groups.stop()  # no observer adopted it
        raise
    # One short-lived process building one big acyclic model: the cyclic collector would only
    # walk the growing heap again and again (a third of the model's time at 10,000 partitions).
    gc.disable()
    observer.start()
    try:
        snapshot: ClusterSnapshot = observer.wait_ready(timeout_s=15)
    finally:
        observer.stop()
    observer.check_auth()  # a refused login: one line, exit 2
    if snapshot.admin_state != "ok" and not snapshot.sees_zookeeper:
        where = observer.admin.bootstrap if observer.admin else observer.zk.hosts
        raise KinspectError(f"cannot reach the cluster at {where}")
    return snapshot


def write_bytes(encoded: bytes) -> None:
    """A snapshot's encoded JSON (~7 MB at 10,000 partitions) on stdout, as bytes where stdout
    has a buffer."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stdout (a caller's StringIO)
        sys.stdout.write(encoded.decode())
        return
    sys.stdout.flush()
    buffer.write(encoded)
    buffer.flush()


def cmd_watch(args: argparse.Namespace) -> int:
    if args.run_dir is not None:
        writable_dir(args.run_dir, "--run-dir")
    observer = make_observer(args, run_dir=args.run_dir)
    done = threading.Event()

    def show(_snapshot: Any, events: list[Any]) -> None:
        for event in events:
            if args.jsonl:
                print(json.dumps(event.to_json()), flush=True)
            else:
                print(f"{event.ts}  {event.kind:24} {event.partition or '':16} {event.detail}",
                      flush=True)

    observer.subscribe(show)
    recorder = None
    if args.run_dir is not None:
        from kinspect.sources.recording import RECORDING_DIR, Recorder

        recorder = Recorder(args.run_dir / RECORDING_DIR, title="kinspect watch")
        observer.subscribe(recorder.snapshot)
    observer.start()
    # Both set explicitly: a process started in the background by a shell inherits SIGINT
    # ignored, and Ctrl-C (or a test's SIGINT) must still end the watch cleanly.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    said: set[str] = set()
    try:
        while not done.wait(0.5):
            observer.check_auth()  # a refused login: one line, exit 2
            for problem in observer.problems():  # once each, on stderr: stdout stays events
                if problem not in said:
                    said.add(problem)
                    print(f"kinspect: {problem}", file=sys.stderr, flush=True)
    finally:
        observer.stop()
        if recorder is not None:
            recorder.close()
    sys.stdout.flush()
    return 0
