"""Where the TUI's data comes from, delivered as Textual messages from background threads.

`LiveFeed` runs the observer (ZooKeeper watches + AdminClient polls) and a once-a-second poll of
the lab state, fault journal, load counters and what is failing (the observer's snapshot
builder, the AdminClient, reading the lab): a failure is a message, never swallowed.
Every live session is recorded (kinspect/tui/session_recording.py), a load started here attached.
`RecordedFeed` replays one fixed model: it is the stand-in used by snapshot tests and
screenshots of layouts, named so, never live data.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kinspect.lab.journal import JournalEntry
from kinspect.lab.state import LabState
from kinspect.load.liveloss import LedgerTail
from kinspect.load.load_process import LoadStatus, load_status
from kinspect.load.trend import RateTrend
from kinspect.model import ClusterSnapshot, Event
from kinspect.paths import kinspect_home
from kinspect.tui.messages import (
    Arrival,
    FeedFailed,
    LabArrived,
    Post,
    ProblemsChanged,
    SnapshotArrived,
)
from kinspect.tui.partition_rows import Preparer

if TYPE_CHECKING:
    from kinspect.sources.observer import Observer
    from kinspect.tui.session_recording import SessionRecording


class Mailbox:
    """Holds one snapshot (an Arrival: with its assessment) for the UI; newer ones replace it
    and their events pile up.

    A failover moves thousands of partitions at once and ZooKeeper notifies each; queueing a
    message per rebuild would put seconds of repaints in front of the user's next key.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Arrival | None = None

    def put(self, arrival: Arrival) -> bool:
        """Store it; True when the UI must be told (nothing was waiting already)."""
        with self._lock:
            if self._pending is None:
                self._pending = arrival
                return True
            self._pending = arrival.after(self._pending)
            return False

    def take(self) -> Arrival | None:
        with self._lock:
            pending, self._pending = self._pending, None
        return pending


class Feed:
    """Starts in a worker thread, posts messages until stopped."""

    title = "cluster"
    lab_backed = False
    preparer: Preparer | None = None  # a feed that prepares its snapshots for the panels

    def start(self, post: Post) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Nothing to release by default."""

    def watch_load(self, run_dir: Path | None) -> None:
        """Report this run dir's counters from now on (None: no load)."""


class RecordedFeed(Feed):
    """A fixed, recorded model (for snapshot tests): posts it once and goes quiet."""

    def __init__(self, snapshot: ClusterSnapshot, lab: LabState | None = None,
                 events: list[Event] | None = None, faults: list[JournalEntry] | None = None,
                 load: LoadStatus | None = None, title: str = "recorded model") -> None:
        self.snapshot, self.lab, self.events = snapshot, lab, events or []
        self.faults, self.load, self.title = faults or [], load, title
        self.lab_backed = lab is not None

    def start(self, post: Post) -> None:
        post(LabArrived(self.lab, self.faults, self.load))
        post(SnapshotArrived(Arrival.assessed(self.snapshot, self.events)))


