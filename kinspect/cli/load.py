"""`kinspect load run|stop|slow` and `kinspect verify`."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.cli.common import add_cluster_arguments, progress_line, resolve_cluster
from kinspect.cli.progress import Display
from kinspect.errors import KinspectError
from kinspect.lab import sasl
from kinspect.validation import existing_dir, option, topic_name, writable_dir

if TYPE_CHECKING:
    from kinspect.load.runsettings import LoadSettings
    from kinspect.model.events import JsonObject
    from kinspect.target import ClusterTarget


def _rate(text: str) -> float | None:
    if text == "max":
        return None
    return float(RATE(text))


RATE = option(0, 10_000_000, low_open=True)
# librdkafka properties that have an option of their own here: -X (or a profile) may set them,
# but then they are checked as that option and land in the run's settings, where the report
# reads them (acks=all given as -X must not be reported as the default acks=1).
FIRST_CLASS = {
    "acks": "acks", "request.required.acks": "acks", "enable.idempotence": "idempotent",
    "retries": "retries", "message.send.max.retries": "retries",
    "delivery.timeout.ms": "delivery_timeout_ms", "message.timeout.ms": "delivery_timeout_ms",
    "max.in.flight.requests.per.connection": "max_in_flight", "max.in.flight": "max_in_flight",
    "linger.ms": "linger_ms", "queue.buffering.max.ms": "linger_ms",
}
NUMBERS = {"retries": option(0, 2_147_483_647, integer=True),
           "delivery_timeout_ms": option(1, 2_147_483_647, integer=True),
           "max_in_flight": option(1, 1_000_000, integer=True),
           "linger_ms": option(0, 900_000, integer=True)}


def register(commands: Any) -> None:
    load = commands.add_parser("load", help="load generators with an acknowledgement ledger")
    sub = load.add_subparsers(dest="load_command", metavar="ACTION", required=True)

    _register_run(sub)

    stop = sub.add_parser("stop", help="stop a load running in another process")
    stop.add_argument("--run-dir", type=Path, required=True, help="the run dir of the load")
    stop.set_defaults(handler=cmd_stop)

    slow = sub.add_parser("slow", help="one message a second, watching the leader and offsets")
    slow.add_argument("--topic", required=True, help="the topic to write to (must exist)")
    slow.add_argument("--acks", help="0, 1 or all (default 1)")
    slow.add_argument("--count", type=option(1, 1_000_000_000, integer=True),
                      help="stop after this many messages")
    add_cluster_arguments(slow, zookeeper=False)
    slow.set_defaults(handler=cmd_slow)

    verify = commands.add_parser(
        "verify", help="read the final log back into the run dir, and keep the lab's evidence",
        description="Read the run's topic back to its high watermark (the run's own records are "
                    "told apart by its run id) and, on a lab, keep the faults, broker logs and "
                    "replica snapshots of the run's window for the post-mortem.")
    verify.add_argument("--topic", required=True, help="the run's topic (checked against the run dir)")
    verify.add_argument("--run-dir", type=Path, required=True, help="the run dir of `load run`")
    verify.add_argument("--timeout", type=option(0, 7 * 86400, low_open=True),
                        help="seconds to read up to the high watermark (default: 120 plus 60 "
                             "per million records; it also gives up after 60 s without progress)")
    verify.add_argument("--json", action="store_true", help="one JSON object on stdout")
    add_cluster_arguments(verify, zookeeper=False)
    verify.set_defaults(handler=cmd_verify)


def _register_run(sub: Any) -> None:
    run = sub.add_parser("run", help="produce messages with unique ids, recording every ack")
    run.add_argument("--topic", required=True, help="the topic to write to (must exist)")
    run.add_argument("--acks", help="0, 1 or all (default 1)")
    amount = run.add_mutually_exclusive_group()
    amount.add_argument("--count", type=option(1, 1_000_000_000, integer=True),
                        help="messages in all (default 100000)")
    amount.add_argument("--duration", type=option(0, 7 * 86400, low_open=True),
                        help="seconds to run instead of a count")
    run.add_argument("--rate", type=_rate, default=10000.0,
                     help="messages/s over all producers, or 'max' (default 10000)")
    run.add_argument("--producers", type=option(1, 64, integer=True), default=1,
                     help="producer processes, 1-64 (default 1)")
    run.add_argument("--size", type=option(16, 1_000_000, integer=True), default=100,
                     help="message size in bytes, 16 to 1000000 (librdkafka's message.max.bytes;"
                          " default 100)")
    run.add_argument("--idempotent", action="store_true", default=None,
                     help="enable.idempotence=true")
    run.add_argument("--retries", type=NUMBERS["retries"],
                     help="librdkafka retries (default: its own)")
    run.add_argument("--delivery-timeout-ms", type=NUMBERS["delivery_timeout_ms"],
                     help="delivery.timeout.ms")
    run.add_argument("--max-in-flight", type=NUMBERS["max_in_flight"],
                     help="max.in.flight.requests.per.connection")
    run.add_argument("--linger-ms", type=NUMBERS["linger_ms"], help="linger.ms (at most 900000)")
    run.add_argument("--crash-at", type=option(0, 7 * 86400, low_open=True), metavar="S",
                     help="kill (SIGKILL) every generator S seconds in, with messages still in "
                          "the client's buffer: what an application crash does to them")
    run.add_argument("--buffer-full", choices=["wait", "refuse"], default="wait",
                     help="when librdkafka's buffer is full: wait for room (default), or refuse "
                          "the send (BufferError) and count it, as an application that drops it")
    run.add_argument("--run-dir", type=Path, required=True, help="where the ledger goes")
    run.add_argument("--json", action="store_true", help="one JSON summary object on stdout")
    run.add_argument("--origin", default="load", choices=["load", "tui"], help=argparse.SUPPRESS)
    run.add_argument("--no-timeline", action="store_true",
                     help="do not observe the cluster into RUN_DIR/timeline.jsonl")
    add_cluster_arguments(run)
    run.set_defaults(handler=cmd_run)


def first_class(args: argparse.Namespace, kafka: dict[str, str]) -> dict[str, str]:
    """Move the -X (or profile) properties that have an option of their own onto that option,
    checked as that option; the rest stay librdkafka properties. A contradiction is refused."""
    rest: dict[str, str] = {}
    for key, value in kafka.items():
        if key in ("bootstrap.servers", "metadata.broker.list"):
            raise KinspectError(f"-X {key}: give the brokers with --bootstrap")
        name = FIRST_CLASS.get(key)
        if name is None or not hasattr(args, name):
            rest[key] = value
            continue
        flag = "--" + name.replace("_", "-")
        converted = _as_option(name, flag, key, value)
        given = getattr(args, name)
        if given is not None and given != converted:
            raise KinspectError(f"-X {key}={value} contradicts {flag} {given}")
        setattr(args, name, converted)
    return rest


def _as_option(name: str, flag: str, key: str, value: str) -> Any:
    """A -X property's value as the option `name` takes it, checked as that option."""
    if name == "acks":
        if value.strip() == "-1":
            return "all"
        return value.strip()
    if name == "idempotent":
        if value.strip().lower() not in ("true", "false"):
            raise KinspectError(f"-X {key} must be true or false, not {value!r}")
        return value.strip().lower() == "true"
    try:
        return NUMBERS[name](value)
    except argparse.ArgumentTypeError as exc:
        raise KinspectError(f"{flag} (-X {key}) {exc}") from None


