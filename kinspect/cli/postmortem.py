"""`kinspect postmortem RUN_DIR`: the PySpark post-mortem of a load run."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.cli.common import progress
from kinspect.cli.progress import Display
from kinspect.errors import KinspectError
from kinspect.validation import existing_dir

if TYPE_CHECKING:
    from kinspect.postmortem.story.values import Report

# What Spark takes as a master and as a memory size; anything else fails only after the JVM
# started, so it is refused here.
MASTER = re.compile(r"^(local(\[(\d+|\*)(,\d+)?\])?|(spark|k8s|mesos)://\S+|yarn)$")
MEMORY = re.compile(r"^[1-9]\d*[kmgtKMGT]?$")
REMOTE = re.compile(r"^sc://(\[[0-9a-fA-F:.]+\]|[^\s/:\[\]]+)(:\d+)?(/;\S*)?/?$")
# How Spark (FAILED_READ_FILE.FILE_NOT_EXIST) and Hadoop (FileNotFoundException) name a file gone.
NOT_THERE = re.compile(r"(?:reading file |File )(\S+?)\.?\s+(?:File )?does not exist")


def register(commands: Any) -> None:
    pm = commands.add_parser("postmortem", help="PySpark post-mortem of a run dir: acked but lost, "
                             "attribution, election timeline")
    pm.add_argument("run_dir", type=Path, metavar="RUN_DIR", nargs="?",
                    help="a run dir after `kinspect verify`")
    pm.add_argument("--json", action="store_true", help="exactly the report JSON on stdout")
    pm.add_argument("--master", default="local[2]",
                    help="Spark master: local[2] (default), local[*], spark://host:7077, ...")
    pm.add_argument("--remote", metavar="sc://HOST:PORT",
                    help="a Spark Connect server instead of a master (needs pyspark[connect])")
    pm.add_argument("--out", type=Path, help="where the reports go (default RUN_DIR/postmortem)")
    pm.add_argument("--driver-memory", default="2g", metavar="SIZE",
                    help="Spark driver memory, e.g. 2g (default; local mode runs in the driver)")
    pm.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting, as spark-submit takes it (repeatable)")
    pm.add_argument("--verbose", action="store_true", help="let Spark's own logging through")
    pm.add_argument("--no-chart", action="store_true", help="skip timeline.png")
    pm.add_argument("--serve", action="store_true",
                    help="keep a warm Spark engine running for this KINSPECT_HOME: later "
                    "post-mortems (CLI, TUI m, scenarios) start at once (the TUI starts one)")
    pm.add_argument("--parent", type=int, metavar="PID", help=argparse.SUPPRESS)
    pm.add_argument("--cold", action="store_true",
                    help="start a Spark session of its own even when a warm engine runs")
    pm.set_defaults(handler=cmd_postmortem)


def cmd_postmortem(args: argparse.Namespace) -> int:
    from kinspect.postmortem.story.report import summary

    if args.serve:
        return _serve(args)
    if args.run_dir is None:
        raise KinspectError("the following arguments are required: RUN_DIR "
                            "(or --serve for a warm engine)")
    existing_dir(args.run_dir, "RUN_DIR")
    args.master = _master(args)
    if not args.master.startswith("local"):  # executors get the paths as the driver writes them
        args.run_dir = args.run_dir.resolve()
        if args.out:
            args.out = args.out.resolve()
    if not MEMORY.match(args.driver_memory):
        raise KinspectError(f"--driver-memory {args.driver_memory!r} is not a size (e.g. 2g, "
                            "512m)")
    conf = _spark_conf(args.conf)
    # stages with their time on a terminal; Spark's own logging (--verbose) would tear them
    live = None
    if args.verbose:
        live = False
    with Display(live=live) as display, _shared_paths(args.master):
        report = _postmortem(args, conf, display.line)
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        print(summary(report))
    return 0


def _master(args: argparse.Namespace) -> str:
    """Where Spark runs, checked: --master, or the Connect server --remote names (it stands for
    the master from here on)."""
    if args.remote is None:
        if not MASTER.match(args.master):
            raise KinspectError(f"--master {args.master!r} is not a Spark master (local[2], "
                                "local[*], spark://host:7077, yarn, k8s://...)")
        return str(args.master)
    if args.master != "local[2]":
        raise KinspectError("--master and --remote both say where Spark runs: give one")
    if not REMOTE.match(args.remote):
        raise KinspectError(f"--remote {args.remote!r} is not a Spark Connect URL "
                            "(sc://host:15002)")
    return str(args.remote)


def _spark_conf(items: list[str]) -> dict[str, str]:
    """--conf KEY=VALUE, each checked."""
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise KinspectError(f"--conf wants KEY=VALUE, not {item!r}")
        conf[key.strip()] = value.strip()
    return conf


@contextmanager
def _shared_paths(master: str) -> Iterator[None]:
    """A file the driver listed and an executor cannot open: the run dir is not shared."""
    try:
        yield
    except KinspectError as exc:
        missing = None
        if exc.__context__ is not None:
            missing = NOT_THERE.search(str(exc.__context__))
        if master.startswith("local") or missing is None:
            raise
        raise KinspectError(f"the executors of {master} cannot read {missing.group(1)}: on a "
                            "cluster the run dir (and --out) must be at the same path on every "
                            "executor, on a shared file system (docs/guides/postmortem.md"
                            "#running-the-post-mortem-on-a-spark-cluster)") from None


def _postmortem(args: argparse.Namespace, conf: dict[str, str],
                say: Callable[[str], None] = progress) -> Report:
    """On the warm engine when one runs with the same master (and no session settings asked
    for), else on a session of its own: the same job either way."""
    from kinspect.postmortem import run_postmortem
    from kinspect.postmortem.spark.spark_client import postmortem_if_warm

    if _warm_will_do(args, conf):
        report = postmortem_if_warm(args.run_dir, args.out, not args.no_chart, say, args.master)
        if report is not None:
            return report
    return run_postmortem(args.run_dir, out=args.out, master=args.master, verbose=args.verbose,
                          progress=say, chart=not args.no_chart,
                          memory=args.driver_memory, conf=conf)


def _warm_will_do(args: argparse.Namespace, conf: dict[str, str]) -> bool:
    """The warm engine's session has its own settings: a run that asks for any (a cold start,
    Spark settings, Spark's logging, another driver memory) starts a session of its own."""
    if args.cold or args.verbose:
        return False
    if conf:
        return False
    return bool(args.driver_memory == "2g")


def _serve(args: argparse.Namespace) -> int:
    from kinspect.postmortem.spark.spark_client import engine_socket, engine_status
    from kinspect.postmortem.spark.spark_server import serve

    if not MASTER.match(args.master):
        raise KinspectError(f"--master {args.master!r} is not a Spark master")
    running = engine_status()
    if running is not None:
        raise KinspectError(f"a warm engine already runs for this KINSPECT_HOME (pid "
                            f"{running.pid}, {running.state})")
    return serve(engine_socket(), args.master, args.driver_memory, args.parent, progress)
