"""The fault console: what the keys do to the lab, run in worker threads, never on the loop.

Every operation goes through the same backend interface as `kinspect lab …`, so the journal,
the state file and the CLI all agree about what the TUI did.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kinspect.lab import open_backend
from kinspect.lab.topology import isolate_groups, parse_groups
from kinspect.load.rundir import new_run_dir

ISOLATE_SCOPES = {"zk": "from ZooKeeper", "brokers": "from the other brokers",
                  "all": "from everything"}


@dataclass(frozen=True)
class LoadRequest:
    topic: str = "test1"
    acks: str = "1"
    rate: str = "10000"
    count: str = "100000"
    producers: str = "1"

    def arguments(self) -> list[str]:
        return ["--topic", self.topic, "--acks", self.acks, "--rate", self.rate,
                "--count", self.count, "--producers", self.producers]


class LabConsole:
    """Acts on the lab kinspect started. Methods block: call them from a thread worker."""

    def kill(self, node: str) -> str:
        backend = open_backend()
        backend.kill(node)
        return f"killed {node} ({backend.means['kill']})"

    def stop(self, node: str) -> str:
        open_backend().stop(node)
        return f"stopped {node}"

    def start_or_restart(self, node: str) -> str:
        backend = open_backend()
        state = backend.state()
        record = state.node(node) if state else None
        if record is not None and record.state in ("running", "paused"):
            if record.state == "paused":
                backend.resume(node)  # a frozen JVM cannot shut down cleanly
            backend.restart(node)
            return f"restarted {node}"
        backend.start(node)
        return f"started {node}"

    def pause_or_resume(self, node: str) -> str:
        backend = open_backend()
        state = backend.state()
        record = state.node(node) if state else None
        if record is not None and record.state == "paused":
            backend.resume(node)
            return f"resumed {node}"
        backend.pause(node)
        return f"paused {node} ({backend.means['pause']})"

    def node_names(self) -> list[str]:
        state = open_backend().state()
        return [n.name for n in state.nodes] if state else []

    def isolate(self, node: str, scope: str) -> str:
        groups = isolate_groups(node, self.node_names(), scope)
        open_backend().partition(groups, None)
        return f"isolated {node} {ISOLATE_SCOPES[scope]}"

    def partition(self, specs: Sequence[str]) -> str:
        groups = parse_groups(specs, self.node_names())
        open_backend().partition(groups, None)
        return "partitioned: " + " | ".join(",".join(g) for g in groups)

    def heal(self) -> str:
        open_backend().heal()
        return "healed every partition"

    def start_load(self, request: LoadRequest) -> Path:
        """Start `kinspect load run` as its own process; the TUI follows its stats file."""
        run_dir = new_run_dir()
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(run_dir / "load.out", "w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kinspect", "load", "run", *request.arguments(),
                 "--run-dir", str(run_dir), "--json", "--origin", "tui"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        time.sleep(0.5)
        code = proc.poll()
        if code is not None and code != 0:
            lines = (run_dir / "load.out").read_text().strip().splitlines()
            raise RuntimeError(lines[-1] if lines else f"load exited with {code}")
        return run_dir

    def start_scenario(self, name: str) -> tuple[subprocess.Popen[bytes], Path]:
        """`kinspect scenario run NAME` as its own process, the lab kept for the screen.
        Its progress lines go to RUN_DIR.log, which the TUI follows."""
        from kinspect.scenarios.runner import default_run_dir

        run_dir = default_run_dir(name)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(run_dir.with_suffix(".log"), "w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kinspect", "scenario", "run", name, "--json",
                 "--keep-lab", "--run-dir", str(run_dir)],
                stdout=subprocess.DEVNULL, stderr=out, stdin=subprocess.DEVNULL,
                start_new_session=True)
        return proc, run_dir

    def stop_load(self, run_dir: Path) -> str:
        from kinspect.load.runner import stop_load

        return "stopping the load" if stop_load(run_dir) else "no load was running"
