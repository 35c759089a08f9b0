"""The lab's evidence for the post-mortem, kept in the run dir next to the ledger.

After verify, the fault journal, the brokers' logs (and ZooKeeper's) and the replica snapshots
(segment files kept before a broker could truncate) are copied in, cut to the run's window, so a
run dir explains itself after the lab is gone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from kinspect.lab import journal, open_backend
from kinspect.lab.power import CUT_RECORD, power_cuts_between
from kinspect.lab.replicas import snapshots_between
from kinspect.lab.state import LabState
from kinspect.load.rundir import BROKER_LOGS_DIR, FAULTS_FILE, POWER_CUTS_DIR, REPLICAS_DIR

if TYPE_CHECKING:
    from kinspect.lab.backend import LabBackend

BROKER_LOGS = ("server.log", "controller.log", "state-change.log")
ZOOKEEPER_LOGS = ("zookeeper.log",)  # when it expired a broker's session, by its own clock


def collect_lab_evidence(run_dir: Path, lab: LabState, window: tuple[int, int],
                         topic: str) -> list[str]:
    """Copy what explains the run, cut to its window: the faults applied from its start to the
    end of verify, the brokers' logs, and the replica snapshots of its topic taken meanwhile."""
    kept = [_keep_faults(run_dir, lab, window)]
    backend = open_backend(lab.backend)
    kept += _keep_logs(run_dir, lab, backend)
    kept += _keep_replicas(run_dir, backend.root, window, topic)
    kept += _keep_power_cuts(run_dir, backend.root, window, topic)
    return kept


def _keep_faults(run_dir: Path, lab: LabState, window: tuple[int, int]) -> str:
    """The journal's entries of this lab within the window, one JSON object a line."""
    start, end = window
    entries = [e for e in journal.read(since_ms=start) if e.lab_id == lab.lab_id and e.ts <= end]
    (run_dir / FAULTS_FILE).write_text("".join(json.dumps(e.to_json()) + "\n" for e in entries))
    return f"{FAULTS_FILE} ({len(entries)} faults)"


def _keep_logs(run_dir: Path, lab: LabState, backend: LabBackend) -> list[str]:
    """Each node's logs: the brokers' and KRaft's controllers' (they fence brokers and hold the
    quorum's elections), and ZooKeeper's own."""
    kept = []
    for node in lab.nodes:
        if node.role not in ("broker", "controller", "zookeeper"):
            continue
        source = backend.broker_log_dir(node.name)  # a docker lab copies them out first
        if source is None:
            continue
        target = run_dir / BROKER_LOGS_DIR / node.name
        target.mkdir(parents=True, exist_ok=True)
        names = ZOOKEEPER_LOGS if node.role == "zookeeper" else BROKER_LOGS
        for name in names:
            for path in sorted(source.glob(name + "*")):
                shutil.copy2(path, target / path.name)
        kept.append(f"{BROKER_LOGS_DIR}/{node.name}")
    return kept


def _keep_replicas(run_dir: Path, root: Path, window: tuple[int, int], topic: str) -> list[str]:
    """The snapshots of `topic`'s replica dirs taken within the window (none: nothing said)."""
    snapshots = snapshots_between(root, *window)
    for snapshot in snapshots:
        for part in sorted(snapshot.glob(f"*/{topic}-*")):
            if part.name[len(topic) + 1:].isdigit():
                shutil.copytree(part, run_dir / REPLICAS_DIR / snapshot.name / part.parent.name
                                / part.name, dirs_exist_ok=True)
    if not snapshots:
        return []
    return [f"{REPLICAS_DIR} ({len(snapshots)} snapshots of {topic}'s replicas)"]


def _keep_power_cuts(run_dir: Path, root: Path, window: tuple[int, int],
                     topic: str) -> list[str]:
    """Each power cut of the window: its record, and the batches of `topic` it dropped, laid
    out as a replica snapshot (`<cut>/<node>/<topic>-<p>/*.log`) so the same reader reads
    them."""
    cuts = power_cuts_between(root, *window)
    for cut in cuts:
        target = run_dir / POWER_CUTS_DIR / cut.name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cut / CUT_RECORD, target / CUT_RECORD)
        node = cut.name.split("-", 1)[1]
        for part in sorted(cut.glob(f"{topic}-*")):
            if part.name[len(topic) + 1:].isdigit():
                shutil.copytree(part, target / node / part.name, dirs_exist_ok=True)
    if not cuts:
        return []
    return [f"{POWER_CUTS_DIR} ({len(cuts)} brokers' power cuts)"]
