"""Arguments shared by commands that talk to a cluster: the lab by default, or any cluster."""

from __future__ import annotations

import argparse

from kinspect.errors import KinspectError
from kinspect.lab import running_lab
from kinspect.lab.state import LabState


def add_cluster_arguments(parser: argparse.ArgumentParser, zookeeper: bool = True) -> None:
    parser.add_argument("--bootstrap", metavar="H:P[,H:P]",
                        help="bootstrap servers (default: the running lab)")
    if zookeeper:
        parser.add_argument("--zookeeper", metavar="H:P[/chroot]",
                            help="ZooKeeper connect string (default: the running lab's)")
    parser.add_argument("-X", action="append", default=[], metavar="KEY=VALUE",
                        help="librdkafka property, as kcat does (repeatable)")


def lab_or_none() -> LabState | None:
    return running_lab()


def resolve_bootstrap(args: argparse.Namespace) -> str:
    if getattr(args, "bootstrap", None):
        return str(args.bootstrap)
    lab = lab_or_none()
    if lab is None:
        raise KinspectError("no lab is running and no --bootstrap given "
                            "(start one with: kinspect lab up)")
    return lab.bootstrap


def resolve_zookeeper(args: argparse.Namespace) -> str | None:
    """The ZooKeeper to watch: explicit, else the lab's; None for a bare --bootstrap (KRaft)."""
    if getattr(args, "zookeeper", None):
        return str(args.zookeeper)
    if getattr(args, "bootstrap", None):
        return None
    lab = lab_or_none()
    return lab.zookeeper.address if lab else None


def librdkafka_properties(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in getattr(args, "X", []) or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise KinspectError(f"-X expects key=value, got {pair!r}")
        out[key.strip()] = value
    return out
