"""The light install, fast (no lab, no wheel): with the extras' packages made unimportable, the
inspector's modules still import, and a command that needs an extra says which in one line."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from kinspect.errors import error_line
from kinspect.extras import ALL, EXTRAS, command_words, extra_for, missing_extra

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = sorted(set().union(*EXTRAS.values()))
# Run before anything else in a child: every extra's package is then missing, as in a light venv.
WITHOUT_EXTRAS = f"import sys\nfor name in {OPTIONAL!r}:\n    sys.modules[name] = None\n"


def without_extras(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS + code], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "KINSPECT_HOME": str(tmp_path / "home"),
                               "KINSPECT_BACKEND": "process", "PYTHONPATH": str(ROOT)})


def test_extras_are_the_ones_pyproject_declares() -> None:
    """EXTRAS names the modules of pyproject's extras; none of them is a core dependency."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def modules(requirements: list[str]) -> set[str]:
        """The top-level module each requirement installs (its name, but PyJWT's is jwt)."""
        names = (re.match(r"[A-Za-z0-9_.-]+", r) for r in requirements)
        found = {m.group(0).lower().replace("-", "_") for m in names if m}
        return {{"pyjwt": "jwt"}.get(name, name) for name in found}

    declared = project["optional-dependencies"]
    for extra, expected in EXTRAS.items():
        assert modules(declared[extra]) == expected, extra
    assert declared[ALL] == [f"kinspect[{','.join(sorted(EXTRAS))}]"]
    assert modules(project["dependencies"]).isdisjoint(OPTIONAL)


def test_the_inspector_imports_without_any_extra(tmp_path: Path) -> None:
    """Every module of the CLI, the TUI, the sources, the clients and the model imports, the
    parser builds, and a recorded run's live loss reads back, with no extra installed."""
    code = """
import importlib, json, pkgutil
import kinspect
for package in ("cli", "tui", "sources", "clients", "model"):
    root = importlib.import_module("kinspect." + package)
    for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
        importlib.import_module(info.name)
from kinspect.cli import build_parser
from kinspect.extras import installed
from kinspect.load.liveloss import LiveLoss
build_parser()
live = LiveLoss.from_json({"acked": 5, "partitions": [{"topic": "t", "partition": 0, "doomed": 2}]})
print(json.dumps([live.doomed_total, installed("postmortem"), installed("lab")]))
"""
    done = without_extras(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [2, False, False]


@pytest.mark.parametrize(("args", "command", "extra"), [
    (["postmortem", "{tmp}"], "postmortem", "postmortem"),
    (["lab", "images"], "lab images", "lab"),
    (["load", "run", "--topic", "t", "--run-dir", "{tmp}/run"], "load run", "load"),
    (["scenario", "run", "acks0-kill-leader"], "scenario run", "all"),
])
def test_a_command_needing_a_missing_extra_says_which_in_one_line(
        tmp_path: Path, args: list[str], command: str, extra: str) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = without_extras(f"from kinspect.cli import main\nraise SystemExit(main({argv!r}))",
                          tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (f"kinspect: error: 'kinspect {command}' needs the {extra} extra: "
                           f"pip install 'kinspect[{extra}]'\n")


def test_the_tui_says_the_extra_in_its_one_line() -> None:
    """The TUI's toasts and worker failures go through error_line: outside a command, numpy
    and pyarrow are the post-mortem's (m, e)."""
    assert error_line(ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")) == (
        "pyarrow is not installed (the postmortem extra): pip install 'kinspect[postmortem]'")
    assert error_line(ModuleNotFoundError("No module named 'docker'", name="docker.errors")) == (
        "docker is not installed (the lab extra): pip install 'kinspect[lab]'")
    # a module no extra provides is a bug: said as it is
    assert error_line(ModuleNotFoundError("No module named 'foo'", name="foo")) == (
        "ModuleNotFoundError: No module named 'foo'")


def test_the_command_s_own_extra_wins_when_it_provides_the_module() -> None:
    assert extra_for("numpy", "load") == "load"
    assert extra_for("numpy", "health") == "postmortem"
    assert extra_for("pyspark", "load") == "postmortem"  # verify reaching Spark: not load's
    assert extra_for("docker", "scenario") == ALL
    assert extra_for("kazoo", "lab") is None  # a core dependency: a broken install, not ours
    assert missing_extra(ValueError("numpy")) is None


def test_command_words_follow_the_sub_commands() -> None:
    args = argparse.Namespace(command="lab", lab_command="user", user_command="add")
    assert command_words(args) == ["lab", "user", "add"]
    assert command_words(argparse.Namespace(command="postmortem")) == ["postmortem"]


def test_version_is_the_installed_distribution_s() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    done = subprocess.run([sys.executable, "-m", "kinspect", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"kinspect {project['version']}\n")


DOCKER_LAB = """
from kinspect.lab.state import LabState, NodeRecord, save_state
from kinspect.paths import lab_dir
node = NodeRecord("kafka1", "broker", "198.19.1.11", 9092, 1, None, "running", None)
save_state(LabState(lab_id="d", backend="docker", preset="demo", network="docker",
                    kafka_version="3.9.2", broker_config={}, overrides={}, nodes=[node],
                    created_at=0), lab_dir())
from kinspect.cli import main
"""


def test_a_recorded_docker_lab_does_not_stop_a_light_install_aimed_elsewhere(
        tmp_path: Path) -> None:
    """Opening a docker lab needs the lab extra; `health --bootstrap` of another cluster must
    not: it asks that cluster (here nothing answers: exit 3, unreachable, said as such)."""
    aimed = without_extras(DOCKER_LAB + "raise SystemExit(main(['health', '--bootstrap', "
                           "'127.0.0.1:9', '--json']))", tmp_path)
    assert aimed.returncode == 3, aimed.stderr
    assert "extra" not in aimed.stderr and json.loads(aimed.stdout)["verdict"] == "unreachable"
    at_lab = without_extras(DOCKER_LAB + "raise SystemExit(main(['health']))", tmp_path)
    assert (at_lab.returncode, at_lab.stderr) == (
        2, "kinspect: error: 'kinspect health' needs the lab extra: pip install 'kinspect[lab]'\n")
