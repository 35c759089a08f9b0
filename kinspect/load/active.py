"""The loads running on this machine, so `lab down` can stop those aimed at the lab and the
TUI can say on quit which keep running.

A run dir may be anywhere (`--run-dir`), so each runner registers itself in
KINSPECT_HOME/loads/<pid>.json while it runs. An entry whose process is gone (a SIGKILLed
runner: its workers die with it) is stale and is removed when read.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from kinspect.paths import kinspect_home
from kinspect.procs import read_process


@dataclass(frozen=True)
class ActiveLoad:
    pid: int
    run_dir: str
    topic: str
    bootstrap: str
    kind: str = "load"  # or "consumer group": what it is called and how it is stopped
    stop_with: str = ""  # the command that stops it (registered by the runner itself)

    def what(self) -> str:
        return f"the {self.kind} on {self.topic}"

    def stop_command(self) -> str:
        return self.stop_with or f"kinspect load stop --run-dir {self.run_dir}"

    def aims_at(self, addresses: Iterable[str]) -> bool:
        """Whether any of its bootstrap servers is one of these host:port addresses."""
        return bool({a.strip() for a in self.bootstrap.split(",")} & set(addresses))


def registry() -> Path:
    return kinspect_home() / "loads"


@contextlib.contextmanager
def registered(run_dir: Path, topic: str, bootstrap: str, kind: str = "load",
               stop_with: str = "") -> Iterator[None]:
    """This process runs the load of run_dir for as long as the block lasts (its pid file is
    in run_dir, so `stop_load(run_dir)` stops it, whatever its kind)."""
    entry = ActiveLoad(os.getpid(), str(run_dir.resolve()), topic, bootstrap, kind, stop_with)
    path = registry() / f"{entry.pid}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(entry)))
    except OSError:  # an unwritable KINSPECT_HOME costs only this bookkeeping, not the run
        path = Path()
    try:
        yield
    finally:
        if path != Path():
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    process = read_process(pid)
    return process is not None and not process.exited and any(
        b"kinspect" in arg for arg in process.args)


def running_loads() -> list[ActiveLoad]:
    """The registered loads whose runner still runs (stale entries are removed)."""
    folder = registry()
    if not folder.is_dir():
        return []
    loads = []
    for path in sorted(folder.glob("*.json")):
        try:
            load = ActiveLoad(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if _alive(load.pid):
            loads.append(load)
        else:
            path.unlink(missing_ok=True)
    return loads


def stop_loads(loads: list[ActiveLoad], timeout_s: float = 15.0) -> list[ActiveLoad]:
    """Ask each load to stop (its workers record what is in flight) and wait for them to end;
    returns those still running at the deadline."""
    from kinspect.load.producer_run import stop_load

    for load in loads:
        stop_load(Path(load.run_dir))
    deadline = time.monotonic() + timeout_s
    left = loads
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [load for load in left if _alive(load.pid)]
    return left
