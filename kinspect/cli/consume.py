"""`kinspect consume run|stop`: a consumer group that keeps a ledger of what it processed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kinspect.cli.common import add_cluster_arguments, progress_line, resolve_cluster
from kinspect.errors import KinspectError
from kinspect.lab import sasl
from kinspect.validation import existing_dir, option, topic_name, writable_dir

COMMIT_HELP = ("when offsets are committed: auto (on a timer, whatever processing did), "
               "before (then process), after (process, then commit: the default), "
               "transaction (inside the transaction that writes --output)")


def register(commands: Any) -> None:
    consume = commands.add_parser("consume", help="consumer groups with a processing ledger")
    sub = consume.add_subparsers(dest="consume_command", metavar="ACTION", required=True)
    run = sub.add_parser(
        "run", help="consume a topic as a group, recording every record processed and commit",
        description="Real consumers in their own processes, joined to one group. Each record's "
                    "processing (which may fail) and each commit is written to "
                    "RUN_DIR/consumer/ledger; the post-mortem finds what was never processed or "
                    "processed twice. Give the --run-dir of a `load run` to judge both sides.")
    run.add_argument("--topic", required=True, help="the topic to read (must exist)")
    run.add_argument("--group", required=True, help="the consumer group's id")
    run.add_argument("--run-dir", type=Path, required=True,
                     help="where the ledger goes (a `load run`'s run dir, or a new one)")
    run.add_argument("--commit", choices=["auto", "before", "after", "transaction"],
                     default="after", help=COMMIT_HELP)
    run.add_argument("--auto-commit-ms", type=option(1, 3_600_000, integer=True), default=1000,
                     help="auto.commit.interval.ms with --commit auto (default 1000)")
    run.add_argument("--consumers", type=option(1, 64, integer=True), default=1,
                     help="consumer processes in the group, 1-64 (default 1)")
    run.add_argument("--batch", type=option(1, 100_000, integer=True), default=100,
                     help="records per poll, and per transaction (default 100)")
    run.add_argument("--process-ms", type=option(0, 60_000), default=0.0,
                     help="time processing one record takes (default 0)")
    run.add_argument("--fail-rate", type=option(0, 1), default=0.0,
                     help="share of records whose processing fails (with --output: of "
                          "transactions that abort); --commit after retries them (default 0)")
    crash = run.add_mutually_exclusive_group()
    crash.add_argument("--crash-after", type=option(1, 1_000_000_000, integer=True),
                       help="consumer 0 is killed (SIGKILL) on receiving its Nth record, "
                            "before processing it")
    crash.add_argument("--crash-at", type=option(0, 7 * 86400, low_open=True),
                       help="consumer 0 is killed (SIGKILL) this many seconds after it starts")
    run.add_argument("--no-restart", action="store_true",
                     help="leave a crashed consumer dead (default: a new one joins the group)")
    run.add_argument("--isolation", choices=["read_committed", "read_uncommitted"],
                     default="read_committed", help="isolation.level (default read_committed)")
    run.add_argument("--output", metavar="TOPIC",
                     help="consume-transform-produce: copy each poll's records to TOPIC in one "
                          "transaction")
    run.add_argument("--duration", type=option(0, 7 * 86400, low_open=True),
                     help="stop after this many seconds")
    run.add_argument("--idle-stop", type=option(0, 7 * 86400, low_open=True),
                     help="stop when nothing arrived for this many seconds")
    run.add_argument("--json", action="store_true", help="one JSON summary object on stdout")
    add_cluster_arguments(run, zookeeper=False)
    run.set_defaults(handler=cmd_run)

    stop = sub.add_parser("stop", help="stop a consumer group running in another process")
    stop.add_argument("--run-dir", type=Path, required=True, help="the run dir of `consume run`")
    stop.set_defaults(handler=cmd_stop)


def cmd_run(args: argparse.Namespace) -> int:
    from kinspect.load.consumers.group_run import check_consumer_dir, run_consumers
    from kinspect.load.consumers.settings import ConsumeSettings

    topic_name(args.topic)
    if args.output is not None:
        topic_name(args.output, "--output")
    writable_dir(args.run_dir, "--run-dir")
    check_consumer_dir(args.run_dir)
    cluster = resolve_cluster(args)
    settings = ConsumeSettings(
        topic=args.topic, bootstrap=cluster.bootstrap, group=args.group, commit=args.commit,
        auto_commit_ms=args.auto_commit_ms, consumers=args.consumers, batch=args.batch,
        process_ms=args.process_ms, fail_rate=args.fail_rate, crash_after=args.crash_after,
        crash_at_s=args.crash_at, restart=not args.no_restart, isolation=args.isolation,
        output=args.output, duration_s=args.duration, idle_stop_s=args.idle_stop,
        extra=dict(cluster.kafka))
    settings.validate()
    shown = None  # --json: stderr stays quiet
    if not args.json:
        shown = progress_line
    summary = run_consumers(settings, args.run_dir, shown, secret_files=sasl.secret_files())
    if args.json:
        print(json.dumps(summary))
        return 0
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(f"received {summary['received']:,}  processed {summary['processed']:,}  failed "
          f"{summary['failed']:,}  aborted {summary['aborted']:,}  commits {summary['commits']:,}"
          f"  crashes {summary['crashes']}  lag at end {summary['lag_at_end']:,}  in "
          f"{summary['elapsed_s']:.1f} s")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from kinspect.load.consumers.settings import consumer_dir
    from kinspect.load.producer_run import stop_load

    existing_dir(args.run_dir, "--run-dir")
    if not stop_load(consumer_dir(args.run_dir)):
        raise KinspectError(f"no consumer group is running in {args.run_dir}")
    print(f"asked the consumers in {args.run_dir} to stop")
    return 0
