"""Evidence for the post-mortem, kept in the run dir next to the ledger.

A run dir must explain itself after the lab is gone: the observer's timeline is recorded while
load runs, and `verify` copies the fault journal and the brokers' logs in beside the final log.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.lab import journal, open_backend
from kinspect.lab.state import LabState

BROKER_LOGS = ("server.log", "controller.log", "state-change.log")
SETTLE_MS = 60_000  # faults applied shortly before the run still explain it


@contextmanager
def recording_timeline(bootstrap: str, zookeeper: str | None, run_dir: Path,
                       expected: Mapping[int, str] | None = None,
                       admin_config: Mapping[str, str] | None = None,
                       zk_auth: list[tuple[str, str]] | None = None) -> Iterator[None]:
    """Observe the cluster for the duration of a load run, appending events to timeline.jsonl.
    It connects as the load does (SASL settings, ZooKeeper credentials of a profile)."""
    from kinspect.sources.observer import Observer

    observer = Observer(bootstrap, zookeeper, expected_brokers=expected, run_dir=run_dir,
                        admin_config=dict(admin_config or {}), zk_auth=zk_auth)
    try:
        observer.start()
    except KinspectError:
        observer.stop()  # no timeline is a gap in the report, not a reason to refuse the load
        yield
        return
    try:
        yield
    finally:
        observer.stop()


def collect_lab_evidence(run_dir: Path, lab: LabState, since_ms: int) -> list[str]:
    """Copy the fault journal (entries since the run began) and broker logs; return what was kept."""
    kept: list[str] = []
    entries = [e for e in journal.read(since_ms=since_ms - SETTLE_MS) if e.get("lab_id") == lab.lab_id]
    (run_dir / "faults.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    kept.append(f"faults.jsonl ({len(entries)} faults)")
    backend = open_backend(lab.backend)
    for broker in lab.brokers:
        source = backend.broker_log_dir(broker.name)  # a docker lab copies them out first
        if source is None:
            continue
        target = run_dir / "broker-logs" / broker.name
        target.mkdir(parents=True, exist_ok=True)
        for name in BROKER_LOGS:
            for path in sorted(source.glob(name + "*")):
                shutil.copy2(path, target / path.name)
        kept.append(f"broker-logs/{broker.name}")
    return kept
