"""`kinspect doctor`: before a workshop, what this machine can do and the exact fix for the rest.

The checks live below (kinspect.lab.host_checks for the lab, the post-mortem's Spark checks in
kinspect.postmortem.spark.spark_checks); this renders them: aligned text, one line per check
and an indented fix line, or one stable JSON object for a facilitator's script.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from kinspect.lab.host_checks import Diagnosis, Status, UsePath
from kinspect.model.exits import BAD_INPUT, MISSING, READY

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

SCHEMA = 1
# The epilog, from the one table of exit codes (model/exits.py).
EXIT_HELP = (f"exit codes: {READY.code} {READY.means}; {MISSING.code} {MISSING.means}; "
             f"{BAD_INPUT.code} a usage error")
COLOURS = {Status.OK: "32", Status.WARN: "33", Status.MISSING: "31", Status.UNKNOWN: "35"}
STATUS_WIDTH = 9  # MISSING and a space
VERDICTS = {True: ("yes", "32"), False: ("no ", "31")}  # a path works here: word, colour


def register(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor", help="what this machine can do (root or user namespaces, Docker, Java, "
                       "network faults, ports, memory, Spark) and the fix for each gap",
        description="Checks this machine for kinspect's labs and post-mortem, trying the network "
                    "faults for real in a throwaway namespace (no lab is started), and prints "
                    "each finding with its exact fix, then which paths work here.",
        epilog=EXIT_HELP)
    doctor.add_argument("--json", action="store_true",
                        help='one JSON object on stdout: {"schema", "checks": [{name, status '
                             '(ok|warn|missing|unknown), found, fix, enables}], "summary": '
                             '{exit_code, network_faults, missing, paths: [{name, works, '
                             'network_faults, blocked_by, via}]}}')
    doctor.set_defaults(handler=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from kinspect.lab.host_checks import diagnose
    from kinspect.postmortem.spark.spark_checks import spark_checks

    diagnosis = diagnose(extra=spark_checks())
    if args.json:
        print(json.dumps(as_json(diagnosis), indent=2))
    else:
        print(render(diagnosis, colour=_colour_wanted()))
    return diagnosis.exit_code


def as_json(diagnosis: Diagnosis) -> JsonObject:
    """The stable shape scripts rely on (SCHEMA grows only by new keys)."""
    faults = None
    if diagnosis.faults_path:
        faults = diagnosis.faults_path.name
    return {
        "schema": SCHEMA,
        "checks": [{"name": c.name, "status": str(c.status), "found": c.found, "fix": c.fix,
                    "enables": c.enables} for c in diagnosis.checks],
        "summary": {
            "exit_code": diagnosis.exit_code,
            "network_faults": faults,
            "missing": list(diagnosis.missing),
            "paths": [{"name": p.name, "works": p.works, "network_faults": p.network_faults,
                       "blocked_by": list(p.blocked_by), "via": list(p.via)}
                      for p in diagnosis.paths],
        },
    }


def _colour_wanted() -> bool:
    if not sys.stdout.isatty():
        return False
    if "NO_COLOR" in os.environ:
        return False
    return os.environ.get("TERM") != "dumb"


def _paint(text: str, code: str, colour: bool) -> str:
    if not colour:
        return text
    return f"\033[{code}m{text}\033[0m"


def _path_line(path: UsePath, width: int, colour: bool) -> str:
    """`yes  name  via ...`, or `no   name  needs: ...`."""
    word, code = VERDICTS[path.works]
    verdict = _paint(word, code, colour)
    return f"  {verdict}  {path.name:<{width}}{_why(path)}".rstrip()


def _why(path: UsePath) -> str:
    if not path.works:
        return "needs: " + ", ".join(path.blocked_by)
    if path.via:
        return "via " + ", ".join(path.via)
    return ""


def render(diagnosis: Diagnosis, colour: bool = False) -> str:
    """One line per check (status, name, what was found), its fix indented below, then which
    paths work here and what the exit code means."""
    lines = ["what this machine can do for kinspect:", ""]
    name_width = max((len(c.name) for c in diagnosis.checks), default=0) + 2
    indent = " " * (2 + STATUS_WIDTH + name_width)
    for check in diagnosis.checks:
        status = _paint(f"{check.status.upper():<{STATUS_WIDTH}}", COLOURS[check.status], colour)
        lines.append(f"  {status}{check.name:<{name_width}}{check.found}")
        if check.fix and check.status is not Status.OK:
            lines.append(f"{indent}fix: {check.fix}")
    lines += ["", "paths:"]
    width = max((len(p.name) for p in diagnosis.paths), default=0) + 2
    for path in diagnosis.paths:
        lines.append(_path_line(path, width, colour))
    lines.append("")
    if diagnosis.faults_path:
        lines.append(f"exit 0: a lab with network faults can run here ({diagnosis.faults_path.name})")
    else:
        lines.append("exit 1: no lab with network faults here; missing: "
                     + ", ".join(diagnosis.missing) + " (fixes above)")
    return "\n".join(lines)
