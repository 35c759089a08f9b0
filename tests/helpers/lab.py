"""The session lab a test run shares: brought up on first use, taken down by the lifecycle tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import kinspect

PLAIN = (False, False, False)  # (TLS, the authorizer, OAuth) off: the session lab
TLS_AUTHORIZER = (True, True, False)


def _secure(status: dict[str, Any]) -> tuple[bool, bool, bool]:
    return bool(status.get("tls")), bool(status.get("authorizer")), bool(status.get("oauth"))


def _shape(status: dict[str, Any]) -> tuple[object, ...]:
    """What `ensure_up` compares: a lab of another shape is taken down."""
    return (status["backend"], status.get("mode", "zookeeper"), status.get("kafka_version"),
            status.get("log_dirs", 1), status.get("power", False), _secure(status))


class Lab:
    """The session lab: brought up on first use, reported by `kinspect lab status --json`."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.up_output = ""

    def ensure_up(self, backend: str = "process", mode: str = "zookeeper",
                  kafka: str | None = None, log_dirs: int = 1,
                  power: bool = False) -> dict[str, Any]:
        """The lab on this backend, in this mode, of this Kafka release (None: the 3.x pin;
        "4": the tested 4.x), with this many log dirs per broker and plain listeners only;
        another lab is taken down first."""
        from kinspect.lab.dist import resolve_version

        wanted = (backend, mode, resolve_version(kafka), log_dirs, power, PLAIN)
        running = self._running()
        if running is not None and _shape(running) != wanted:
            self.down()
        release = ["--kafka", kafka] if kafka is not None else []
        disks = ["--log-dirs", str(log_dirs)] if log_dirs > 1 else []
        disks += ["--power"] if power else []
        proc = kinspect("lab", "up", "--backend", backend, "--mode", mode, *release, *disks,
                        "--json", timeout=400)
        self.up_output = proc.stderr
        return dict(json.loads(proc.stdout))

    def ensure_secure(self, backend: str = "process", mode: str = "zookeeper") -> dict[str, Any]:
        """A lab with TLS and Kafka's authorizer (its SASL_SSL listener too), kept when one is
        running: the tests marked shares_lab("tls") run together and make it once (a TLS lab's
        reset and its users cost about a minute)."""
        running = self._running()
        if running is not None and (running["backend"], running.get("mode", "zookeeper"),
                                    _secure(running)) == (backend, mode, TLS_AUTHORIZER):
            return self.every_node_up(running)
        # reset, not down and up: `lab up` brings the last lab's data back (its topics and
        # groups), and these tests count what the cluster holds
        kinspect("lab", "reset", "--backend", backend, "--mode", mode, "--tls", "--authorizer",
                 timeout=400)
        return self.status()

    def every_node_up(self, status: dict[str, Any]) -> dict[str, Any]:
        """The lab as an earlier test left it, with what it paused resumed, what it stopped
        started again, and every broker in every broker's metadata: a broker restarted by the
        previous test may not be there yet, and a replication factor 3 topic needs them all."""
        from kinspect.lab.topics import wait_for_brokers

        for node in status["nodes"]:
            if node["state"] == "paused":
                kinspect("lab", "resume", node["name"])
            elif node["state"] != "running":
                kinspect("lab", "start", node["name"], timeout=200)
        brokers = sum(node["role"] == "broker" for node in status["nodes"])
        wait_for_brokers(status["bootstrap"], brokers, 60)
        return self.status()

    def _running(self) -> dict[str, Any] | None:
        current = kinspect("lab", "status", "--json", check=False)
        if current.returncode != 0:
            return None
        return dict(json.loads(current.stdout))

    def status(self) -> dict[str, Any]:
        return dict(json.loads(kinspect("lab", "status", "--json").stdout))

    def down(self) -> None:
        kinspect("lab", "down", check=False)


