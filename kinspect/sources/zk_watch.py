"""ZooKeeper, read in bulk and then watched: what the controller decided, the moment it decides.

At start (and after every reconnect) everything Kafka keeps in ZooKeeper is read in three
pipelined waves — /controller, /controller_epoch and the two lists; each broker's registration
and each topic's assignment; every partition's state — through multiRead (clients/zk_bulk.py),
so 10,000 partitions cost about 0.1 s instead of seconds. The view is complete then. A watching
source then arms one watch per znode in the background (a fresh read with the watch set, so
nothing that changed in between is missed); when one fires the znode is read again, with the
watch set again, and the private tables (sources/zk_tables.py) change. `view()` hands out an
immutable copy, and `on_change` is signalled at once, so the observer sees a new leader within
milliseconds of ZooKeeper's notification instead of at the next poll. A one-shot reader
(`watch=False`, `kinspect snapshot`) stops after the reads.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.protocol.states import WatchedEvent
from kazoo.retry import KazooRetry

from kinspect.clients.zk_bulk import BulkReader, Znode, znode_of
from kinspect.clients.zookeeper import close, quiet_kazoo
from kinspect.errors import KinspectError
from kinspect.model import ZkView
from kinspect.model.views import SessionState
from kinspect.sources.zk_tables import Key, ZkTables, state_path

_STATES: dict[KazooState, SessionState] = {
    KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended", KazooState.LOST: "lost"}
_BROKER = re.compile(r"^/brokers/ids/(\d+)$")
_TOPIC = re.compile(r"^/brokers/topics/([^/]+)$")
_STATE = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")


class _Link:
    """One kazoo client with the watch and session callbacks bound to it: callbacks of a client
    that was replaced (restart_if_stuck) are recognised and ignored."""

    def __init__(self, zk: KazooClient, source: ZooKeeperSource) -> None:
        self.zk = zk
        self.reader = BulkReader(zk)
        self.fired: Callable[[WatchedEvent], None] = lambda event: source._fired(self, event)
        self.session: Callable[[KazooState], None] = lambda state: source._session_changed(
            self, state)


class ZooKeeperSource:
    """Keeps a live ZkView of one cluster; reconnects by itself (kazoo retries forever)."""

    def __init__(self, hosts: str, on_change: Callable[[], None],
                 auth: list[tuple[str, str]] | None = None, session_timeout_s: float = 10.0,
                 watch: bool = True) -> None:
        quiet_kazoo()
        self.hosts = hosts
        self.watch = watch
        self._on_change = on_change
        self._auth = auth or None
        self._session_timeout_s = session_timeout_s
        self._link = _Link(self._new_client(), self)
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._session: SessionState = "unknown"
        self._suspended_since: float | None = None
        self._loaded = False
        self._tables = ZkTables()
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
        that forever. A new client has no such memory; everything is read and watched anew.
        """
        with self._lock:
            since = self._suspended_since
        if since is None or time.monotonic() - since < after_s:
            return False
        with self._lock:
            self._suspended_since = time.monotonic()  # not again before after_s more
        fresh = _Link(self._new_client(), self)
        fresh.zk.add_listener(fresh.session)
        try:
            fresh.zk.start(timeout=5.0)
        except Exception:  # still unreachable: keep the old client (and its view) retrying
            with contextlib.suppress(Exception):
                fresh.zk.stop()
                fresh.zk.close()
            return False
        # Only now, with a session in hand, is the old view thrown away and built anew: the
        # swap and the cleared view are one step under the lock, so no reader sees the new
        # client beside the old client's view.
        with self._lock:
            old, self._link = self._link, fresh
            self._tables = ZkTables()
            self._session = "connected"
            self._suspended_since = None
        with contextlib.suppress(Exception):  # the old client is being thrown away either way
            old.zk.remove_listener(old.session)
        close(old.zk)
        self._resync(fresh)
        return True

    def start(self, timeout: float = 10.0) -> None:
        """Connect and read everything once; unreachable at start is a one-line error."""
        link = self._link
        link.zk.add_listener(link.session)
        try:
            link.zk.start(timeout=timeout)
        except Exception:
            link.zk.stop()
            raise KinspectError(f"cannot reach ZooKeeper at {self.hosts}") from None
        if not self._holds_kafka():
            link.zk.stop()
            chroot = self.hosts.partition("/")[2]
            raise KinspectError(f"ZooKeeper at {self.hosts} holds no Kafka cluster (no /brokers/ids"
                                + (f" under the chroot /{chroot}: does it exist?)" if chroot
                                   else "; is the cluster under a chroot, e.g. host:2181/kafka?)"))
        with self._lock:
            self._session = "connected"
            self._suspended_since = None
        try:
            self._sync(link, timeout)
        except KazooException as exc:
            link.zk.stop()
            raise KinspectError(f"cannot read ZooKeeper at {self.hosts}: "
                                f"{type(exc).__name__}") from None

    def _holds_kafka(self) -> bool:
        """A Kafka cluster registers /brokers/ids in its (chroot of) ZooKeeper on first start;
        an unknown chroot would otherwise watch nothing, quietly, forever."""
        try:
            return self._link.zk.exists("/brokers/ids") is not None
        except Exception:  # kazoo's errors (auth, connection loss) are findings for the reads
            return True

    def stop(self) -> None:
        try:
            self._link.zk.stop()
            self._link.zk.close()
        except Exception:  # stopping must never raise: it runs in teardown paths
            pass

    def view(self) -> ZkView:
        with self._lock:
            return self._tables.view(self._session)

    # ----- bulk reads --------------------------------------------------------------------

    def _sync(self, link: _Link, timeout: float) -> None:
        """Read everything into fresh tables, swap them in, then (watching) arm the watches."""
        with self._sync_lock:
            tables = _load(link.zk, link.reader, timeout)
            with self._lock:
                if link is not self._link:
                    return
                self._tables = tables
                self._loaded = True
            self._changed()
        if self.watch:
            threading.Thread(target=self._arm, args=(link,), name="kinspect-zk-arm",
                             daemon=True).start()

    def _resync(self, link: _Link) -> None:
        """After a reconnect: watches and reads in flight may be lost, so start over (in the
        background: this runs from kazoo's session listener or the observer's loop)."""
        def run() -> None:
            with contextlib.suppress(KazooException, OSError):
                self._sync(link, self._session_timeout_s)

        threading.Thread(target=run, name="kinspect-zk-sync", daemon=True).start()

    def _arm(self, link: _Link) -> None:
        """Read every znode again with its watch set; the answers go through the same path as
        a fired watch, so a change between the bulk read and the watch is applied, not lost."""
        with self._lock:
            tables = self._tables
            brokers = sorted(tables.watched_brokers)
            topics = sorted(tables.watched_topics)
            keys = sorted(tables.watched_partitions)
        for path in ("/controller", "/controller_epoch", "/brokers/ids", "/brokers/topics"):
            self._dispatch(link, path)
        for broker in brokers:
            self._dispatch(link, f"/brokers/ids/{broker}")
        for topic in topics:
            self._dispatch(link, f"/brokers/topics/{topic}")
        for key in keys:
            self._dispatch(link, state_path(key))

    # ----- watches (kazoo threads) -------------------------------------------------------

    def _changed(self) -> None:
        self.last_change_ns = time.time_ns()
        self._on_change()

    def _session_changed(self, link: _Link, state: KazooState) -> None:
        with self._lock:
            if link is not self._link:
                return
            was = self._session
            self._session = _STATES.get(state, "unknown")
            if state == KazooState.CONNECTED:
                self._suspended_since = None
            elif self._suspended_since is None:
                self._suspended_since = time.monotonic()
            again = state == KazooState.CONNECTED and was != "connected" and self._loaded
        if again:
            self._resync(link)
        self._changed()

    def _fired(self, link: _Link, event: WatchedEvent) -> None:
        if event.path and link is self._link:
            self._dispatch(link, event.path)

    def _dispatch(self, link: _Link, path: str) -> None:
        """Read `path` again with its watch set and apply the answer to the tables."""
        if path in ("/brokers/ids", "/brokers/topics"):
            self._read_children(link, path)
            return
        if path in ("/controller", "/controller_epoch"):
            apply: Callable[[ZkTables, Znode | None], bool] = (
                ZkTables.controller_read if path == "/controller" else ZkTables.epoch_read)
            self._read(link, path, lambda t, node: (apply(t, node), True))
            return
        if match := _BROKER.match(path):
            broker = int(match[1])
            self._read(link, path, lambda t, node: t.broker_read(broker, node))
        elif match := _TOPIC.match(path):
            topic = match[1]
            self._read(link, path, lambda t, node: self._assignment(link, t, topic, node))
        elif match := _STATE.match(path):
            key = (match[1], int(match[2]))
            self._read(link, path, lambda t, node: t.state_read(key, node))

    def _assignment(self, link: _Link, tables: ZkTables, topic: str,
                    node: Znode | None) -> tuple[bool, bool]:
        changed, keep, new = tables.assignment_read(topic, node)
        for key in new:
            self._dispatch(link, state_path(key))
        return changed, keep

    def _read(self, link: _Link, path: str,
              apply: Callable[[ZkTables, Znode | None], tuple[bool, bool]]) -> None:
        def answered(result: Any) -> None:
            try:
                node = znode_of(*result.get(block=False))
            except NoNodeError:
                node = None
            except Exception:  # connection loss, client closed: a resync follows a reconnect
                return
            with self._lock:
                if link is not self._link:
                    return
                changed, keep = apply(self._tables, node)
            if node is None and keep:  # wait for it to be created (again)
                self._await(link, path, apply)
            if changed:
                self._changed()

        self._call(lambda: link.zk.get_async(path, watch=link.fired), answered)

    def _await(self, link: _Link, path: str,
               apply: Callable[[ZkTables, Znode | None], tuple[bool, bool]]) -> None:
        def answered(result: Any) -> None:
            with contextlib.suppress(Exception):
                if result.get(block=False) is not None:  # created in between: read it
                    self._read(link, path, apply)

        self._call(lambda: link.zk.exists_async(path, watch=link.fired), answered)

    def _read_children(self, link: _Link, path: str) -> None:
        def answered(result: Any) -> None:
            try:
                children = list(result.get(block=False))
            except NoNodeError:
                self._call(lambda: link.zk.exists_async(path, watch=link.fired), lambda r: None)
                return
            except Exception:  # connection loss, client closed: a resync follows a reconnect
                return
            with self._lock:
                if link is not self._link:
                    return
                if path == "/brokers/ids":
                    changed, ids = self._tables.broker_ids_read(children)
                    new = [f"/brokers/ids/{b}" for b in ids]
                else:
                    changed, topics = self._tables.topics_read(children)
                    new = [f"/brokers/topics/{t}" for t in topics]
            for child in new:
                self._dispatch(link, child)
            if changed:
                self._changed()

        self._call(lambda: link.zk.get_children_async(path, watch=link.fired), answered)

    @staticmethod
    def _call(issue: Callable[[], Any], answered: Callable[[Any], None]) -> None:
        with contextlib.suppress(Exception):  # a closed client refuses: nothing to follow
            issue().rawlink(answered)


