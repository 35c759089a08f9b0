"""ZooKeeper, through kazoo watches: what the controller decided, the moment it decides it.

Watches on /controller, /controller_epoch, /brokers/ids (and each id), /brokers/topics (and each
topic's assignment and partition state) update a private table from kazoo's threads; `view()`
hands out an immutable copy. A change is signalled at once through `on_change`, so the observer
sees a new leader within milliseconds of ZooKeeper's notification instead of at the next poll.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

from kinspect.clients.zookeeper import close, json_object, parse_partition_state, quiet_kazoo
from kinspect.errors import KinspectError
from kinspect.model import PartitionStateZ, ZkView

_STATES = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended",
           KazooState.LOST: "lost"}



class ZooKeeperSource:
    """Keeps a live ZkView of one cluster; reconnects by itself (kazoo retries forever)."""

    def __init__(self, hosts: str, on_change: Callable[[], None],
                 auth: list[tuple[str, str]] | None = None, session_timeout_s: float = 10.0,
                 ) -> None:
        quiet_kazoo()
        self.hosts = hosts
        self._on_change = on_change
        self._auth = auth or None
        self._session_timeout_s = session_timeout_s
        self._zk = self._new_client()
        self._lock = threading.Lock()
        self._session = "unknown"
        self._suspended_since: float | None = None
        self._controller: int | None = None
        self._controller_epoch: int | None = None
        self._brokers: dict[int, str] = {}
        self._assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self._states: dict[tuple[str, int], PartitionStateZ] = {}
        self._watched_brokers: set[int] = set()
        self._watched_topics: set[str] = set()
        self._watched_partitions: set[tuple[str, int]] = set()
        self.last_change_ns = 0

    # ----- lifecycle -------------------------------------------------------------------

    def _new_client(self) -> KazooClient:
        try:
            return KazooClient(hosts=self.hosts, timeout=self._session_timeout_s,
                               connection_retry=KazooRetry(max_tries=-1, max_delay=2.0),
                               command_retry=KazooRetry(max_tries=3, max_delay=1.0),
                               auth_data=self._auth)
        except ValueError as exc:  # kazoo parses the address here: "host:abc"
            raise KinspectError(f"bad ZooKeeper address {self.hosts!r}: {exc}") from None

    def restart_if_stuck(self, after_s: float = 20.0) -> bool:
        """Start over with a new client when the session has been suspended for `after_s`.

        A ZooKeeper whose data was wiped (`lab reset`, a scenario) refuses the old session
        because the client has seen a newer zxid than the server has, and kazoo would retry
        that forever. A new client has no such memory; the watches are set again from scratch.
        """
        with self._lock:
            since = self._suspended_since
        if since is None or time.monotonic() - since < after_s:
            return False
        with self._lock:
            self._suspended_since = time.monotonic()  # not again before after_s more
        fresh = self._new_client()
        fresh.add_listener(self._session_changed)
        try:
            fresh.start(timeout=5.0)
        except Exception:  # still unreachable: keep the old client (and its view) retrying
            with contextlib.suppress(Exception):
                fresh.stop()
                fresh.close()
            return False
        # Only now, with a session in hand, is the old view thrown away and built anew: the
        # swap and the cleared view are one step under the lock, so no reader sees the new
        # client beside the old client's view.
        with self._lock:
            old, self._zk = self._zk, fresh
            self._controller = self._controller_epoch = None
            self._brokers.clear()
            self._assignments.clear()
            self._states.clear()
            self._watched_brokers.clear()
            self._watched_topics.clear()
            self._watched_partitions.clear()
        with contextlib.suppress(Exception):  # the old client is being thrown away either way
            old.remove_listener(self._session_changed)
        close(old)
        self._watch()
        return True

    def start(self, timeout: float = 10.0) -> None:
        """Connect and load everything once; unreachable at start is a one-line error."""
        self._zk.add_listener(self._session_changed)
        try:
            self._zk.start(timeout=timeout)
        except Exception:
            self._zk.stop()
            raise KinspectError(f"cannot reach ZooKeeper at {self.hosts}") from None
        if not self._holds_kafka():
            self._zk.stop()
            chroot = self.hosts.partition("/")[2]
            raise KinspectError(f"ZooKeeper at {self.hosts} holds no Kafka cluster (no /brokers/ids"
                                + (f" under the chroot /{chroot}: does it exist?)" if chroot
                                   else "; is the cluster under a chroot, e.g. host:2181/kafka?)"))
        self._watch()

    def _holds_kafka(self) -> bool:
        """A Kafka cluster registers /brokers/ids in its (chroot of) ZooKeeper on first start;
        an unknown chroot would otherwise watch nothing, quietly, forever."""
        try:
            return self._zk.exists("/brokers/ids") is not None
        except Exception:  # kazoo's errors (auth, connection loss) are findings for the watch
            return True

    def _watch(self) -> None:
        """Connected: read everything once and watch it from now on."""
        with self._lock:
            self._session = "connected"
            self._suspended_since = None
        DataWatch(self._zk, "/controller", self._controller_changed)
        DataWatch(self._zk, "/controller_epoch", self._epoch_changed)
        ChildrenWatch(self._zk, "/brokers/ids", self._broker_ids_changed)
        ChildrenWatch(self._zk, "/brokers/topics", self._topics_changed)

    def stop(self) -> None:
        try:
            self._zk.stop()
            self._zk.close()
        except Exception:  # stopping must never raise: it runs in teardown paths
            pass

    def view(self) -> ZkView:
        with self._lock:
            return ZkView(
                session_state=self._session,
                controller_id=self._controller,
                controller_epoch=self._controller_epoch,
                brokers=dict(self._brokers),
                topics={t: dict(p) for t, p in self._assignments.items()},
                partitions=dict(self._states),
            )

    # ----- watch callbacks (kazoo threads) ---------------------------------------------

    # kazoo passes the event as a third argument to callbacks taking three, so each watch gets
    # a closure of exactly (data, stat).
    def _on_broker(self, broker: int) -> Callable[[bytes | None, Any], bool]:
        return lambda data, _stat: self._broker_changed(broker, data)

    def _on_assignment(self, topic: str) -> Callable[[bytes | None, Any], bool]:
        return lambda data, _stat: self._assignment_changed(topic, data)

    def _on_state(self, key: tuple[str, int]) -> Callable[[bytes | None, Any], bool]:
        return lambda data, stat: self._state_changed(key, data, stat)

    def _changed(self) -> None:
        self.last_change_ns = time.time_ns()
        self._on_change()

    def _session_changed(self, state: KazooState) -> None:
        with self._lock:
            self._session = _STATES.get(state, "unknown")
            if state == KazooState.CONNECTED:
                self._suspended_since = None
            elif self._suspended_since is None:
                self._suspended_since = time.monotonic()
        self._changed()

    def _controller_changed(self, data: bytes | None, _stat: Any) -> None:
        info = json_object(data)
        with self._lock:
            self._controller = int(info["brokerid"]) if info and "brokerid" in info else None
        self._changed()

    def _epoch_changed(self, data: bytes | None, _stat: Any) -> None:
        with self._lock:
            self._controller_epoch = int(data) if data and data.strip().isdigit() else None
        self._changed()

    def _broker_ids_changed(self, children: list[str]) -> None:
        ids = {int(c) for c in children if c.isdigit()}
        with self._lock:
            for gone in set(self._brokers) - ids:
                del self._brokers[gone]
            new = ids - self._watched_brokers
            self._watched_brokers |= new
        for broker in sorted(new):
            DataWatch(self._zk, f"/brokers/ids/{broker}", self._on_broker(broker))
        self._changed()

    def _broker_changed(self, broker: int, data: bytes | None) -> bool:
        info = json_object(data)
        with self._lock:
            if info is None:
                self._brokers.pop(broker, None)
                self._watched_brokers.discard(broker)
                keep = False
            else:
                endpoints = info.get("endpoints") or []
                address = str(endpoints[0]).split("://", 1)[-1] if endpoints else (
                    f"{info.get('host')}:{info.get('port')}")
                self._brokers[broker] = address
                keep = True
        self._changed()
        return keep  # returning False ends a DataWatch: the id will get a new one if it returns

    def _topics_changed(self, children: list[str]) -> None:
        with self._lock:
            for gone in set(self._assignments) - set(children):
                del self._assignments[gone]
                for key in [k for k in self._states if k[0] == gone]:
                    del self._states[key]
            new = set(children) - self._watched_topics
            self._watched_topics |= new
        for topic in sorted(new):
            DataWatch(self._zk, f"/brokers/topics/{topic}", self._on_assignment(topic))
        self._changed()

    def _assignment_changed(self, topic: str, data: bytes | None) -> bool:
        info = json_object(data)
        if info is None:
            with self._lock:
                self._watched_topics.discard(topic)
                self._assignments.pop(topic, None)
            self._changed()
            return False
        partitions = {int(p): tuple(int(r) for r in replicas)
                      for p, replicas in (info.get("partitions") or {}).items()}
        with self._lock:
            self._assignments[topic] = partitions
            new = {(topic, p) for p in partitions} - self._watched_partitions
            self._watched_partitions |= new
        for key in sorted(new):
            path = f"/brokers/topics/{key[0]}/partitions/{key[1]}/state"
            DataWatch(self._zk, path, self._on_state(key))
        self._changed()
        return True

    def _state_changed(self, key: tuple[str, int], data: bytes | None, stat: Any) -> bool:
        state = parse_partition_state(data, int(stat.mtime) if stat is not None else None)
        with self._lock:
            if state is None:
                self._states.pop(key, None)
                if key[0] not in self._assignments:
                    self._watched_partitions.discard(key)
                    return False
            else:
                self._states[key] = state
        self._changed()
        return True