def _acks(given: str | None) -> str:
    """--acks; 1 when not given (or given empty)."""
    if not given:
        return "1"
    return str(given)


def _count(args: argparse.Namespace) -> int | None:
    """The messages to send: --count, none for a --duration, else 100,000."""
    if args.duration is not None:
        return None
    if args.count is None:
        return 100_000
    return int(args.count)


def _load_settings(args: argparse.Namespace, cluster: ClusterTarget) -> LoadSettings:
    from kinspect.load.runsettings import LoadSettings

    extra = first_class(args, cluster.kafka)
    return LoadSettings(
        topic=args.topic, acks=_acks(args.acks), count=_count(args), duration_s=args.duration,
        rate=args.rate, producers=args.producers, size=args.size,
        idempotent=bool(args.idempotent), retries=args.retries,
        delivery_timeout_ms=args.delivery_timeout_ms, max_in_flight=args.max_in_flight,
        linger_ms=args.linger_ms, extra=extra, bootstrap=cluster.bootstrap,
        crash_at_s=args.crash_at, buffer_full=args.buffer_full,
    )


def cmd_run(args: argparse.Namespace) -> int:
    from kinspect.load.producer_run import check_run_dir

    topic_name(args.topic)
    writable_dir(args.run_dir, "--run-dir")
    check_run_dir(args.run_dir)
    cluster = resolve_cluster(args)
    settings = _load_settings(args, cluster)
    settings.validate()
    with Display() as display:
        summary = _run_load(args, cluster, settings, display)
    if args.json:
        print(json.dumps(summary))
        return 0
    _end_line(display)
    print(format_summary(summary))
    return 0


