"""The cluster's story while a load runs: the observer's events, kept in RUN_DIR/timeline.jsonl.

A run dir must explain itself after the cluster is gone; the post-mortem reads this timeline
beside the ledger. It works on any cluster (the lab's own evidence is kept by the post-mortem's
finishing step, postmortem/evidence.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from kinspect.errors import KinspectError


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
