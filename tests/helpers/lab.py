"""The session lab a test run shares: brought up on first use, taken down by the lifecycle tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import kinspect


class Lab:
    """The session lab: brought up on first use, reported by `kinspect lab status --json`."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.up_output = ""

    def ensure_up(self, backend: str = "process", mode: str = "zookeeper",
                  kafka: str | None = None, log_dirs: int = 1,
                  power: bool = False) -> dict[str, Any]:
        """The lab on this backend, in this mode, of this Kafka release (None: the 3.x pin;
        "4": the tested 4.x) and with this many log dirs per broker; another lab is taken
        down first."""
        from kinspect.lab.dist import resolve_version

        current = kinspect("lab", "status", "--json", check=False)
        if current.returncode == 0:
            running = json.loads(current.stdout)
            if (running["backend"], running.get("mode", "zookeeper"),
                    running.get("kafka_version"), running.get("log_dirs", 1),
                    running.get("power", False)) != (
                        backend, mode, resolve_version(kafka), log_dirs, power):
                self.down()
        release = ["--kafka", kafka] if kafka is not None else []
        disks = ["--log-dirs", str(log_dirs)] if log_dirs > 1 else []
        disks += ["--power"] if power else []
        proc = kinspect("lab", "up", "--backend", backend, "--mode", mode, *release, *disks,
                        "--json", timeout=400)
        self.up_output = proc.stderr
        return dict(json.loads(proc.stdout))

    def status(self) -> dict[str, Any]:
        return dict(json.loads(kinspect("lab", "status", "--json").stdout))

    def down(self) -> None:
        kinspect("lab", "down", check=False)