def _run_load(args: argparse.Namespace, cluster: ClusterTarget, settings: LoadSettings,
              display: Display) -> JsonObject:
    """The load, observing the cluster beside it unless --no-timeline."""
    from kinspect.load.producer_run import run_load

    zookeeper, controllers = cluster.zookeeper, cluster.controllers
    if args.no_timeline:
        zookeeper = controllers = None
    zk_auth = None
    if cluster.zk_auth:
        zk_auth = list(cluster.zk_auth)
    shown = _load_progress(display, args.json, settings.count, settings.duration_s)
    return run_load(settings, args.run_dir, progress=shown,
                    zookeeper=zookeeper, expected_brokers=cluster.expected_brokers,
                    zk_auth=zk_auth, origin=args.origin, secret_files=sasl.secret_files(),
                    controllers=controllers)


def _load_progress(display: Display, as_json: bool, count: int | None,
                   duration_s: float | None) -> Callable[[str], None] | None:
    """A bar on a terminal, else the runner's lines on stderr (none beside --json)."""
    if as_json and not display.live:
        return None
    return load_bar(display, count, duration_s)


def _end_line(display: Display) -> None:
    """The progress line rewritten in place on a terminal (no bars) ends before the answer."""
    if sys.stderr.isatty() and not display.live:
        print(file=sys.stderr)


# What the runner's progress line says (runner.format_progress), read back for the bar.
LOAD_LINE = re.compile(r"^\s*(?P<elapsed>[\d.]+)s\s.*?sent\s+(?P<sent>\d+)\s+acked\s+(?P<acked>\d+)"
                       r"\s+failed\s+(?P<failed>\d+)")


def load_bar(display: Display, count: int | None,
             duration_s: float | None) -> Callable[[str], None]:
    """The runner's progress lines as a bar: answered (acked + failed) of the count, or
    seconds of the duration; as before (one line rewritten in place) without a terminal."""
    if not display.live:
        return progress_line

    def show(line: str) -> None:
        found = LOAD_LINE.match(line)
        if found is None:  # a line of another shape: shown as it is
            display.bar("load", 0, None, note=line.strip())
            return
        sent, acked, failed = (int(found[k]) for k in ("sent", "acked", "failed"))
        note = f"sent {sent:,}  acked {acked:,}  failed {failed:,}"
        if count:
            display.bar("load", acked + failed, count, "messages", note)
        else:
            display.bar("load", float(found["elapsed"]), duration_s, "s", note)

    return show