def _load(zk: KazooClient, reader: BulkReader, timeout: float) -> ZkTables:
    """Everything, in three pipelined waves; raises kazoo's errors (the caller retries)."""
    tables = ZkTables()
    controller, epoch = zk.get_async("/controller"), zk.get_async("/controller_epoch")
    ids, topics = zk.get_children_async("/brokers/ids"), zk.get_children_async("/brokers/topics")
    tables.controller_read(_znode(controller, timeout))
    tables.epoch_read(_znode(epoch, timeout))
    _, new_ids = tables.broker_ids_read(_children(ids, timeout))
    _, new_topics = tables.topics_read(_children(topics, timeout))
    registrations = {f"/brokers/ids/{b}": b for b in new_ids}
    assignments = {f"/brokers/topics/{t}": t for t in new_topics}
    nodes = reader.read([*registrations, *assignments], timeout)
    for path, broker in registrations.items():
        tables.broker_read(broker, nodes[path])
    keys: list[Key] = []
    for path, topic in assignments.items():
        keys += tables.assignment_read(topic, nodes[path])[2]
    paths = [state_path(key) for key in keys]
    states = reader.read(paths, timeout)
    for key, path in zip(keys, paths, strict=True):
        tables.state_read(key, states[path])
    return tables


def _znode(result: Any, timeout: float) -> Znode | None:
    try:
        return znode_of(*result.get(timeout=timeout))
    except NoNodeError:
        return None


def _children(result: Any, timeout: float) -> list[str]:
    try:
        return list(result.get(timeout=timeout))
    except NoNodeError:
        return []
