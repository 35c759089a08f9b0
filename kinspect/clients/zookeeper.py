"""ZooKeeper clients that keep quiet, a session as a context manager, and the znode parsers.

Every reader of a partition's state znode (the observer's watches, the fault plan resolving
"the leader", verify waiting for the brokers to agree) goes through `parse_partition_state`,
so they cannot disagree about what the controller wrote.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.model import PartitionStateZ

if TYPE_CHECKING:  # kazoo is imported where a client is made: a KRaft one-shot never needs it
    from kazoo.client import KazooClient


def quiet_kazoo() -> None:
    """kazoo logs every reconnect attempt at WARNING; kinspect reports state its own way."""
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)


def zk_client(zookeeper: str, timeout: float, session_s: float = 5.0) -> KazooClient:
    """A started, quiet kazoo client, or a one-line KinspectError saying why there is none."""
    from kazoo.client import KazooClient  # here: ~20 ms a KRaft one-shot command skips

    quiet_kazoo()
    try:
        zk = KazooClient(hosts=zookeeper, timeout=session_s)
        zk.start(timeout=max(1.0, timeout))
    except Exception as exc:
        raise KinspectError(f"cannot reach ZooKeeper at {zookeeper}: {exc}") from None
    return zk


def close(zk: KazooClient) -> None:
    """Stop and close; never raises (it runs in teardown paths)."""
    try:
        zk.stop()
        zk.close()
    except Exception:  # a client already closed, or its connection gone
        pass


@contextmanager
def zk_session(zookeeper: str, timeout: float, session_s: float = 5.0) -> Iterator[KazooClient]:
    """`with zk_session(address, 10) as zk:` a started client, closed however the block ends."""
    zk = zk_client(zookeeper, timeout, session_s)
    try:
        yield zk
    finally:
        close(zk)


def json_object(data: bytes | None) -> dict[str, Any] | None:
    """A znode's JSON object; None for no data, bad JSON or anything but an object."""
    if not data:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_partition_state(data: bytes | None, mtime_ms: int | None = None) -> PartitionStateZ | None:
    """/brokers/topics/T/partitions/P/state as the controller wrote it (None: no such state)."""
    info = json_object(data)
    if info is None:
        return None
    leader = int(info.get("leader", -1))
    return PartitionStateZ(
        leader=leader if leader >= 0 else None,
        leader_epoch=int(info.get("leader_epoch", -1)),
        isr=tuple(int(r) for r in info.get("isr", [])),
        controller_epoch=int(info.get("controller_epoch", -1)),
        mtime_ms=mtime_ms,
    )


def partition_state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


def read_partition_state(zk: KazooClient, topic: str, partition: int) -> PartitionStateZ | None:
    """The partition's state now; None when the topic or partition does not exist (yet)."""
    path = partition_state_path(topic, partition)
    if not zk.exists(path):
        return None
    data, stat = zk.get(path)
    return parse_partition_state(data, int(stat.mtime) if stat is not None else None)


def read_leaders(zk: KazooClient, topic: str) -> dict[int, int | None]:
    """Partition → leader (None: none) for every partition of the topic ZooKeeper knows."""
    path = f"/brokers/topics/{topic}/partitions"
    if not zk.exists(path):
        return {}
    leaders: dict[int, int | None] = {}
    for child in zk.get_children(path):
        state = read_partition_state(zk, topic, int(child))
        if state is not None:
            leaders[int(child)] = state.leader
    return leaders


def read_replicas(zk: KazooClient, topic: str) -> dict[int, tuple[int, ...]]:
    """The topic's assignment: partition → replicas, in preference order."""
    info = json_object(zk.get(f"/brokers/topics/{topic}")[0]) or {}
    return {int(p): tuple(int(r) for r in replicas)
            for p, replicas in (info.get("partitions") or {}).items()}


def read_controller(zk: KazooClient) -> int | None:
    """The controller's broker id; None while there is none."""
    if not zk.exists("/controller"):
        return None
    info = json_object(zk.get("/controller")[0])
    return int(info["brokerid"]) if info and "brokerid" in info else None