class LiveFeed(Feed):
    """The real thing: an Observer plus the lab on disk, polled off the event loop."""

    def __init__(self, bootstrap: str, zookeeper: str | None, lab_backed: bool,
                 expected: Mapping[int, str] | None = None, title: str = "cluster",
                 admin_config: dict[str, str] | None = None,
                 zk_auth: list[tuple[str, str]] | None = None,
                 session_dir: Path | None = None, record: bool = True,
                 controllers: Mapping[int, str] | None = None) -> None:
        self.bootstrap, self.zookeeper = bootstrap, zookeeper
        self.controllers = dict(controllers or {})  # KRaft: each asked directly who leads
        self.admin_config, self.zk_auth = dict(admin_config or {}), zk_auth
        self.lab_backed, self.expected, self.title = lab_backed, dict(expected or {}), title
        self._stop = threading.Event()
        self._load_dir: Path | None = None
        self.session_dir = session_dir or (kinspect_home() / "sessions" / (
            time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"))
        self.record = record
        self.recording: SessionRecording | None = None
        self._tail: LedgerTail | None = None
        self._trend = RateTrend()
        self.preparer = Preparer()

    def watch_load(self, run_dir: Path | None) -> None:
        self._load_dir = run_dir
        if self.recording is not None:
            self.recording.attach_run(run_dir)

    def _load(self, observer: Observer, faults: list[JournalEntry]) -> LoadStatus | None:
        """The load's counters, and its acknowledgements judged against the leaders now: the
        ledger read as it grows, the observer asked where each written partition's epoch
        starts (in the feed's thread: reading chunks never reaches the event loop)."""
        status = load_status(self._load_dir)
        if status is None:
            self._tail = None
            return None
        if self._tail is None or self._tail.run_dir != status.run_dir:
            self._tail, self._trend = LedgerTail(status.run_dir), RateTrend()
        self._tail.refresh()
        if observer.admin is not None:
            observer.admin.watch_partitions(self._tail.partitions())
        self._trend.fault_at(entry.ts for entry in faults)
        stats = status.stats
        if stats is not None and stats.ts:
            self._trend.observe(stats.ts, stats.acked, stats.failed)
        return replace(status, live=self._tail.judge(observer.latest), trend=self._trend.frozen())

    def start(self, post: Post) -> None:
        from kinspect.errors import KinspectError
        from kinspect.sources.observer import Observer, now_ms

        observer = Observer(self.bootstrap, self.zookeeper, expected_brokers=self.expected,
                            admin_config=self.admin_config, zk_auth=self.zk_auth,
                            controllers=self.controllers)
        post = self._record(observer, post)
        mailbox = Mailbox()

        def deliver(snapshot: ClusterSnapshot, events: list[Event]) -> None:
            """In the observer's builder thread: the assessment is made here, off the loop."""
            arrival = Arrival.assessed(snapshot, events, self.preparer)
            if mailbox.put(arrival):
                post(SnapshotArrived(arrival, mailbox))

        observer.subscribe(deliver)
        try:
            observer.start()
        except KinspectError as exc:
            post(FeedFailed(str(exc)))
        else:
            self._poll(observer, post, LabPoll(self.lab_backed, now_ms()))
        finally:  # also after a bug: the observer's threads and sockets are not left behind
            self._close(observer)

    def _record(self, observer: Observer, post: Post) -> Post:
        """The recorder sees every snapshot and everything posted: the post to use from now."""
        if not self.record:
            return post
        from kinspect.tui.session_recording import SessionRecording

        self.recording = SessionRecording.open(self.session_dir, self.title, post)
        if self.recording is None:
            return post
        observer.subscribe(self.recording.snapshot)
        if self._load_dir is not None:
            self.recording.attach_run(self._load_dir)
        return self.recording.post

    def _poll(self, observer: Observer, post: Post, lab: LabPoll) -> None:
        """Once a second until stopped. A look that fails is a problem on screen (the header,
        a toast the first time) and the next second looks again: one bad read is not the end
        of the feed, nor a silent one."""
        from kinspect.errors import error_line

        problems: tuple[str, ...] = ()
        while not self._stop.wait(POLL_S):
            try:
                failed = lab.look(post, lambda faults: self._load(observer, faults))
                now = tuple(observer.problems()) + failed
            except Exception as exc:  # anything of one look: said, and the loop goes on
                now = (f"polling the cluster: {error_line(exc)}",)
            if now != problems:
                problems = now
                post(ProblemsChanged(problems))

    def _close(self, observer: Observer) -> None:
        observer.stop()  # here, in the feed's thread: it joins threads and closes sockets
        if self.recording is not None:  # after the observer: its last snapshot is kept
            self.recording.close()

    def stop(self) -> None:
        """Called from the event loop (on unmount): only asks; the feed's thread stops the rest."""
        self._stop.set()


POLL_S = 1.0  # the lab, the fault journal and the load: looked at once a second


class LabPoll:
    """The lab's side of one look: its state, new fault journal entries, the load's counters."""

    def __init__(self, lab_backed: bool, since_ms: int) -> None:
        self.lab_backed, self.since = lab_backed, since_ms
        self.lab: LabState | None = None

    def look(self, post: Post, load: Callable[[list[JournalEntry]], LoadStatus | None],
             ) -> tuple[str, ...]:
        """Post what is there now; a lab that cannot be read is said and the last one kept."""
        from kinspect.errors import error_line
        from kinspect.lab import journal, running_lab

        failed: tuple[str, ...] = ()
        if self.lab_backed:
            try:
                self.lab = running_lab()
            except Exception as exc:  # the engine or the state file: say so, keep the last
                failed = (f"reading the lab: {error_line(exc)}",)
        faults = journal.read(since_ms=self.since) if self.lab_backed else []
        if faults:
            self.since = faults[-1].ts + 1
        post(LabArrived(self.lab, faults, load(faults)))
        return failed
