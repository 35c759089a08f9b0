"""The lab's state on disk: what runs where, so any command (or a later session) finds it.

State is written before anything is made and updated after every change, under a file lock,
so `lab down` can clean up even after the process that built the lab was SIGKILLed.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from kinspect.errors import KinspectError
from kinspect.lab.topology import blocked_pairs
from kinspect.paths import lab_dir


class NodeState(StrEnum):
    """What a lab node is doing, as the lab last saw it (reconciled with reality on read)."""

    RUNNING = "running"
    PAUSED = "paused"  # SIGSTOP / docker pause
    STOPPED = "stopped"  # a clean shutdown, or never started
    KILLED = "killed"  # SIGKILL / docker kill
    EXITED = "exited"  # died by itself
    POWERED_OFF = "powered-off"  # power.py: its unsynced writes dropped, then killed

    @property
    def alive(self) -> bool:
        """It holds its sessions and sockets (a paused JVM does, frozen)."""
        return self in {NodeState.RUNNING, NodeState.PAUSED}


Role = Literal["zookeeper", "broker", "controller"]  # a controller: a dedicated KRaft voter
Network = Literal["netns", "loopback", "docker"]  # how the lab's nodes are wired


@dataclass
class NodeRecord:
    """One node of the lab: ZooKeeper (zk1), a broker (kafka1..N) or a KRaft controller
    (ctl1..N, node id 100 + N). In a combined KRaft lab each broker is also a voter and its
    controller listener is at `controller_port`."""

    name: str
    role: Role
    host: str
    port: int
    broker_id: int | None = None
    pid: int | None = None
    state: NodeState = NodeState.STOPPED
    netns: str | None = None
    container: str | None = None
    node_id: int | None = None  # a dedicated controller's KRaft node id (brokers: broker_id)
    controller_port: int | None = None  # a combined broker's controller listener

    def __post_init__(self) -> None:
        self.state = NodeState(self.state)  # from the state file's string

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def kraft_id(self) -> int | None:
        """Its KRaft node id: the broker id, or a dedicated controller's own."""
        return self.broker_id if self.broker_id is not None else self.node_id

    @property
    def controller_address(self) -> str | None:
        """Where its KRaft controller listener is (None: it is not a voter)."""
        if self.role == "controller":
            return self.address
        return f"{self.host}:{self.controller_port}" if self.controller_port else None


@dataclass
class LabState:
    lab_id: str
    backend: str
    preset: str
    network: Network
    kafka_version: str
    broker_config: dict[str, str]
    overrides: dict[str, str]
    nodes: list[NodeRecord]
    created_at: int
    slot: int | None = None
    host_address: str = "127.0.0.1"
    forward_rule: bool = False
    groups: list[list[str]] = field(default_factory=list)
    clients_with: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    mode: str = "zookeeper"  # "zookeeper" | "kraft"

    @property
    def kraft(self) -> bool:
        return self.mode == "kraft"

    def node(self, name: str) -> NodeRecord | None:
        return next((n for n in self.nodes if n.name == name), None)

    def cut_off_from(self, node: str) -> list[str]:
        """The other nodes (and clients) this node cannot reach under the current groups."""
        pairs = blocked_pairs([n.name for n in self.nodes], self.groups, self.clients_with)
        return sorted(next(iter(pair - {node})) for pair in pairs if node in pair)

    def slowed_links(self) -> dict[str, dict[str, Any]]:
        """Slowed node -> its shape (`words`, `how`, the numbers), as `lab slow` left it."""
        slowed = self.extra.get("slowed") or {}
        if isinstance(slowed, list):  # a lab made before shapes were recorded
            return {name: {"words": "slowed", "how": "netem"} for name in slowed}
        return {str(name): dict(shape) for name, shape in slowed.items()}

    @property
    def brokers(self) -> list[NodeRecord]:
        return [n for n in self.nodes if n.role == "broker"]

    @property
    def zookeeper(self) -> NodeRecord | None:
        """zk1; None in a KRaft lab."""
        return next((n for n in self.nodes if n.role == "zookeeper"), None)

    @property
    def zookeeper_address(self) -> str | None:
        return self.zookeeper.address if self.zookeeper else None

    @property
    def voters(self) -> list[NodeRecord]:
        """The KRaft controller quorum: dedicated controllers, or every broker when combined."""
        return [n for n in self.nodes if n.controller_address is not None]

    @property
    def controller_addresses(self) -> dict[int, str]:
        """KRaft node id -> controller listener, for asking each voter directly."""
        return {n.kraft_id: n.controller_address for n in self.voters
                if n.kraft_id is not None and n.controller_address is not None}

    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.brokers)


def state_path(root: Path | None = None) -> Path:
    return (root or lab_dir()) / "state.json"


def load_state(root: Path | None = None) -> LabState | None:
    path = state_path(root)
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    nodes = [NodeRecord(**n) for n in raw.pop("nodes")]
    return LabState(nodes=nodes, **raw)


def save_state(state: LabState, root: Path | None = None) -> None:
    """Atomic replace, so a reader never sees half a file."""
    path = state_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2))
    os.replace(tmp, path)


def clear_state(root: Path | None = None) -> None:
    path = state_path(root)
    if path.exists():
        os.replace(path, path.with_name("state.last.json"))


@contextmanager
def lab_lock(root: Path | None = None, create: bool = False) -> Iterator[None]:
    """One mutating lab command at a time (the TUI and a shell may both act). Only `lab up`
    creates the lab dir: a command refused for want of a lab leaves nothing behind."""
    directory = root or lab_dir()
    if create:
        directory.mkdir(parents=True, exist_ok=True)
    elif not directory.is_dir():
        raise KinspectError("no lab is running (start one with: kinspect lab up)")
    with open(directory / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
