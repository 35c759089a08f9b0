"""A lab that fails to start says why, and keeps the nodes' logs out of the next reset's way
(a matrix run once said only "kafka3 exited while starting", and the next reset wiped why)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from kinspect.lab.backend import LabBackend
from kinspect.lab.state import NodeRecord


def test_a_failed_start_keeps_every_nodes_logs(tmp_path: Path) -> None:
    lab = SimpleNamespace(root=tmp_path / "lab")
    for node in ("ctl1", "kafka3"):
        (lab.root / "nodes" / node / "logs").mkdir(parents=True)
        (lab.root / "nodes" / node / "logs" / "server.log").write_text(f"{node} said\n")
    kept = LabBackend._keep_start_logs(lab)  # type: ignore[arg-type]
    assert kept is not None and kept.parent == tmp_path / "lab-failures"
    assert (kept / "kafka3" / "server.log").read_text() == "kafka3 said\n"
    assert (kept / "ctl1" / "server.log").exists()
    assert LabBackend._keep_start_logs(SimpleNamespace(root=tmp_path / "none")) is None  # type: ignore[arg-type]


def test_why_a_node_died_comes_from_its_server_log_too(tmp_path: Path) -> None:
    """Kafka 4.x logs a fatal start error through log4j2 into server.log, not the console."""
    lab = SimpleNamespace(root=tmp_path)
    logs = tmp_path / "nodes" / "kafka3" / "logs"
    logs.mkdir(parents=True)
    (logs / "kafka3.out").write_text("starting\n")
    (logs / "server.log").write_text("[x] INFO fine\n[y] ERROR Exiting Kafka due to fatal "
                                     "exception during startup. (kafka.Kafka$)\n")
    node = NodeRecord(name="kafka3", role="broker", host="h", port=1, broker_id=3)
    said = LabBackend._why_dead(lab, node)  # type: ignore[arg-type]
    assert said == " ([y] ERROR Exiting Kafka due to fatal exception during startup. (kafka.Kafka$))"
