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
from functools import partial
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

from kinspect.clients.zookeeper import (
    close,
    json_object,
    parse_partition_state,
    partition_state_path,
    quiet_kazoo,
)
from kinspect.errors import KinspectError
from kinspect.model import PartitionStateZ, ZkView

Later = list[tuple[str, Callable[[Any, Any], bool]]]  # watches to set once the lock is free
Change = Callable[[Any, Any, Later], "bool | None"]
_STATES = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended",
           KazooState.LOST: "lost"}


class ZooKeeperSource:
    """Keeps a live ZkView of one cluster; reconnects by itself (kazoo retries forever).

    Each kazoo client is a generation: its watch callbacks carry the generation they were set
    for and, under the lock, do nothing (and end their watch) once a newer client replaced it,
    so a thrown-away client's late notifications can neither write into the new view nor set
    watches on the new client.
    """

    def __init__(self, hosts: str, on_change: Callable[[], None],
                 auth: list[tuple[str, str]] | None = None, session_timeout_s: float = 10.0,
                 ) -> None:
        quiet_kazoo()
        self.hosts = hosts
        self._on_change = on_change
        self._auth = auth or None
        self._session_timeout_s = session_timeout_s
        self._lock = threading.Lock()
        self._zk = self._new_client()
        self._generation = 0
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
            self._suspended_since = time.monotonic()  # not again before after_s more
        fresh = self._new_client()
        fresh.add_listener(self._session_changed)
        try:
            fresh.start(timeout=5.0)
        except Exception:  # still unreachable: keep the old client (and its view) retrying
            close(fresh)
            return False
        # Only now, with a session in hand, is the old view thrown away and built anew: the
        # swap, the new generation and the cleared view are one step under the lock.
        with self._lock:
            old, self._zk = self._zk, fresh
            self._generation += 1
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
            zk, generation = self._zk, self._generation
        DataWatch(zk, "/controller", self._on(generation, self._controller_changed))
        DataWatch(zk, "/controller_epoch", self._on(generation, self._epoch_changed))
        ChildrenWatch(zk, "/brokers/ids", self._on(generation, self._broker_ids_changed))
        ChildrenWatch(zk, "/brokers/topics", self._on(generation, self._topics_changed))

    def stop(self) -> None:
        with self._lock:
            zk = self._zk
        close(zk)

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
    # a closure of exactly (data, stat). A change runs with the lock held and only while its
    # generation is current; the watches it asks for are set after the lock is released
    # (DataWatch reads its znode at once, calling back into this class). False ends a watch.
    def _on(self, generation: int, change: Change) -> Callable[[Any, Any], bool]:
        def callback(data: Any, stat: Any = None) -> bool:
            later: list[tuple[str, Callable[[Any, Any], bool]]] = []
            with self._lock:
                if generation != self._generation:
                    return False
                zk = self._zk
                keep = change(data, stat, later)
            for path, then in later:
                with contextlib.suppress(Exception):  # a client closed meanwhile: a new
                    DataWatch(zk, path, then)         # generation sets its own watches
            self._changed()
            return keep is not False
        return callback

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

    def _controller_changed(self, data: bytes | None, _stat: Any, _later: Later) -> None:
        info = json_object(data)
        self._controller = int(info["brokerid"]) if info and "brokerid" in info else None

    def _epoch_changed(self, data: bytes | None, _stat: Any, _later: Later) -> None:
        self._controller_epoch = int(data) if data and data.strip().isdigit() else None

    def _broker_ids_changed(self, children: list[str] | None, _stat: Any, later: Later) -> None:
        ids = {int(c) for c in children or [] if c.isdigit()}
        for gone in set(self._brokers) - ids:
            del self._brokers[gone]
        new = ids - self._watched_brokers
        self._watched_brokers |= new
        for broker in sorted(new):
            later.append((f"/brokers/ids/{broker}",
                          self._on(self._generation, partial(self._broker_changed, broker))))

    def _broker_changed(self, broker: int, data: bytes | None, _stat: Any, _later: Later) -> bool:
        info = json_object(data)
        if info is None:
            self._brokers.pop(broker, None)
            self._watched_brokers.discard(broker)
            return False  # ends the DataWatch: the id gets a new one if it returns
        endpoints = info.get("endpoints") or []
        self._brokers[broker] = (str(endpoints[0]).split("://", 1)[-1] if endpoints
                                 else f"{info.get('host')}:{info.get('port')}")
        return True

    def _topics_changed(self, children: list[str] | None, _stat: Any, later: Later) -> None:
        children = children or []
        for gone in set(self._assignments) - set(children):
            del self._assignments[gone]
            for key in [k for k in self._states if k[0] == gone]:
                del self._states[key]
        new = set(children) - self._watched_topics
        self._watched_topics |= new
        for topic in sorted(new):
            later.append((f"/brokers/topics/{topic}",
                          self._on(self._generation, partial(self._assignment_changed, topic))))

    def _assignment_changed(self, topic: str, data: bytes | None, _stat: Any, later: Later) -> bool:
        info = json_object(data)
        if info is None:
            self._watched_topics.discard(topic)
            self._assignments.pop(topic, None)
            return False
        partitions = {int(p): tuple(int(r) for r in replicas)
                      for p, replicas in (info.get("partitions") or {}).items()}
        self._assignments[topic] = partitions
        new = {(topic, p) for p in partitions} - self._watched_partitions
        self._watched_partitions |= new
        for key in sorted(new):
            later.append((partition_state_path(*key),
                          self._on(self._generation, partial(self._state_changed, key))))
        return True

    def _state_changed(self, key: tuple[str, int], data: bytes | None, stat: Any,
                       _later: Later) -> bool:
        state = parse_partition_state(data, int(stat.mtime) if stat is not None else None)
        if state is None:
            self._states.pop(key, None)
            if key[0] not in self._assignments:
                self._watched_partitions.discard(key)
                return False
        else:
            self._states[key] = state
        return True
