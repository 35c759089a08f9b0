"""The consumer groups' probe process (clients/groups.py), watched from kinspect's own process.

Light on purpose: a one-shot command starts the probe before it imports the rest of kinspect,
so the probe's own start (a Python and librdkafka of its own, ~0.15 s) runs beside it instead
of after it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kinspect.model import GroupView

RESTART_PAUSE_S = 2.0


def started(bootstrap: str, config: Mapping[str, object], timeout_s: float = 3.0) -> GroupsWatch:
    """The probe already running, for a one-shot command to hand to its observer."""
    watch = GroupsWatch(bootstrap, config, timeout_s=timeout_s)
    watch.start()
    return watch


def read_probe_line(line: str) -> tuple[list[str], dict[str, GroupView], dict[str, str]]:
    """(the groups listed, the views of those that answered, why the others were refused)
    from one line of the probe."""
    from kinspect.model import GroupView

    data = json.loads(line)
    views = {gid: GroupView(gid, str(g["state"]), int(g["members"]),
                            {(str(t), int(p)): int(o) for t, p, o in g["committed"]},
                            {(str(t), int(p)): int(ts) for t, p, ts in g.get("next_ts", [])})
             for gid, g in data["groups"].items()}
    refused = {str(gid): str(why) for gid, why in (data.get("refused") or {}).items()}
    return [str(gid) for gid in data["listed"]], views, refused


class GroupsWatch:
    """Runs the probe process, keeps its last answer, starts it again when it dies."""

    def __init__(self, bootstrap: str, config: Mapping[str, object], interval_s: float = 1.0,
                 timeout_s: float = 3.0, on_change: Callable[[], None] | None = None) -> None:
        self.bootstrap, self.config = bootstrap, config
        self.interval_s, self.timeout_s = interval_s, timeout_s
        self._on_change = on_change or (lambda: None)
        self._lock = threading.Lock()
        self._groups: dict[str, GroupView] = {}
        self._refused: dict[str, str] = {}
        self.answered = threading.Event()
        self.restarts = 0
        self._stop = threading.Event()
        self._process: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the probe (once: a watch started early by a one-shot command is adopted by
        its observer, which starts it again)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kinspect-groups",
                                            daemon=True)
            self._thread.start()

    def listen(self, on_change: Callable[[], None]) -> None:
        """Who is told when an answer arrives (the observer that adopts the watch)."""
        self._on_change = on_change

    def view(self) -> dict[str, GroupView]:
        with self._lock:
            return dict(self._groups)

    def refused(self) -> dict[str, str]:
        """Groups listed that this user may not describe, and why."""
        with self._lock:
            return dict(self._refused)

    def stop(self) -> None:
        self._stop.set()
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
        if self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        import subprocess

        while not self._stop.is_set():
            self._process = process = subprocess.Popen(
                [sys.executable, "-m", "kinspect.clients.groups", "--bootstrap", self.bootstrap,
                 "--interval", str(self.interval_s), "--timeout", str(self.timeout_s),
                 "--parent", str(os.getpid())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True)
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(self.config))
            process.stdin.close()
            for line in process.stdout:
                self._take(line)
            process.wait()
            if not self._stop.wait(RESTART_PAUSE_S):
                self.restarts += 1

    def _take(self, line: str) -> None:
        try:
            listed, views, refused = read_probe_line(line)
        except (ValueError, KeyError, TypeError):
            return
        with self._lock:
            # A listed group whose coordinator did not answer in time keeps its last view: lag
            # is reported as last known rather than dropped mid-failover; a group no longer
            # listed is gone.
            groups = {gid: views[gid] if gid in views else self._groups[gid]
                      for gid in listed if gid in views or gid in self._groups}
            changed = groups != self._groups or refused != self._refused
            self._groups, self._refused = groups, refused
        first = not self.answered.is_set()
        self.answered.set()
        if changed or first:  # the same answer again (every second) is no news to rebuild for
            self._on_change()
