"""The cluster a command or the TUI looks at: where it is, how to log in, and whether it is
the lab kinspect started (only then may anything act on it).

The CLI resolves one from its options (cli/common.py); everything that runs against a cluster,
the TUI included, takes this value and never the options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kinspect.lab.state import LabState
from kinspect.profiles import Profile

if TYPE_CHECKING:
    from kinspect.clients.kafka import WatchedAdmin


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

    @property
    def controllers(self) -> dict[int, str] | None:
        """A KRaft lab's voters (node id -> controller listener): each can be asked directly."""
        if self.lab is None or not self.lab.kraft:
            return None
        return self.lab.controller_addresses


def lab_target(lab: LabState, kafka: dict[str, str] | None = None) -> ClusterTarget:
    """The lab kinspect started, as a cluster to watch and act on."""
    return ClusterTarget(lab.bootstrap, lab.zookeeper_address, dict(kafka or {}), (), lab, 1.0,
                         f"lab ({lab.preset} preset, {lab.backend})")


def is_lab_cluster(zookeeper: str, lab: LabState) -> bool:
    """True when that ZooKeeper holds this lab's id: an address alone proves nothing."""
    from kinspect.lab.readiness import read_lab_mark  # with the wire clients: only when asked

    return read_lab_mark(zookeeper) == lab.lab_id


def is_kraft_lab(bootstrap: str, lab: LabState, config: dict[str, str] | None = None,
                 admin: WatchedAdmin | None = None) -> bool:
    """True when the brokers at `bootstrap` answer with this KRaft lab's cluster id (made
    for it by `lab up`): as for ZooKeeper, an address alone proves nothing. `admin`: the
    AdminClient the command goes on with (same bootstrap and config), asked on its connection
    rather than on one of its own."""
    if not lab.kraft or not lab.extra.get("cluster_id"):
        return False
    from confluent_kafka import KafkaException

    from kinspect.clients.kafka import admin_client, answer_of

    asked = admin or admin_client(bootstrap, config=config)
    try:
        cluster = answer_of(asked, asked.client.describe_cluster(request_timeout=3), 5.0)
    except (KafkaException, TimeoutError, ValueError):
        return False
    return bool(cluster.cluster_id == lab.extra["cluster_id"])


def profile_target(profile: Profile, lab: LabState | None,
                   admin: WatchedAdmin | None = None) -> ClusterTarget:
    """A profile's cluster; the lab (fault keys on) only when it proves to be `lab`."""
    proven = lab is not None and (is_lab_cluster(profile.zookeeper, lab) if profile.zookeeper
                                  else is_kraft_lab(profile.bootstrap, lab, profile.kafka, admin))
    return ClusterTarget(profile.bootstrap, profile.zookeeper, dict(profile.kafka),
                         profile.zookeeper_auth, lab if proven else None, profile.refresh_s,
                         profile.name)


def read_only_reason(target: ClusterTarget, label: str) -> str | None:
    """Why fault keys are off on this cluster (None: it is the lab kinspect started)."""
    if target.lab is not None:
        return None
    return (f"fault keys act only on a lab kinspect started; {label} is not one (no lab id "
            "of ours in its ZooKeeper)")
