"""The cluster's story while a load runs: the observer's events, kept in RUN_DIR/timeline.jsonl,
and the live loss figure, kept in RUN_DIR/live_loss.jsonl.

A run dir must explain itself after the cluster is gone; the post-mortem reads this timeline
beside the ledger. It works on any cluster (the lab's own evidence is kept by the post-mortem's
finishing step, postmortem/evidence/keep.py). Once a second the ledger is judged against the
leaders' logs as they are (load/liveloss.py), and once more when the producers are done, so
the post-mortem and the scenarios can set what was known live beside what was lost.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.load.liveloss import LedgerTail, LiveLoss

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject
    from kinspect.sources.observer import Observer

LIVE_LOSS_FILE = "live_loss.jsonl"


def live_loss_json(live: LiveLoss, ts_ms: int, final: bool = False) -> JsonObject:
    return {"ts": ts_ms, **live.to_json(), "final": final}


def read_live_loss(run_dir: Path) -> dict[str, Any] | None:
    """The last live judgement of a run (None: the run was not observed)."""
    try:
        lines = (run_dir / LIVE_LOSS_FILE).read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return dict(json.loads(line))
        except ValueError:
            continue  # a line cut short by a crash
    return None


class LiveLossWriter:
    """Judges the run's ledger against the observed leaders once a second, on its own thread."""

    def __init__(self, observer: Observer, run_dir: Path) -> None:
        self.observer, self.tail = observer, LedgerTail(run_dir)
        self._out = open(run_dir / LIVE_LOSS_FILE, "a")  # noqa: SIM115
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kinspect-live-loss",
                                        daemon=True)
        self._last: tuple[int, int, int] | None = None

    def start(self) -> None:
        self._thread.start()

    def judge(self, final: bool = False) -> None:
        self.tail.refresh()
        if self.observer.admin is not None:
            self.observer.admin.watch_partitions(self.tail.partitions())
        live = self.tail.judge(self.observer.latest)
        key = (live.acked, live.doomed_total, live.pending)
        if final or key != self._last:
            self._last = key
            self._out.write(json.dumps(live_loss_json(live, time.time_ns() // 1_000_000,
                                                      final)) + "\n")
            self._out.flush()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.judge()
            except Exception:  # a figure missed now is judged the next second
                continue

    def stop(self, wait_s: float = 3.0) -> None:
        """Stop the thread and judge once more: the ledger is complete now. A partition whose
        epoch start the leader has not told yet is asked by the next poll: wait for it."""
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            self.tail.refresh()
            deadline = time.monotonic() + wait_s
            while self.observer.admin is not None and time.monotonic() < deadline:
                self.observer.admin.watch_partitions(self.tail.partitions())
                if not self.tail.judge(self.observer.latest).pending:
                    break
                time.sleep(0.2)
            self.judge(final=True)
        finally:
            self._out.close()


@contextmanager
def recording_timeline(bootstrap: str, zookeeper: str | None, run_dir: Path,
                       expected: Mapping[int, str] | None = None,
                       admin_config: Mapping[str, str] | None = None,
                       zk_auth: list[tuple[str, str]] | None = None,
                       controllers: Mapping[int, str] | None = None) -> Iterator[None]:
    """Observe the cluster for the duration of a load run, appending events to timeline.jsonl.
    It connects as the load does (SASL settings, ZooKeeper credentials of a profile); a KRaft
    cluster's controllers, when known, are asked who leads the quorum."""
    from kinspect.sources.observer import Observer

    observer = Observer(bootstrap, zookeeper, expected_brokers=expected, run_dir=run_dir,
                        admin_config=dict(admin_config or {}), zk_auth=zk_auth,
                        controllers=controllers)
    try:
        observer.start()
    except KinspectError:
        observer.stop()  # no timeline is a gap in the report, not a reason to refuse the load
        yield
        return
    live = LiveLossWriter(observer, run_dir)
    live.start()
    try:
        yield
    finally:
        try:
            live.stop()
        finally:
            observer.stop()
