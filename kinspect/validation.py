"""Input validation before a command acts: a bad value is one line, exit 2, and nothing is
started or written.

Every front end (the argparse options, scenario files, a run dir's saved settings) validates
with these, so a number, a path or an address is refused with the same words wherever it came
from. In: a raw value (a string, a number, a path). Out: the value typed, or KinspectError.
(A health check, a doctor's check and a lesson file's validation are other things, elsewhere.)
"""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from kinspect.errors import KinspectError

_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")
# Kafka's own rule (kafka.common.internals.Topic): ASCII letters, digits, '.', '_' and '-'.
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def number(text: object, what: str, low: float, high: float, integer: bool = False,
           low_open: bool = False) -> float:
    """A finite number in [low, high] (or (low, high] with low_open); KinspectError otherwise.

    `what` names the option as the user wrote it ("--rate", "[load] count")."""
    span = (f"above {_show(low)} and at most {_show(high)}" if low_open
            else f"between {_show(low)} and {_show(high)}")
    kind = "a whole number" if integer else "a number"
    if isinstance(text, bool):
        raise KinspectError(f"{what} must be {kind} {span}, not {text!r}")
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise KinspectError(f"{what} must be {kind} {span}, not {text!r}") from None
    if (not math.isfinite(value) or value > high or value < low or (low_open and value <= low)
            or (integer and not value.is_integer())):
        raise KinspectError(f"{what} must be {kind} {span}, not {text!s}")
    return value


def _show(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def option(low: float, high: float, integer: bool = False,
           low_open: bool = False) -> Callable[[str], float | int]:
    """An argparse `type=` for a bounded, finite number (argparse names the option)."""
    def convert(text: str) -> float | int:
        try:
            value = number(text, "it", low, high, integer, low_open)
        except KinspectError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("it ")) from None
        return int(value) if integer else value

    convert.__name__ = "number"
    return convert


def host_ports(text: str, what: str, chroot_allowed: bool = False) -> str:
    """`host:port[,host:port]` (ZooKeeper's may end in /chroot); returned stripped."""
    hosts, _, chroot = text.strip().partition("/")
    entries = [e.strip() for e in hosts.split(",")]
    for entry in entries:
        match = _HOST_PORT.match(entry)
        if not match or not 1 <= int(match.group(2)) <= 65535:
            raise KinspectError(f"{what} wants host:port[,host:port], not {text!r} "
                                f"({entry or 'an empty entry'!r} is not host:port)")
    if chroot and not chroot_allowed:
        raise KinspectError(f"{what} wants host:port[,host:port], not {text!r}")
    return text.strip()


def topic_name(text: str, what: str = "--topic") -> str:
    if not _TOPIC.match(text) or text in {".", ".."}:
        raise KinspectError(f"{what} {text!r} is not a Kafka topic name (letters, digits, "
                            "'.', '_' and '-', at most 249)")
    return text


def writable_dir(path: Path, what: str) -> None:
    """`path` is a directory this process can create (or already has) and write into.

    Root passes every permission bit, so the check really creates and removes a directory
    in the nearest existing ancestor: /proc, a read-only mount or a full disk answer then."""
    if path.exists() and not path.is_dir():
        raise KinspectError(f"{what} {path} is a file, not a directory")
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise KinspectError(f"{what} {path}: {ancestor} is a file, not a directory")
    try:
        times = ancestor.stat()
        probe = tempfile.mkdtemp(prefix=".kinspect-check-", dir=ancestor)
        os.rmdir(probe)
        os.utime(ancestor, ns=(times.st_atime_ns, times.st_mtime_ns))  # leave it as it was
    except OSError as exc:
        raise KinspectError(f"{what} {path} cannot be written: "
                            f"{exc.strerror or exc} ({ancestor})") from None


def existing_dir(path: Path, what: str) -> None:
    if not path.exists():
        raise KinspectError(f"{what} {path} does not exist")
    if not path.is_dir():
        raise KinspectError(f"{what} {path} is a file, not a directory")