def format_summary(summary: dict[str, Any]) -> str:
    failed = summary.get("failed_by_error")
    lines = [
        f"sent {summary['sent']:,}  acked {summary['acked']:,}  failed {summary['failed']:,}  "
        f"unknown {summary['unknown']:,}  in {summary.get('elapsed_s', 0):.1f} s",
    ]
    if failed:
        lines.append("failed by error: " + ", ".join(f"{k} {v:,}" for k, v in sorted(failed.items())))
    if summary.get("crashed"):
        crashed = summary["crashed"]
        lines.append(f"crashed as asked: {crashed['generators']} generator(s) killed with "
                     f"{crashed['unreported']:,} messages unanswered ({crashed['in_client']:,} "
                     "still in the client's buffer)")
    if summary.get("note"):
        lines.append(str(summary["note"]))
    return "\n".join(lines)


def run_dir_of_a_load(path: Path, what: str = "--run-dir") -> LoadSettings:
    """An existing run dir that `kinspect load run` wrote: its saved settings, checked."""
    from kinspect.load.rundir import SETTINGS_FILE
    from kinspect.load.runsettings import LoadSettings

    existing_dir(path, what)
    if not (path / SETTINGS_FILE).is_file():
        raise KinspectError(f"{what} {path} is not a kinspect run dir (no {SETTINGS_FILE}; "
                            "give the --run-dir of a `kinspect load run`)")
    return LoadSettings.load(path)  # unreadable, or of the wrong types: one line


def cmd_stop(args: argparse.Namespace) -> int:
    from kinspect.load.producer_run import stop_load

    run_dir_of_a_load(args.run_dir)
    if not stop_load(args.run_dir):
        raise KinspectError(f"no load is running in {args.run_dir}")
    print(f"asked the load in {args.run_dir} to stop")
    return 0


def cmd_slow(args: argparse.Namespace) -> int:
    from kinspect.load.slow import run_slow

    topic_name(args.topic)
    cluster = resolve_cluster(args)
    extra = first_class(args, cluster.kafka)
    acks = _acks(args.acks)
    if acks not in {"0", "1", "all", "-1"}:
        raise KinspectError(f"--acks must be 0, 1 or all, not {acks!r}")
    return run_slow(cluster.bootstrap, args.topic, acks, args.count, extra)


def records_bar(display: Display, key: str) -> Callable[[int, int], None] | None:
    """verify's count(done, total) as a bar (None without a terminal: the lines say it)."""
    if not display.live:
        return None

    def show(done: int, total: int) -> None:
        display.bar(key, done, total, "records")
        if done >= total:
            display.finish(key)

    return show


def cmd_verify(args: argparse.Namespace) -> int:
    from kinspect.postmortem.finish import verify_run

    topic_name(args.topic)
    topic = run_dir_of_a_load(args.run_dir).topic
    writable_dir(args.run_dir, "--run-dir")
    cluster = resolve_cluster(args)
    if topic != args.topic:
        raise KinspectError(f"{args.run_dir} is a run on {topic!r}, not {args.topic!r}")
    with Display() as display:
        say = None  # --json without a terminal: no lines at all
        if display.live or not args.json:
            say = display.line
        verified = verify_run(args.run_dir, cluster.bootstrap, cluster.kafka, cluster.lab, say,
                              timeout_s=args.timeout, count=records_bar(display, "reading back"))
    reads, total = verified.reads, sum(r.records for r in verified.reads)
    if args.json:
        print(json.dumps({"topic": args.topic, "in_log": total, "warnings": verified.warnings,
                          "partitions": [
            {"partition": r.partition, "log_start": r.log_start,
             "high_watermark": r.high_watermark, "records": r.records} for r in reads]}))
        return 0
    _end_line(display)
    for read in reads:
        print(f"{args.topic}-{read.partition}: {read.records:,} records "
              f"(offsets {read.log_start:,}..{read.high_watermark:,})")
    print(f"final log: {total:,} records in {args.run_dir / 'final_log'}")
    if verified.kept:
        print("kept for the post-mortem: " + ", ".join(verified.kept))
    return 0
