"""One broker's share of the cluster: every replica it hosts, as on-call asks "what is on
broker 2, and how is it doing?" (pure). The counts the brokers panel shows, opened up."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kinspect.model.snapshot import ClusterSnapshot, PartitionInfo


class Role(StrEnum):
    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass(frozen=True)
class HostedReplica:
    """A replica on one broker: whether it leads, is in sync, sits on an offline log dir, how
    far its own log trails the leader's (each asked of its broker), and its size on disk."""

    topic: str
    partition: int
    role: Role
    in_isr: bool
    offline: bool  # on a failed log dir (the metadata's offline replicas)
    log_end: int | None  # its own log end (None: its broker was not asked or did not answer)
    leader_end: int | None  # the leader's own log end (None: not told)
    size: int | None  # bytes on disk (None: DescribeLogDirs not told)
    log_dir: str | None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def behind(self) -> int | None:
        """Records the leader's log has and this one lacks (< 0: ahead of it, a cut-off
        leader's log); None when either end is unknown."""
        if self.log_end is None or self.leader_end is None:
            return None
        return self.leader_end - self.log_end

    @property
    def healthy(self) -> bool:
        return self.in_isr and not self.offline


def _hosted(p: PartitionInfo, broker: int) -> HostedReplica:
    own, lead = p.replica_log(broker), p.replica_log(p.leader) if p.leader is not None else None
    disk = p.disk(broker)
    return HostedReplica(p.topic, p.partition, Role.LEADER if p.leader == broker else
                         Role.FOLLOWER, broker in p.isr, broker in p.offline_replicas,
                         own.log_end if own else None, lead.log_end if lead else None,
                         disk.size if disk else None, disk.log_dir if disk else None)


def hosted_by(snapshot: ClusterSnapshot, broker: int) -> tuple[HostedReplica, ...]:
    """Every replica `broker` is assigned, in topic and partition order."""
    return tuple(_hosted(p, broker) for p in snapshot.partitions() if broker in p.replicas)


# How the broker view sorts: its keys in the order `s` cycles through them, worst first
# (furthest from the leader either way: behind it, or ahead of it, which a rejoin truncates).
SORTS: dict[str, Callable[[HostedReplica], tuple[object, ...]]] = {
    "partition": lambda r: (r.topic, r.partition),
    "health": lambda r: (not r.offline, r.in_isr, -abs(r.behind or 0), r.topic, r.partition),
    "behind": lambda r: (-(r.behind if r.behind is not None else -1), r.topic, r.partition),
    "size": lambda r: (-(r.size if r.size is not None else -1), r.topic, r.partition),
    "role": lambda r: (r.role != Role.LEADER, r.topic, r.partition),
}


def view(replicas: Sequence[HostedReplica], sort: str = "partition", text: str = "",
         unhealthy_only: bool = False) -> list[HostedReplica]:
    """The replicas as the broker view lists them: filtered by name, unhealthy only, sorted."""
    chosen = [r for r in replicas if (not text or text in r.name)
              and (not unhealthy_only or not r.healthy
                   or (r.behind is not None and r.behind > 0))]
    return sorted(chosen, key=SORTS[sort])


@dataclass(frozen=True)
class BrokerLoad:
    """The summary line over a broker's replicas."""

    hosted: int
    leads: int
    out_of_isr: int
    offline: int
    behind: int
    size: int | None  # None: no size told


def summary(replicas: Sequence[HostedReplica]) -> BrokerLoad:
    sizes = [r.size for r in replicas if r.size is not None]
    return BrokerLoad(len(replicas), sum(r.role is Role.LEADER for r in replicas),
                      sum(not r.in_isr for r in replicas), sum(r.offline for r in replicas),
                      sum(r.behind is not None and r.behind > 0 for r in replicas),
                      sum(sizes) if sizes else None)
