"""The light install, end to end, as `pip install kinspect` gives it: the sdist and the wheel
`python -m build` makes from this checkout (`twine check` passes both), the wheel installed
without extras in a fresh venv from the package registry pip is configured with
(constraints.txt pins the versions). It leaves the extras' packages out, weighs at most 80 MB,
and its `snapshot`, `health` and TUI work against the session lab, checked against ZooKeeper
and Kafka's own kafka-topics; a command that needs an extra says which in one line. The same
wheel with `[all]` says its version and makes a post-mortem of the smallest run. Only the tests
that ask the lab are marked `lab`: the others run beside the lab tests (tests/run-suite)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kinspect.lab.topics import create_topics
from tests.helpers import wait_until
from tests.helpers.oracles import kafka_topics
from tests.helpers.rundirs import clean_run

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]  # the checkout, wherever CI cloned it
LIMIT_BYTES = 80 * 1000 * 1000
LEFT_OUT = ("pyspark", "pyarrow", "numpy", "matplotlib", "docker")
TOPIC = "light1"
FLAGGED = ("offline", "under_replicated", "under_min_isr", "at_min_isr", "unavailable")
TMUX = "kinspect-light"
EXTRA_LINE = "pipinstall'kinspect[postmortem]'"  # the pane's text, spaces and boxes dropped


def run(*command: str | Path, timeout: float = 600) -> str:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, as a release makes them (`python -m build`), which `twine check`
    passes; one build for the module. It is made from a copy of the sources: a build in the
    checkout leaves build/ there, whose stale modules a later wheel would take."""
    work = tmp_path_factory.mktemp("dist")
    source = work / "source"
    shutil.copytree(ROOT / "kinspect", source / "kinspect",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    run(sys.executable, "-m", "build", "-o", work / "dist", source)
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    built = sorted(p.name for p in (work / "dist").iterdir())
    assert built == [f"kinspect-{version}-py3-none-any.whl", f"kinspect-{version}.tar.gz"], built
    checked = run(sys.executable, "-m", "twine", "check", "--strict", *(work / "dist").iterdir())
    assert checked.count("PASSED") == 2, checked
    return work / "dist"


def venv_with(dist: Path, work: Path, extras: str = "") -> Path:
    """A fresh venv holding the wheel (and `extras`), the versions constraints.txt pins."""
    wheel = next(dist.glob("kinspect-*.whl"))
    venv = work / "venv"
    run(getattr(sys, "_base_executable", sys.executable), "-m", "venv", venv)
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "-c", ROOT / "constraints.txt",
        f"{wheel}{extras}")
    return venv


@pytest.fixture(scope="module")
def light_venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return venv_with(dist, tmp_path_factory.mktemp("light"))


@pytest.fixture(scope="module")
def all_venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return venv_with(dist, tmp_path_factory.mktemp("all"), "[all]")


