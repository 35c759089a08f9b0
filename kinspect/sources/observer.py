"""The observer: ZooKeeper watches + AdminClient polls → snapshots and events.

A ZooKeeper address means a ZooKeeper-mode cluster; without one the AdminSource's poll asks the
KRaft quorum too (and each controller directly when their addresses are given), and the
brokers' ApiVersions tell which mode the cluster runs.

Sources only signal "something changed"; one builder thread then takes their latest immutable
views, builds a snapshot, diffs it against the previous one and hands both to subscribers (the
TUI, `kinspect watch`) and to a timeline file. Bursts of ZooKeeper notifications coalesce into
one snapshot, so a 2,000-partition election costs one rebuild, not 2,000.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

from kinspect.clients.groups_watch import GroupsWatch
from kinspect.clients.kafka import ADMIN_TIMEOUT_S, AUTH_FAILED, TLS_STATE
from kinspect.errors import KinspectError, error_line
from kinspect.model import (
    ClusterSnapshot,
    ControllerMoves,
    Event,
    HwStallTracker,
    build_snapshot,
    diff,
    keep_unchanged,
)
from kinspect.sources.admin import AdminSource
from kinspect.sources.claims import merge_claims

if TYPE_CHECKING:
    from kinspect.clients.kafka import WatchedAdmin
    from kinspect.model import BrokerView, GroupView, ZkView
    from kinspect.sources.claims import Claims
    from kinspect.sources.zk_watch import ZooKeeperSource

Subscriber = Callable[[ClusterSnapshot, list[Event]], None]


@dataclass(frozen=True)
class BuildInputs:
    """The sources' views a snapshot was built from. The AdminSource's views are immutable
    and replaced whole by each poll, so the same objects mean nothing was told since;
    ZooKeeper's is made anew at each read from its tables, so it is compared by value (a few
    ms at 10,000 partitions, against ~0.1 s for a build)."""

    zk: ZkView | None
    admin: BrokerView | None
    claims: Claims | None
    groups: tuple[dict[str, GroupView], dict[str, str]] | None  # copies: compared by value
    expected: tuple[int, ...]


def _same_inputs(now: BuildInputs, then: BuildInputs) -> bool:
    return ((now.zk is then.zk or now.zk == then.zk) and now.admin is then.admin
            and _same_claims(now.claims, then.claims)
            and now.groups == then.groups and now.expected == then.expected)


def _same_claims(now: Claims | None, then: Claims | None) -> bool:
    """The same brokers' answers: each is one decoded dict per distinct answer, kept while a
    broker answers the same bytes (clients/wire.py), so identity says it."""
    if now is None or then is None:
        return now is then
    return now.keys() == then.keys() and all(now[b] is then[b] for b in now)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _zookeeper_source() -> type[ZooKeeperSource]:
    """kazoo, imported only when a ZooKeeper is named (KRaft and bootstrap-only runs skip it)."""
    from kinspect.sources.zk_watch import ZooKeeperSource

    return ZooKeeperSource


class Observer:
    """A live model of one cluster. Start it, subscribe, read `latest`; stop it when done."""

    def __init__(self, bootstrap: str | None, zookeeper: str | None,
                 expected_brokers: Mapping[int, str] | None = None, interval_s: float = 1.0,
                 admin_config: Mapping[str, str] | None = None, run_dir: Path | None = None,
                 zk_auth: list[tuple[str, str]] | None = None, timeout_s: float = ADMIN_TIMEOUT_S,
                 one_shot: bool = False, controllers: Mapping[int, str] | None = None,
                 groups: GroupsWatch | None = None,
                 admin_client: WatchedAdmin | None = None) -> None:
        """`controllers`: in KRaft, node id -> "host:port" of each controller's CONTROLLER
        listener when the caller knows them (the lab): each is asked directly who leads.
        `groups`: the consumer groups' probe, started already (groups_watch.started);
        `admin_client`: the AdminClient made already, with timeout_s and admin_config
        (clients/kafka.admin_client)."""
        self.expected = dict(expected_brokers or {})
        self.one_shot = one_shot  # `kinspect snapshot`: read once, no watches, build once
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self.latest: ClusterSnapshot | None = None
        self._stalls = HwStallTracker()
        self._controller = ControllerMoves()  # a move seen in steps is one event
        self.zk = (_zookeeper_source()(zookeeper, self._wake.set, auth=zk_auth, watch=not one_shot)
                   if zookeeper else None)
        self.admin = (AdminSource(bootstrap, self._wake.set, interval_s=interval_s,
                                  timeout_s=timeout_s, config=admin_config, groups=groups,
                                  client=admin_client)
                      if bootstrap else None)
        if self.admin:
            self.admin.known_brokers = dict(self.expected)
            self.admin.decided = self._decided
            self.admin.controllers = dict(controllers or {})
            if self.zk is not None:
                self.admin.mode = "zookeeper"
                self.admin.zookeeper_watched = True  # reassignments come from its znodes
        self._timeline: IO[str] | None = None
        if run_dir is not None:
            run_dir.mkdir(parents=True, exist_ok=True)
            self._timeline = open(run_dir / "timeline.jsonl", "a")  # noqa: SIM115
        self._thread: threading.Thread | None = None
        self.build_ms = 0.0
        self._built_from: BuildInputs | None = None
        self.last_error: str | None = None
        self.subscriber_error: str | None = None  # the last subscriber that raised, and why
        self._build_lock = threading.Lock()

    def _decided(self) -> dict[tuple[str, int], tuple[int | None, int]] | None:
        """Leader and epoch of each partition as the controller decided (ZooKeeper). None
        without ZooKeeper: in KRaft the AdminSource takes each partition's newest claim of the
        poll under way (claims.newest_claims), fresher than any view kept here."""
        if self.zk is None:
            return None
        return {key: (state.leader, state.leader_epoch)
                for key, state in self.zk.view().partitions.items()}

    def subscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._subscribers.append(subscriber)

    def start(self, zk_timeout_s: float = 10.0) -> None:
        """Connect; an unreachable ZooKeeper at start raises KinspectError (exit 2).

        The AdminClient's first poll and the groups' process start first: they take longest,
        and run while ZooKeeper is read. One-shot, no builder thread: wait_ready builds once.
        """
        if self.admin:
            self.admin.start(once=self.one_shot)
        if self.zk:
            try:
                self.zk.start(timeout=zk_timeout_s)
            except KinspectError:
                if self.admin:
                    self.admin.stop()
                raise
        if self.one_shot:
            return
        self._thread = threading.Thread(target=self._run, name="kinspect-observer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self.admin:
            self.admin.stop()
        if self.zk:
            self.zk.stop()
        if self._thread:
            self._thread.join(timeout=5)
        if self._timeline:
            self._timeline.close()
            self._timeline = None

    def build(self, anew: bool = False) -> tuple[ClusterSnapshot, list[Event]]:
        """One snapshot from the sources' current views, diffed against the last one. With
        nothing new since the last build, that snapshot taken now; `anew` builds the model
        again all the same (bench/observer.py times a rebuild)."""
        with self._build_lock:
            return self._build(anew)

    def _build(self, anew: bool = False) -> tuple[ClusterSnapshot, list[Event]]:
        inputs = self._inputs()
        started = time.perf_counter()
        if not anew and self.latest is not None and self._built_from is not None \
                and _same_inputs(inputs, self._built_from):
            # Woken with nothing new (the once-a-second rebuild, a source telling the same):
            # the same snapshot, taken now. A 10,000-partition build is ~0.1 s of CPU.
            snapshot = replace(self.latest, taken_at=now_ms())
        else:
            snapshot = keep_unchanged(self.latest, self._snapshot_of(inputs))
        self._built_from = inputs
        events = diff(self.latest, snapshot, self._controller)
        events += self._stalls.observe(snapshot)
        self.build_ms = (time.perf_counter() - started) * 1000
        self.latest = snapshot
        return snapshot, events

    def _inputs(self) -> BuildInputs:
        """What a snapshot is built from, as the sources hold it now."""
        groups = self.admin.groups if self.admin else None
        return BuildInputs(
            zk=self.zk.view() if self.zk else None,
            admin=self.admin.view() if self.admin else None,
            claims=self.admin.claims() if self.admin else None,
            groups=(groups.view(), groups.refused()) if groups is not None else None,
            expected=tuple(sorted(self.expected)))

    def _snapshot_of(self, inputs: BuildInputs) -> ClusterSnapshot:
        broker_view = None
        if inputs.admin is not None and inputs.claims is not None:
            broker_view = merge_claims(inputs.admin, inputs.claims, inputs.zk)
            if inputs.groups is not None:  # the groups' own process answers on its own
                broker_view = replace(broker_view, groups=inputs.groups[0],
                                      groups_refused=inputs.groups[1])
        return build_snapshot(inputs.zk, broker_view, list(inputs.expected) or None,
                              taken_at=now_ms())

    def _run(self) -> None:
        last_flush = 0.0
        while not self._stop.is_set():
            woke = self._wake.wait(timeout=1.0)
            if self._stop.is_set():
                break
            self._wake.clear()
            if self.zk and self.zk.restart_if_stuck():
                woke = True
            if not woke and self.latest is None:
                continue
            try:
                snapshot, events = self.build()
            except Exception as exc:  # a bad view must not end the observer: it is said instead
                self.last_error = error_line(exc)
                continue
            self.last_error = None
            self._record(events)
            self._hand_out(snapshot, events)
            if self._timeline and time.monotonic() - last_flush >= 1.0:
                os.fsync(self._timeline.fileno())
                last_flush = time.monotonic()

    def _hand_out(self, snapshot: ClusterSnapshot, events: list[Event]) -> None:
        """To every subscriber; one that raises is said (problems()), never ends the builder:
        the others and the next snapshots still arrive."""
        with self._lock:
            subscribers = list(self._subscribers)
        failed = None
        for subscriber in subscribers:
            try:
                subscriber(snapshot, events)
            except Exception as exc:
                failed = f"{getattr(subscriber, '__qualname__', subscriber)}: {error_line(exc)}"
        self.subscriber_error = failed

    def _record(self, events: Sequence[Event]) -> None:
        if self._timeline and events:
            for event in events:
                self._timeline.write(json.dumps(event.to_json()) + "\n")
            self._timeline.flush()

    def problems(self) -> list[str]:
        """What is failing now, one line each: the snapshot builder (the picture is frozen
        until it recovers) and the AdminClient's last poll."""
        out = []
        if self.last_error:
            out.append(f"no new snapshot: building one failed ({self.last_error})")
        if self.subscriber_error:
            out.append(f"a snapshot was not shown or kept: {self.subscriber_error}")
        view = self.admin.view() if self.admin else None
        if view is not None and view.state not in ("ok", "unknown"):
            out.append(f"AdminClient: {view.error or view.state}")
        return out

    def auth_failure(self) -> str | None:
        """The one line of a refused login when the AdminClient's last poll was refused."""
        view = self.admin.view() if self.admin else None
        refused = view is not None and view.state in (AUTH_FAILED, TLS_STATE)
        return view.error if refused and view is not None else None

    def check_auth(self) -> None:
        """Raise KinspectError (exit 2) when the brokers refused the login."""
        failure = self.auth_failure()
        if failure:
            raise KinspectError(failure)

    def _admin_answered(self) -> bool:
        """The AdminClient answered once, and so did the groups' process (unless the cluster
        did not answer at all: then there is nothing to wait for)."""
        assert self.admin is not None
        state = self.admin.view().state
        groups = self.admin.groups
        return state != "unknown" and (state != "ok" or groups is None or groups.answered.is_set())

    def wait_ready(self, timeout_s: float = 10.0) -> ClusterSnapshot:
        """Block until both sources have answered once (for one-shot commands)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            admin_done = self.admin is None or self._admin_answered()
            if admin_done and (self.latest is not None or self._thread is None):
                break
            if self._thread is None:  # one-shot: the sources' signals are ours to take
                self._wake.wait(0.05)
                self._wake.clear()
            else:
                time.sleep(0.05)
        try:
            return self.build()[0]
        except Exception as exc:  # a one-shot command says it in one line (exit 2)
            raise KinspectError(f"cannot build a snapshot of the cluster: {error_line(exc)}") from None
