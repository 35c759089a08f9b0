"""The `kinspect` command: argparse front end; every user error is one line and exit code 2.

In: the command line (and the profiles file for a named cluster). Out: one subcommand run, from
a module of its own imported only when its word is given (COMMANDS): text or JSON on stdout,
the screen (through kinspect.tui), files in a run dir, an exit code. The top layer: it may
import every other one.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import warnings
from collections.abc import Sequence

from kinspect.errors import KinspectError
from kinspect.heap import limit_arenas
from kinspect.profiles import redact


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"kinspect: error: {message} (see: {self.prog} --help)\n")


# Each command and the module that registers it. Only the module of the command asked for is
# imported (a module pulls in its layer: `health` needs neither the lab nor the TUI); help, no
# command or a word that is none of these import them all.
COMMANDS = {"demo": "demo", "ui": "demo", "doctor": "doctor", "lab": "lab",
            "snapshot": "observe", "watch": "observe", "health": "health",
            "exporter": "exporter", "load": "load", "verify": "load", "consume": "consume",
            "postmortem": "postmortem", "scenario": "scenario", "replay": "replay",
            "learn": "learn"}


def _modules_for(argv: Sequence[str] | None) -> list[str]:
    """The command's own module when argv starts with one (the only top-level options, --help
    and --version, end the run), else all: `kinspect --help` and a mistyped command list
    every command."""
    if argv is None:
        return list(dict.fromkeys(COMMANDS.values()))
    if not argv:  # plain `kinspect` opens the TUI
        return [COMMANDS["ui"]]
    if argv[0] in COMMANDS:
        return [COMMANDS[argv[0]]]
    return list(dict.fromkeys(COMMANDS.values()))


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the words it will parse, only the command they name is registered
    (fast start), otherwise every command."""
    from kinspect.cli.common import VersionAction

    parser = _Parser(
        prog="kinspect", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Terminal inspector and fault console for Apache Kafka (ZooKeeper or "
                    "KRaft mode).",
        epilog="start here:\n"
               "  kinspect doctor                     what this machine can do, and each fix\n"
               "  kinspect demo [--backend docker]    lab up, demo topics, the TUI\n"
               "  kinspect scenario run NAME          a classic data-loss experiment (see list);\n"
               "                                      with --kafka 4.x on today's Kafka\n"
               "  kinspect lab up --mode kraft        a KRaft lab: controller ctl1, no ZooKeeper\n"
               "  kinspect health --profile prod      on call: exit 0/1/2/3\n"
               "  kinspect replay RUN_DIR [--at T]    play a recorded session or run back\n"
               "  kinspect learn                      the guided workshop: predict, watch, fix\n"
               "  kinspect COMMAND --help             every option of a command")
    parser.add_argument("--version", action=VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in _modules_for(argv):
        importlib.import_module(f"kinspect.cli.{module}").register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # kazoo warns on stderr of a chroot that does not exist; the ZooKeeper source says it in
    # one line of its own ("holds no Kafka cluster ... under the chroot").
    warnings.filterwarnings("ignore", message="No chroot path exists")
    words = _words(argv)
    parser = build_parser(words)
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:  # plain `kinspect` opens the TUI
        args = parser.parse_args(["ui"])
    quick = _quick(argv, args)
    if quick:  # a one-shot process: the collector would only walk its imports and its one model
        gc.disable()
    if getattr(args, "long_lived", False):  # hours of polls in threads: a few malloc arenas,
        limit_arenas()  # capped before any thread (`kinspect demo` made 15 before its screen)
    code = _dispatch(args, words)
    if quick:
        quick_exit(code)
    return code


def _words(argv: Sequence[str] | None) -> list[str]:
    """The words to parse: the process's own when none are given."""
    if argv is None:
        return sys.argv[1:]
    return list(argv)


def _quick(argv: Sequence[str] | None, args: argparse.Namespace) -> bool:
    """A one-shot command run as its own process (not called in-process by a test)."""
    if argv is not None:
        return False
    return bool(getattr(args, "quick_exit", False))


def quick_exit(code: int) -> None:
    """End a one-shot command's own process once its answer is out, without tearing down:
    freeing a 10,000-partition model object by object and the interpreter's last collection
    took ~0.15 s after the answer, and none of it is needed (the sources are stopped, the
    groups process ended, nothing else is open)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # a reader gone, or a stream closed: nothing to lose
        pass
    os._exit(code)


def _dispatch(args: argparse.Namespace, words: list[str]) -> int:
    """Run the command; a KinspectError (and a few others) is one line and its exit code."""
    try:
        return _run(args, words)
    except KinspectError as exc:
        print(f"kinspect: error: {redact(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kinspect: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `kinspect lab status | head`: the reader had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except ModuleNotFoundError as exc:  # the light install: name the extra this command needs
        if not _missing_extra(exc, args):
            raise
        return 2
    except Exception as exc:
        if not _refused_property(exc):
            raise
        return 2


def _run(args: argparse.Namespace, words: list[str]) -> int:
    """The command, here or (placement) in the lab's own container."""
    from kinspect.cli.placement import run_elsewhere

    elsewhere = run_elsewhere(args, words)
    if elsewhere is not None:
        return elsewhere
    code = args.handler(args)
    if code is None:
        return 0
    return int(code)


def _missing_extra(exc: ModuleNotFoundError, args: argparse.Namespace) -> bool:
    """Whether the module missing belongs to an extra this install lacks (then said)."""
    from kinspect.extras import command_words, missing_extra

    line = missing_extra(exc, command_words(args))
    if line is None:
        return False
    print(f"kinspect: error: {line}", file=sys.stderr)
    return True


def _refused_property(exc: Exception) -> bool:
    """Whether librdkafka refused a property from -X or a profile's [kafka] table (then said)."""
    from confluent_kafka import KafkaError, KafkaException

    if not isinstance(exc, KafkaException) or not exc.args:
        return False
    error = exc.args[0]
    if not isinstance(error, KafkaError) or error.code() != KafkaError._INVALID_ARG:
        return False
    print(f"kinspect: error: {redact(error.str())}", file=sys.stderr)
    return True
