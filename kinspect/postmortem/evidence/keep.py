"""The lab's evidence for the post-mortem, kept in the run dir next to the ledger.

After verify, the fault journal, the brokers' logs (and ZooKeeper's) and the replica snapshots
(segment files kept before a broker could truncate) are copied in, cut to the run's window, so a
run dir explains itself after the lab is gone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kinspect.lab import journal, open_backend
from kinspect.lab.replicas import snapshots_between
from kinspect.lab.state import LabState
from kinspect.load.rundir import BROKER_LOGS_DIR, FAULTS_FILE, REPLICAS_DIR

BROKER_LOGS = ("server.log", "controller.log", "state-change.log")
ZOOKEEPER_LOGS = ("zookeeper.log",)  # when it expired a broker's session, by its own clock


def collect_lab_evidence(run_dir: Path, lab: LabState, window: tuple[int, int],
                         topic: str) -> list[str]:
    """Copy what explains the run, cut to its window: the faults applied from its start to the
    end of verify, the brokers' logs, and the replica snapshots of its topic taken meanwhile."""
    start, end = window
    kept: list[str] = []
    entries = [e for e in journal.read(since_ms=start) if e.lab_id == lab.lab_id and e.ts <= end]
    (run_dir / FAULTS_FILE).write_text("".join(json.dumps(e.to_json()) + "\n" for e in entries))
    kept.append(f"{FAULTS_FILE} ({len(entries)} faults)")
    backend = open_backend(lab.backend)
    for broker in [n for n in lab.nodes if n.role in ("broker", "controller", "zookeeper")]:
        # KRaft's controllers too: they fence brokers and hold the quorum's elections
        source = backend.broker_log_dir(broker.name)  # a docker lab copies them out first
        if source is None:
            continue
        target = run_dir / BROKER_LOGS_DIR / broker.name
        target.mkdir(parents=True, exist_ok=True)
        for name in ZOOKEEPER_LOGS if broker.role == "zookeeper" else BROKER_LOGS:
            for path in sorted(source.glob(name + "*")):
                shutil.copy2(path, target / path.name)
        kept.append(f"{BROKER_LOGS_DIR}/{broker.name}")
    snapshots = snapshots_between(backend.root, start, end)
    for snapshot in snapshots:
        for part in sorted(snapshot.glob(f"*/{topic}-*")):
            if part.name[len(topic) + 1:].isdigit():
                shutil.copytree(part, run_dir / REPLICAS_DIR / snapshot.name / part.parent.name
                                / part.name, dirs_exist_ok=True)
    if snapshots:
        kept.append(f"{REPLICAS_DIR} ({len(snapshots)} snapshots of {topic}'s replicas)")
    return kept
