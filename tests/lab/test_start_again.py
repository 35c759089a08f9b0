"""A broker that exits while it starts (its ZooKeeper session expired during a slow start, as
one did an hour into a nemesis) is started again, as a service manager would, and said; one
that keeps exiting is an error with the reason. Stand-ins: a backend whose node exits on its
first starts (no lab: a start that fails on cue cannot be had from a real broker), and a wait
that is served at once once the node runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kinspect.errors import KinspectError
from kinspect.lab import backend as backend_module
from kinspect.lab import presets
from kinspect.lab.backend import START_TRIES, LabBackend, plan_nodes
from kinspect.lab.state import LabState, NodeRecord, NodeState


class ExitingBackend(LabBackend):
    """Fake: a node that exits on its first `exits` starts, then runs."""

    name = "process"

    def __init__(self, root: Path, exits: int) -> None:
        self.root, self.exits, self.starts = root, exits, 0

    def _start(self, state: LabState, node: NodeRecord) -> None:
        self.starts += 1

    def _running(self, state: LabState, node: NodeRecord) -> bool:
        return self.starts > self.exits

    def _why_dead(self, node: NodeRecord) -> str:
        return " (ZooKeeper session expired)"


ExitingBackend.__abstractmethods__ = frozenset()


def served_once_running(brokers: dict[int, str], deadline: float, progress: Any,
                        gone: Any = lambda: False) -> dict[int, str]:
    """Fake wait: the gaps are none while the node runs, its own when it exited."""
    if gone():
        return {1: "does not answer (ConnectionError)"}
    return {}


def running_lab() -> tuple[LabState, NodeRecord]:
    """The lab with every node running; its kafka1."""
    nodes = plan_nodes(3, lambda index, name: (f"198.18.9.{10 + index}", 9092))
    for node in nodes:
        node.state = NodeState.RUNNING
    state = LabState(lab_id="lab1", backend="process", preset="demo", network="netns",
                     kafka_version="3.9.2", nodes=nodes, created_at=0, overrides={},
                     broker_config=presets.effective("demo", {}, "zookeeper"))
    kafka1 = state.node("kafka1")
    assert kafka1 is not None
    return state, kafka1


@pytest.fixture(autouse=True)
def fake_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend_module, "wait_until_served", served_once_running)


def test_a_broker_that_exits_while_starting_is_started_again_and_said(tmp_path: Path) -> None:
    backend = ExitingBackend(tmp_path, exits=1)
    state, node = running_lab()
    backend._start(state, node)
    said = backend._served_after_start(state, node)
    assert backend.starts == 2
    assert said == ("; it exited while starting (ZooKeeper session expired), and was started "
                    "again")


def test_a_broker_that_keeps_exiting_is_an_error_with_the_reason(tmp_path: Path) -> None:
    backend = ExitingBackend(tmp_path, exits=START_TRIES + 1)
    state, node = running_lab()
    backend._start(state, node)
    with pytest.raises(KinspectError, match=f"kafka1 exited while starting, {START_TRIES} "
                                            r"times \(ZooKeeper session expired\)"):
        backend._served_after_start(state, node)
    assert backend.starts == START_TRIES
