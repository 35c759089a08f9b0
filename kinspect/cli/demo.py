"""`kinspect demo`: everything a newcomer needs in one command."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from kinspect.cli.common import add_cluster_arguments, resolve_cluster
from kinspect.cli.progress import Display
from kinspect.lab import BACKENDS, open_backend
from kinspect.lab.backend import UpOptions
from kinspect.lab.topics import DEMO_TOPICS, balance_leaders, create_topics


def register(commands: Any) -> None:
    demo = commands.add_parser("demo", help="fetch Kafka, start the lab, create demo topics, "
                               "open the TUI")
    demo.add_argument("--no-ui", action="store_true", help="set everything up, then exit")
    demo.add_argument("--backend", choices=BACKENDS, default="auto",
                      help="process (JVMs in namespaces) or docker (containers); auto: docker "
                           "when an engine answers")
    demo.add_argument("--no-confirm", action="store_true",
                      help="fault keys act without asking (for stage demos)")
    demo.add_argument("--power", action="store_true",
                      help="brokers' disks that can lose power (lab up --power): the o key "
                           "cuts every broker's power at once")
    demo.set_defaults(handler=cmd_demo, long_lived=True)

    ui = commands.add_parser("ui", help="open the TUI on the running lab (the default command), "
                             "or read-only on any --profile / --bootstrap")
    add_cluster_arguments(ui)
    ui.add_argument("--no-confirm", action="store_true",
                    help="fault keys act without asking (for stage demos)")
    ui.set_defaults(handler=cmd_ui, long_lived=True)


def prepare_demo(backend: str = "auto", power: bool = False) -> str:
    """Lab up (fetching Kafka if needed) and the demo topics; returns the bootstrap."""
    with Display() as display:  # closed before the TUI takes the screen
        return _prepare(backend, display.line, power)


def _prepare(backend: str, progress: Callable[[str], None], power: bool = False) -> str:
    lab = open_backend(backend, progress=progress)
    state = lab.up(UpOptions(power=power), progress)
    created = create_topics(state.bootstrap, DEMO_TOPICS)
    for name in created:
        progress(f"created topic {name} ({DEMO_TOPICS[name]} partitions, replication factor 3)")
    unbalanced = balance_leaders(state.bootstrap)
    if unbalanced:
        progress(f"preferred leader election did not finish: {unbalanced} (the demo still "
                 "works; leaders may sit on fewer brokers)")
    return state.bootstrap


def cmd_demo(args: argparse.Namespace) -> int:
    prepare_demo(args.backend, args.power)
    if args.no_ui:
        from kinspect.cli.lab import print_status

        return print_status(open_backend(), as_json=False)
    from kinspect.tui.app import run_app

    return run_app(resolve_cluster(args), no_confirm=args.no_confirm)


def cmd_ui(args: argparse.Namespace) -> int:
    from kinspect.tui.app import run_app

    return run_app(resolve_cluster(args), no_confirm=args.no_confirm)
