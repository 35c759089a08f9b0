"""`kinspect postmortem RUN_DIR`: the PySpark post-mortem of a load run."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from kinspect.checks import existing_dir
from kinspect.cli.common import progress
from kinspect.errors import KinspectError

# What Spark takes as a master and as a memory size; anything else fails only after the JVM
# started, so it is refused here.
MASTER = re.compile(r"^(local(\[(\d+|\*)(,\d+)?\])?|(spark|k8s|mesos)://\S+|yarn)$")
MEMORY = re.compile(r"^[1-9]\d*[kmgtKMGT]?$")


def register(commands: Any) -> None:
    pm = commands.add_parser("postmortem", help="PySpark post-mortem of a run dir: acked but lost, "
                             "attribution, election timeline")
    pm.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run dir after `kinspect verify`")
    pm.add_argument("--json", action="store_true", help="exactly the report JSON on stdout")
    pm.add_argument("--master", default="local[2]",
                    help="Spark master: local[2] (default), local[*], spark://host:7077, ...")
    pm.add_argument("--out", type=Path, help="where the reports go (default RUN_DIR/postmortem)")
    pm.add_argument("--driver-memory", default="2g", metavar="SIZE",
                    help="Spark driver memory, e.g. 2g (default; local mode runs in the driver)")
    pm.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting, as spark-submit takes it (repeatable)")
    pm.add_argument("--verbose", action="store_true", help="let Spark's own logging through")
    pm.add_argument("--no-chart", action="store_true", help="skip timeline.png")
    pm.set_defaults(handler=cmd_postmortem)


def cmd_postmortem(args: argparse.Namespace) -> int:
    from kinspect.postmortem import run_postmortem
    from kinspect.postmortem.report import summary

    existing_dir(args.run_dir, "RUN_DIR")
    if not MASTER.match(args.master):
        raise KinspectError(f"--master {args.master!r} is not a Spark master (local[2], local[*],"
                            " spark://host:7077, yarn, k8s://...)")
    if not MEMORY.match(args.driver_memory):
        raise KinspectError(f"--driver-memory {args.driver_memory!r} is not a size (e.g. 2g, "
                            "512m)")
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise KinspectError(f"--conf wants KEY=VALUE, not {item!r}")
        conf[key.strip()] = value.strip()
    report = run_postmortem(args.run_dir, out=args.out, master=args.master, verbose=args.verbose,
                            progress=progress, chart=not args.no_chart,
                            memory=args.driver_memory, conf=conf)
    if args.json:
        print(json.dumps(report))
    else:
        print(summary(report))
    return 0
