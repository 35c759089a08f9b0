"""The cluster a command or the TUI looks at: where it is, how to log in, and whether it is
the lab kinspect started (only then may anything act on it).

The CLI resolves one from its options (cli/common.py); everything that runs against a cluster,
the TUI included, takes this value and never the options.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kinspect.lab.readiness import read_lab_mark
from kinspect.lab.state import LabState


@dataclass(frozen=True)
class ClusterTarget:
    bootstrap: str
    zookeeper: str | None
    kafka: dict[str, str] = field(default_factory=dict)
    zk_auth: tuple[tuple[str, str], ...] = ()
    lab: LabState | None = None  # only when this is the lab kinspect started
    refresh_s: float = 1.0
    label: str = ""

    @property
    def expected_brokers(self) -> dict[int, str] | None:
        if self.lab is None:
            return None
        return {b.broker_id: b.address for b in self.lab.brokers if b.broker_id is not None}


def is_lab_cluster(zookeeper: str, lab: LabState) -> bool:
    """True when that ZooKeeper holds this lab's id: an address alone proves nothing."""
    return read_lab_mark(zookeeper) == lab.lab_id
