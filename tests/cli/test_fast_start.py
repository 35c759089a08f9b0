"""`kinspect health` and `snapshot` start fast: the CLI imports only the command asked for, and
that command only what it uses (no lab, TUI, post-mortem, Arrow or Spark)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kinspect.cli import COMMANDS, build_parser

HEAVY = ("kinspect.lab.backend", "kinspect.tui", "kinspect.postmortem", "kinspect.load",
         "kinspect.scenarios", "kinspect.lessons", "textual", "pyarrow", "numpy", "pyspark",
         "duckdb",
         # no lab on disk: nothing to relay or route (placement.py); OAuth's HTTP only for it
         "kinspect.cli.container_relay", "kinspect.cli.rootless", "urllib.request",
         # no --zookeeper, no profiles file; of kafka-python only its connection and protocol
         "kazoo", "tomllib", "kafka.admin", "kafka.consumer", "kafka.producer")


def commands_of(parser: argparse.ArgumentParser) -> set[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_every_command_is_in_the_table_with_the_module_that_registers_it() -> None:
    everything = commands_of(build_parser())
    assert everything == set(COMMANDS)
    for command in everything:
        assert command in commands_of(build_parser([command, "--help"]))


def test_help_and_a_mistyped_command_still_list_every_command() -> None:
    assert commands_of(build_parser(["--help"])) == set(COMMANDS)
    assert commands_of(build_parser(["helth"])) == set(COMMANDS)
    assert commands_of(build_parser([])) == {"demo", "ui"}  # plain `kinspect`: the TUI


@pytest.mark.parametrize("command", ["health", "snapshot"])
def test_a_one_shot_command_imports_only_what_it_uses(command: str, tmp_path: Path) -> None:
    """With no lab on disk (a lab on disk is asked whether it runs, which takes its backend)."""
    code = ("import sys, json\nfrom kinspect.cli import main\n"
            f"rc = main([{command!r}, '--bootstrap', '127.0.0.1:1', '--timeout', '1'])\n"
            "print(json.dumps([rc, sorted(sys.modules)]))")
    if command == "snapshot":
        code = code.replace(", '--timeout', '1'", "")
    env = {**os.environ, "KINSPECT_HOME": str(tmp_path)}  # the session's lab is not this one's
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True, env=env)
    rc, modules = json.loads(done.stdout.splitlines()[-1])
    assert rc in (2, 3), done.stderr  # nobody listens there: unreachable, said in one line
    loaded = {heavy for heavy in HEAVY for m in modules if m == heavy or m.startswith(heavy + ".")}
    assert loaded == set()


def test_the_groups_probe_process_starts_without_the_model() -> None:
    """It runs beside every one-shot command: its start is on the command's critical path."""
    code = "import sys, json\nimport kinspect.clients.groups\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    modules = json.loads(done.stdout)
    assert "confluent_kafka" in modules
    assert not [m for m in modules if m == "kinspect.model" or m.startswith("kinspect.model.")]


def test_a_quick_exit_loses_nothing_written() -> None:
    """A one-shot command ends its process without tearing down; what it wrote is all out,
    buffered or not, and its exit code is kept."""
    code = ("import sys\nfrom kinspect.cli import quick_exit\n"
            "sys.stdout.write('x' * 300_000)\nprint('last', file=sys.stderr, end='')\n"
            "quick_exit(3)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONUNBUFFERED": ""})
    assert (done.returncode, len(done.stdout), done.stderr) == (3, 300_000, "last")
