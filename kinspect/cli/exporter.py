"""`kinspect exporter`: kinspect's verdicts and counts as Prometheus metrics, over HTTP.

An observer polls the cluster (and watches ZooKeeper where it is given), as the screen does; a
scrape renders its newest snapshot (sources/metrics.py). Nothing is asked of the cluster on a
scrape, so a busy Prometheus costs the brokers nothing more."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from kinspect.cli.common import add_cluster_arguments
from kinspect.cli.observe import make_observer
from kinspect.errors import KinspectError
from kinspect.validation import option


def register(commands: Any) -> None:
    exporter = commands.add_parser(
        "exporter", help="serve the cluster's ISR health as Prometheus metrics",
        description="Polls the cluster as the screen does and serves /metrics: each "
        "partition's flags (offline, under-replicated, under/at min ISR; NaN when not told), "
        "the health verdict and exit code, each broker's leaders, missing ISRs and log dirs, "
        "each group's lag in records and seconds, and counters of ISR shrinks, expansions and "
        "leader changes. Example: kinspect exporter --profile prod --port 9410")
    exporter.add_argument("--port", type=option(1, 65_535, integer=True), default=9410,
                          help="the port to serve on (default 9410)")
    exporter.add_argument("--host", default="127.0.0.1",
                          help="the address to listen on (default 127.0.0.1; 0.0.0.0: all)")
    add_cluster_arguments(exporter)
    exporter.set_defaults(handler=cmd_exporter, long_lived=True)


def cmd_exporter(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry, start_http_server

    from kinspect.sources.metrics import SnapshotMetrics

    metrics = SnapshotMetrics()
    registry = CollectorRegistry()
    registry.register(metrics)
    observer = make_observer(args)
    observer.subscribe(metrics.observe)
    try:
        server, _thread = start_http_server(args.port, addr=args.host, registry=registry)
    except OSError as exc:
        raise KinspectError(f"cannot serve on {args.host}:{args.port}: {exc.strerror}") from None
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    observer.start()
    print(f"serving Prometheus metrics on http://{args.host}:{args.port}/metrics",
          file=sys.stderr, flush=True)
    said: set[str] = set()
    try:
        while not done.wait(0.5):
            observer.check_auth()  # a refused login: one line, exit 2
            for problem in observer.problems():
                if problem not in said:
                    said.add(problem)
                    print(f"kinspect: {problem}", file=sys.stderr, flush=True)
    finally:
        observer.stop()
        server.shutdown()
    return 0
