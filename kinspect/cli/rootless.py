"""Without root, the same commands: a rootless lab lives in a user namespace, and every command
that talks to it re-runs itself there (kinspect.lab.userns holds the namespace).

Decided from the parsed command line before any handler runs, so the user types exactly what
they would type as root."""

from __future__ import annotations

import argparse
import sys

from kinspect.cli.placement import MAKES_A_LAB, CommandKey, command_key, stays_on_host
from kinspect.errors import KinspectError
from kinspect.lab import userns
from kinspect.paths import lab_dir


def route(args: argparse.Namespace, argv: list[str]) -> int | None:
    """The exit code of the command run inside the rootless lab, or None to run it here."""
    if userns.is_root() or userns.inside() is not None:
        return None
    command = command_key(args)
    if stays_on_host(command) or _other_cluster(args):
        return None
    holder = userns.read_holder(lab_dir())
    if holder is None:
        holder = _holder_for(command, args)
        if holder is None:
            return None
    elif not holder.alive():
        return _holder_gone(command, holder)
    code = userns.run_inside(holder, argv)
    if _nothing_to_hold(command):
        userns.stop_holder(lab_dir(), holder)
    return code


def _holder_for(command: CommandKey, args: argparse.Namespace) -> userns.Holder | None:
    """A new namespace, for a command that makes a process lab with network faults."""
    if command not in MAKES_A_LAB:
        return None
    if not _wants_rootless(args):
        return None
    return _new_holder(args)


def _nothing_to_hold(command: CommandKey) -> bool:
    """After `lab down`, or a `lab up` that failed inside, the namespace holds nothing."""
    if command == ("lab", "down"):
        return True
    if command not in MAKES_A_LAB:
        return False
    return _lab_gone()


def _other_cluster(args: argparse.Namespace) -> bool:
    """A command pointed at another cluster (--bootstrap, --profile) runs on the host."""
    return bool(getattr(args, "bootstrap", None) or getattr(args, "profile", None))


def _wants_rootless(args: argparse.Namespace) -> bool:
    """A process lab with network faults: not docker, not --network loopback."""
    if getattr(args, "network", "auto") == "loopback":
        return False
    chosen = getattr(args, "backend", "auto")
    if chosen == "auto":
        from kinspect.lab import choose_backend

        chosen = choose_backend()
    return bool(chosen == "process")


def _new_holder(args: argparse.Namespace) -> userns.Holder | None:
    """Kafka's jars fetched here (the namespace has no network), then the namespace; None
    (with the reason said once) where user namespaces are not allowed: a loopback lab."""
    why = userns.userns_support()
    if why is not None:
        print(f"kinspect: a lab with network faults needs root or user namespaces: {why}; "
              "this lab runs on loopback", file=sys.stderr)
        return None
    from kinspect.cli.common import progress
    from kinspect.lab import dist

    dist.ensure(progress, version=getattr(args, "kafka", None))
    return userns.start_holder(lab_dir())


def _lab_gone() -> bool:
    """`lab up` failed inside: nothing to hold."""
    return not (lab_dir() / "state.json").exists()


def _holder_gone(command: CommandKey, holder: userns.Holder) -> int:
    """The namespace died (and with it every node): `lab down` tidies, the rest say so."""
    from kinspect.lab.state import clear_state

    if command == ("lab", "down"):
        clear_state(lab_dir())
        (lab_dir() / userns.HOLDER_FILE).unlink(missing_ok=True)
        print(f"the rootless lab's namespace (holder pid {holder.pid}) was already gone, and "
              "its nodes with it: cleared", file=sys.stderr)
        return 0
    raise KinspectError(f"the rootless lab's namespace (holder pid {holder.pid}) is gone and "
                        "its nodes with it (clear it with: kinspect lab down)")
