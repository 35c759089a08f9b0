"""Fixtures for the real lab: one lab per test session, in its own KINSPECT_HOME.

Only one lab runs at a time (2 cores): tests that need a cluster share the session lab and
leave it healed and running; the lifecycle tests (marked `lab_lifecycle`) run last and take
it down themselves, asserting that nothing is left behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.helpers import kinspect


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lab_lifecycle: takes the session lab down; runs last")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked resets_lab (scenarios, on-call) reset the lab with their own settings, so
    they run after those sharing the session lab; lifecycle tests (which take it down) last."""
    def order(item: pytest.Item) -> int:
        if item.get_closest_marker("lab_lifecycle"):
            return 2
        return 1 if item.get_closest_marker("resets_lab") else 0

    items.sort(key=order)


@pytest.fixture(scope="session")
def lab_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tests never touch the user's own lab: they get a KINSPECT_HOME of their own."""
    home = tmp_path_factory.mktemp("kinspect-home")
    os.environ["KINSPECT_HOME"] = str(home)
    return home


class Lab:
    """The session lab: brought up on first use, reported by `kinspect lab status --json`."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.up_output = ""

    def ensure_up(self) -> dict[str, Any]:
        proc = kinspect("lab", "up", "--json", timeout=400)
        self.up_output = proc.stderr
        return dict(json.loads(proc.stdout))

    def status(self) -> dict[str, Any]:
        return dict(json.loads(kinspect("lab", "status", "--json").stdout))

    def down(self) -> None:
        kinspect("lab", "down", check=False)


@pytest.fixture(scope="session")
def lab_session(lab_home: Path) -> Iterator[Lab]:
    lab = Lab(lab_home)
    yield lab
    lab.down()


def wait_for_all_brokers(status: dict[str, Any], timeout: float = 60.0) -> None:
    """A broker restarted by the previous test may not be back in every broker's metadata yet;
    topic creation with replication factor 3 would then fail."""
    from kinspect.lab.topics import wait_for_brokers

    wait_for_brokers(status["bootstrap"], sum(n["role"] == "broker" for n in status["nodes"]),
                     timeout)


@pytest.fixture
def lab(lab_session: Lab) -> Iterator[dict[str, Any]]:
    """A running, healed lab with every node up; the status JSON."""
    status = lab_session.ensure_up()
    for node in status["nodes"]:
        if node["state"] == "paused":
            kinspect("lab", "resume", node["name"])
        elif node["state"] != "running":
            kinspect("lab", "start", node["name"])
    if status["groups"]:
        kinspect("lab", "heal")
    wait_for_all_brokers(status)
    yield lab_session.status()
    after = kinspect("lab", "status", "--json", check=False)
    if after.returncode == 0 and json.loads(after.stdout)["groups"]:
        kinspect("lab", "heal")


@pytest.fixture
def zk(lab: dict[str, Any]) -> Iterator[KazooClient]:
    client = KazooClient(hosts=lab["zookeeper"], timeout=10.0)
    client.start(timeout=20)
    yield client
    client.stop()
    client.close()
