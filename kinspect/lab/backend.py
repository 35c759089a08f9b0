"""The lab interface every backend (process, docker) implements, and the status contract.

The TUI, the scenarios and the CLI only talk to this interface, so a fault works the same
whether the broker is a JVM in a network namespace or a container.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinspect.errors import KinspectError
from kinspect.lab import presets, sasl
from kinspect.lab.state import LabState

Progress = Callable[[str], None]


@dataclass(frozen=True)
class UpOptions:
    """What `lab up` was asked for."""

    brokers: int = 3
    preset: str = "demo"
    overrides: dict[str, str] = field(default_factory=dict)
    network: str = "auto"  # auto | netns | loopback
    base_port: int = 39090
    timeout_s: float = 120.0
    sasl: str | None = None  # "plain" or "scram-sha-256": add a SASL_PLAINTEXT listener


class LabBackend(ABC):
    """Starts, breaks and tears down a lab cluster of zk1 + kafka1..N."""

    name: str

    @abstractmethod
    def up(self, options: UpOptions, progress: Progress) -> LabState: ...

    @abstractmethod
    def down(self, progress: Progress) -> bool:
        """Remove everything the lab made; False when there was nothing to remove."""

    @abstractmethod
    def state(self) -> LabState | None:
        """The running lab, reconciled with reality (dead processes noticed)."""

    @abstractmethod
    def kill(self, node: str) -> None: ...

    @abstractmethod
    def stop(self, node: str) -> None: ...

    @abstractmethod
    def start(self, node: str) -> None: ...

    def restart(self, node: str) -> None:
        self.stop(node)
        self.start(node)

    @abstractmethod
    def pause(self, node: str) -> None: ...

    @abstractmethod
    def resume(self, node: str) -> None: ...

    @abstractmethod
    def partition(self, groups: Sequence[Sequence[str]], clients_with: str | None) -> None: ...

    @abstractmethod
    def heal(self) -> None: ...

    def slow(self, node: str, delay_ms: int, jitter_ms: int) -> None:
        """Delay everything a node sends (netem); backends that cannot, say so."""
        raise KinspectError(f"the {self.name} lab cannot slow links")

    def unslow(self) -> None:  # noqa: B027 - optional: most backends have nothing to undo
        """Links back to full speed (nothing to do where nothing can be slowed)."""

    @abstractmethod
    def broker_log_dir(self, node: str) -> Path | None:
        """Where server.log, controller.log and state-change.log of a node can be read."""


def status_json(state: LabState, network_faults: bool) -> dict[str, Any]:
    """The stable `lab status --json` shape other tools and scripts rely on."""
    nodes: list[dict[str, Any]] = []
    for node in state.nodes:
        entry: dict[str, Any] = {"name": node.name, "role": node.role}
        if node.broker_id is not None:
            entry["broker_id"] = node.broker_id
        entry.update(state=node.state, address=node.address, pid=node.pid)
        if node.netns:
            entry["netns"] = node.netns
        if node.container:
            entry["container"] = node.container
        nodes.append(entry)
    return {
        "backend": state.backend,
        "lab_id": state.lab_id,
        "network": state.network,
        "network_faults": network_faults,
        "preset": state.preset,
        "kafka_version": state.kafka_version,
        "bootstrap": state.bootstrap,
        "zookeeper": state.zookeeper.address,
        "nodes": nodes,
        "groups": state.groups,
        "sasl": ({"bootstrap": sasl.bootstrap(state), **{k: v for k, v in state.extra["sasl"].items()
                                                           if k != "port_offset"}}
                 if "sasl" in state.extra else None),
        "clients_with": state.clients_with,
        "broker_config": {k: state.broker_config[k] for k in presets.SHOWN_KEYS
                          if k in state.broker_config},
        "created_at": state.created_at,
    }
