"""Arguments shared by commands that talk to a cluster: the lab by default, or any cluster.

A cluster comes from --bootstrap/--zookeeper, from a --profile, or is the running lab. Only a
cluster whose ZooKeeper holds the running lab's id (written by `lab up`) counts as the lab:
every other cluster is read-only, whatever its address.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.extras import missing_extra
from kinspect.lab import running_lab
from kinspect.lab.state import LabState
from kinspect.profiles import SECRET_KEY, Profile, load_profile, remember_secret
from kinspect.target import ClusterTarget, is_lab_cluster, lab_target, profile_target
from kinspect.validation import host_ports

if TYPE_CHECKING:
    from kinspect.clients.groups_watch import GroupsWatch
    from kinspect.clients.kafka import WatchedAdmin

__all__ = ["ClusterTarget", "VersionAction", "add_cluster_arguments", "progress", "resolve_cluster",
           "resolve_with_admin"]


def progress(line: str) -> None:
    """Progress lines go to stderr, so stdout stays clean for --json."""
    print(line, file=sys.stderr, flush=True)


def add_cluster_arguments(parser: argparse.ArgumentParser, zookeeper: bool = True) -> None:
    parser.add_argument("--profile", metavar="NAME",
                        help="a cluster from ~/.config/kinspect/config.toml")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="the profiles file (default $KINSPECT_CONFIG or "
                             "~/.config/kinspect/config.toml)")
    parser.add_argument("--bootstrap", metavar="H:P[,H:P]",
                        help="bootstrap servers (default: the profile's, else the running lab)")
    if zookeeper:
        parser.add_argument("--zookeeper", metavar="H:P[/chroot]",
                            help="ZooKeeper connect string (default: the profile's or lab's; "
                                 "none for a bare --bootstrap, e.g. KRaft)")
    parser.add_argument("-X", action="append", default=[], metavar="KEY=VALUE",
                        help="librdkafka property, as kcat does (repeatable)")


def resolve_cluster(args: argparse.Namespace) -> ClusterTarget:
    """The cluster the options name; every address is checked before anything connects."""
    return _resolve(args, early=False)[0]


def resolve_with_admin(args: argparse.Namespace) -> tuple[ClusterTarget, WatchedAdmin | None]:
    """The cluster, and the observer's AdminClient (its default timeout) made as soon as the
    cluster's address is known: librdkafka connects beside the rest of a one-shot command's
    imports, and a KRaft lab is proven on that connection (no client of its own)."""
    return _resolve(args, early=True)


def _resolve(args: argparse.Namespace, early: bool
             ) -> tuple[ClusterTarget, WatchedAdmin | None]:
    _check_addresses(args)
    profile = _profile(args)
    kafka = _profile_kafka(profile)
    kafka.update(librdkafka_properties(args))
    bootstrap = getattr(args, "bootstrap", None)
    if bootstrap is None and profile is None:
        target = _lab_cluster(args, kafka)
        return target, _early_admin(early, target.bootstrap, target.kafka)
    named = _named_cluster(args, bootstrap, profile, kafka)
    admin = _early_admin(early, named.bootstrap, kafka)
    return profile_target(named, _openable_lab(), admin), admin


def _check_addresses(args: argparse.Namespace) -> None:
    """Every address given is checked before anything connects (an empty one is refused)."""
    bootstrap = getattr(args, "bootstrap", None)
    if bootstrap is not None:
        host_ports(bootstrap, "--bootstrap")
    zookeeper = getattr(args, "zookeeper", None)
    if zookeeper is not None:
        host_ports(zookeeper, "--zookeeper", chroot_allowed=True)


def _profile(args: argparse.Namespace) -> Profile | None:
    name = getattr(args, "profile", None)
    if not name:
        return None
    return load_profile(name, getattr(args, "config", None))


def _profile_kafka(profile: Profile | None) -> dict[str, str]:
    """A copy of the profile's librdkafka properties, for -X to override."""
    if profile is None:
        return {}
    return dict(profile.kafka)


def _named_cluster(args: argparse.Namespace, bootstrap: str | None, profile: Profile | None,
                   kafka: dict[str, str]) -> Profile:
    """The cluster as a profile: the options given win over the profile's own (an address
    given is never empty here: _check_addresses refused that)."""
    zookeeper = getattr(args, "zookeeper", None)
    if profile is None:
        assert bootstrap is not None  # no profile: _resolve came here for --bootstrap
        return Profile(bootstrap, bootstrap, zookeeper, kafka)
    if bootstrap is None:
        bootstrap = profile.bootstrap
    if zookeeper is None:
        zookeeper = profile.zookeeper
    return Profile(profile.name, bootstrap, zookeeper, kafka, profile.zookeeper_auth,
                   profile.refresh_s)


def _early_admin(early: bool, bootstrap: str, kafka: dict[str, str]) -> WatchedAdmin | None:
    if not early:
        return None
    return _admin(bootstrap, kafka)


def _lab_cluster(args: argparse.Namespace, kafka: dict[str, str]) -> ClusterTarget:
    lab = running_lab()
    if lab is None:
        raise KinspectError("no lab is running and no --bootstrap or --profile given "
                            "(start one with: kinspect lab up)")
    zookeeper = getattr(args, "zookeeper", None)
    if zookeeper is None:
        return lab_target(lab, kafka)
    if not is_lab_cluster(zookeeper, lab):  # another cluster's ZooKeeper: read-only
        return ClusterTarget(lab.bootstrap, zookeeper, kafka, (), None, 1.0, lab.bootstrap)
    return replace(lab_target(lab, kafka), zookeeper=zookeeper)


def _admin(bootstrap: str, kafka: dict[str, str]) -> WatchedAdmin:
    from kinspect.clients.kafka import admin_client

    return admin_client(bootstrap, config=kafka)


def _openable_lab() -> LabState | None:
    """The running lab, when this install can open it: a docker lab needs the lab extra, and
    a command aimed at a cluster of its own (--bootstrap, --profile) must not fail for want
    of it; that cluster is then simply not taken for the lab (read-only)."""
    try:
        return running_lab()
    except ModuleNotFoundError as exc:
        if missing_extra(exc) is None:
            raise
        return None


def librdkafka_properties(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    pairs = getattr(args, "X", None)
    if pairs is None:
        return out
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise KinspectError(f"-X expects key=value, got {pair!r}")
        out[key.strip()] = value
        if SECRET_KEY.search(key):
            remember_secret(value)
    return out


def progress_line(line: str) -> None:
    """Live progress on stderr: rewritten in place on a terminal, one line each otherwise."""
    if sys.stderr.isatty():
        print("\r" + line, end="", file=sys.stderr, flush=True)
    else:
        print(line, file=sys.stderr, flush=True)


class VersionAction(argparse.Action):
    """`--version`: the installed distribution's version, read only when asked (importlib.metadata
    costs ~50 ms, too much for every command's start)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 **_: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the installed kinspect's version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("kinspect")
        except PackageNotFoundError:  # a source tree that was never installed
            from kinspect import __version__ as found
        print(f"kinspect {found}")  # on stdout, as argparse's own version action
        parser.exit()


def early_groups(cluster: ClusterTarget) -> GroupsWatch | None:
    """The consumer groups' probe process, started before the rest of a one-shot command is
    imported: its own start (~0.15 s) then runs beside the imports, not after them."""
    from kinspect.clients.groups_watch import started

    if not cluster.bootstrap:
        return None
    return started(cluster.bootstrap, dict(cluster.kafka))
