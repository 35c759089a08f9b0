"""Where a command runs: here, in kinspect's container on a docker lab's network the host
cannot route to (container_relay.py), or inside a rootless lab's user namespace (rootless.py).

Both decide from the parsed command line, with the same words for which commands never need
the lab and which make one."""

from __future__ import annotations

import argparse

CommandKey = tuple[str, str | None]  # ("lab", "up"), ("snapshot", None)

# They never talk to a lab (fetching jars and building images need the host's own network).
# `learn` opens the lesson screen on the lab (like `ui`); its actions that only read files
# (--list, --summary, --check, --forget: `learn_command`) stay here.
STAYS_ON_HOST: frozenset[CommandKey] = frozenset({
    ("doctor", None), ("replay", None), ("lab", "fetch"), ("lab", "images"),
    ("learn", "list"), ("learn", "summary"), ("learn", "check"), ("learn", "forget")})
MAKES_A_LAB: frozenset[CommandKey] = frozenset({
    ("demo", None), ("lab", "up"), ("lab", "reset"), ("scenario", "run"),
    ("scenario", "matrix"), ("scenario", "chaos"), ("learn", "check_all")})


def command_key(args: argparse.Namespace) -> CommandKey:
    """The command and its action (plain `kinspect` is the TUI)."""
    name = args.command
    if not name:
        name = "ui"
    action = getattr(args, f"{name}_command", None)
    if not action:
        return name, None
    return name, str(action)


def stays_on_host(key: CommandKey) -> bool:
    return key in STAYS_ON_HOST or (key[0], None) in STAYS_ON_HOST


def run_elsewhere(args: argparse.Namespace, argv: list[str]) -> int | None:
    """The exit code of this command run where the lab can be reached, or None to run it
    here."""
    from kinspect.paths import lab_dir

    making = command_key(args) in MAKES_A_LAB
    if not making and not lab_dir().exists():
        return None  # no lab on disk to relay to or route into (and 20 ms of imports saved)
    from kinspect.cli.rootless import route

    if making or _docker_lab():  # only a docker lab is relayed to (17 ms of imports otherwise)
        from kinspect.cli.container_relay import relay_if_unreachable

        relayed = relay_if_unreachable(args, argv)
        if relayed is not None:
            return relayed
    return route(args, argv)


def _docker_lab() -> bool:
    from kinspect.lab.state import load_state

    state = load_state()
    return state is not None and state.backend == "docker"