def light(venv: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The light venv's `kinspect`, never the checkout's modules (no PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if home is not None:
        env["KINSPECT_HOME"] = str(home)
    return subprocess.run([str(venv / "bin" / "kinspect"), *args], capture_output=True,
                          text=True, timeout=120, env=env)


def test_the_light_venv_leaves_the_extras_out_and_weighs_at_most_80_mb(
        light_venv: Path, record_property: Any, capsys: pytest.CaptureFixture[str]) -> None:
    probe = "import importlib.util, json, sys; print(json.dumps([m for m in sys.argv[1:] " \
            "if importlib.util.find_spec(m) is not None]))"
    # -I: not the checkout's docker/ folder (the current directory) as a namespace package
    assert json.loads(run(light_venv / "bin" / "python", "-I", "-c", probe, *LEFT_OUT)) == []
    size = int(run("du", "-sb", light_venv).split()[0])
    record_property("light_venv_bytes", size)
    with capsys.disabled():
        print(f"\nlight install: {size} bytes ({size / 1e6:.1f} MB) in {light_venv}")
    assert size <= LIMIT_BYTES
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = light(light_venv, "--version")
    assert (done.returncode, done.stdout) == (0, f"kinspect {version}\n")


def test_a_command_needing_an_extra_says_which_in_one_line(light_venv: Path,
                                                           tmp_path: Path) -> None:
    for args, command, extra in ((["postmortem", str(tmp_path)], "postmortem", "postmortem"),
                                 (["lab", "images"], "lab images", "lab")):
        done = light(light_venv, *args, home=tmp_path / "home")
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr == (f"kinspect: error: 'kinspect {command}' needs the {extra} extra: "
                               f"pip install 'kinspect[{extra}]'\n")


@pytest.fixture
def light_topic(lab: dict[str, Any]) -> list[dict[str, Any]]:
    """TOPIC, every partition led and its ISR full, as kafka-topics describes it."""
    create_topics(lab["bootstrap"], {TOPIC: 3})

    def in_sync() -> list[dict[str, Any]] | None:
        rows = kafka_topics(lab["bootstrap"], topic=TOPIC)
        full = len(rows) == 3 and all(r["leader"] is not None and len(r["isr"] or ()) == 3
                                      for r in rows)
        return rows if full else None

    return wait_until(in_sync, 60, f"{TOPIC} with full ISRs", interval=1)


def partitions(rows: list[dict[str, Any]]) -> dict[int, tuple[Any, ...]]:
    return {int(r["partition"]): (r["leader"], list(r["replicas"]), sorted(r["isr"] or ()))
            for r in rows}


@pytest.mark.lab
def test_snapshot_from_the_light_venv_matches_zookeeper_and_kafka_topics(
        light_venv: Path, lab: dict[str, Any], zk: KazooClient,
        light_topic: list[dict[str, Any]]) -> None:
    def agrees() -> bool:
        done = light(light_venv, "snapshot", "--json", "--topic", TOPIC)
        assert done.returncode == 0, done.stderr
        snapshot = json.loads(done.stdout)
        brokers = sorted(b["id"] for b in snapshot["brokers"] if b["registered"])
        (topic,) = snapshot["topics"]
        seen = partitions(topic["partitions"])
        return (brokers == sorted(int(b) for b in zk.get_children("/brokers/ids"))
                and seen == partitions(kafka_topics(lab["bootstrap"], topic=TOPIC)))

    wait_until(agrees, 60, "the light snapshot to agree with ZooKeeper and kafka-topics",
               interval=1)
    text = light(light_venv, "snapshot", "--topic", TOPIC)
    assert text.returncode == 0, text.stderr
    assert sum(line.startswith(TOPIC) for line in text.stdout.splitlines()) == 3


def health_agrees(venv: Path, zk: KazooClient) -> None:
    """kafka-topics saw TOPIC fully in sync (light_topic): health flags none of it, and names
    the brokers ZooKeeper holds as registered and answering."""
    def agrees() -> bool:
        done = light(venv, "health", "--json", "--timeout", "10")
        report = json.loads(done.stdout)
        assert done.returncode == report["exit_code"], done.stderr
        brokers = sorted(int(b) for b in zk.get_children("/brokers/ids"))
        flagged = {name for key in FLAGGED for name in report[key]}
        return (report["brokers"]["registered"] == report["brokers"]["answering"] == brokers
                and not {n for n in flagged if n.startswith(f"{TOPIC}-")})

    wait_until(agrees, 60, f"the health report of {venv} to agree with kafka-topics", interval=1)


@pytest.mark.lab
def test_health_from_the_light_venv_matches_zookeeper_and_kafka_topics(
        light_venv: Path, zk: KazooClient, light_topic: list[dict[str, Any]]) -> None:
    health_agrees(light_venv, zk)


def test_the_all_venv_says_its_version_and_makes_a_post_mortem(all_venv: Path,
                                                               tmp_path: Path) -> None:
    """The wheel with every extra: its version and a post-mortem of the smallest run
    (tests/helpers/rundirs.clean_run: 100 records, all acked, none lost). Its health against the
    lab is the light wheel's (the extras add no code to it)."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = light(all_venv, "--version")
    assert (done.returncode, done.stdout) == (0, f"kinspect {version}\n")
    done = subprocess.run([str(all_venv / "bin" / "kinspect"), "postmortem",
                           str(clean_run(tmp_path / "run")), "--json"],
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["acked"], report["acked_lost"]) == (100, 0)


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", TMUX, *args], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture
def light_screen(light_venv: Path, lab: dict[str, Any]) -> Iterator[None]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (make system-deps installs it)")
    command = (f"env -u COLUMNS -u LINES -u PYTHONPATH TERM=xterm-256color "
               f"KINSPECT_HOME={os.environ['KINSPECT_HOME']} {light_venv / 'bin' / 'kinspect'} ui")
    tmux("new-session", "-d", "-s", "ui", "-x", "160", "-y", "40", command)
    yield
    subprocess.run(["tmux", "-L", TMUX, "kill-server"], capture_output=True)


def screen_text() -> str:
    """The pane as one string, wrapped toasts joined: line breaks and box drawing dropped."""
    text = tmux("capture-pane", "-p", "-t", "ui")
    return "".join(ch for ch in text if ch.isascii() and ch not in "\n ")


@pytest.mark.lab
def test_the_tui_from_the_light_venv_names_the_extra_its_m_key_needs(
        light_screen: None, light_topic: list[dict[str, Any]]) -> None:
    wait_until(lambda: "controller" in screen_text() and TOPIC in screen_text(), 60,
               "the light TUI to draw the lab")
    for _attempt in range(5):  # m waits for the lab's state (the feed's first poll of it)
        tmux("send-keys", "-t", "ui", "m")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and EXTRA_LINE not in screen_text():
            time.sleep(0.2)
        if EXTRA_LINE in screen_text():
            break
    else:
        raise AssertionError(f"no toast naming the postmortem extra:\n{tmux('capture-pane', '-p')}")
    tmux("send-keys", "-t", "ui", "q")
    deadline = time.monotonic() + 20
    while subprocess.run(["tmux", "-L", TMUX, "has-session", "-t", "ui"],
                         capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, f"the TUI did not quit:\n{screen_text()}"
        time.sleep(0.2)
