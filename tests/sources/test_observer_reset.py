"""An observer that outlives its cluster's ZooKeeper data (`lab reset`, every scenario)."""

from __future__ import annotations

from typing import Any

import pytest

from kinspect.lab.topics import create_topics
from kinspect.sources.observer import Observer
from tests.helpers import kinspect, lab_status, wait_until

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab]


def test_observer_follows_a_reset_lab(lab: dict[str, Any]) -> None:
    """The wiped ZooKeeper refuses the old session forever; the observer must start over and
    show the new cluster, not keep drawing the old one."""
    before = lab
    create_topics(before["bootstrap"], {"before-reset": 1})
    observer = Observer(before["bootstrap"], before["zookeeper"])
    observer.start()
    try:
        wait_until(lambda: observer.latest and observer.latest.partition("before-reset", 0), 30,
                   "the topic in the model")
        kinspect("lab", "reset", timeout=400)
        after = lab_status()
        assert after["zookeeper"] == before["zookeeper"]  # same address, new data
        create_topics(after["bootstrap"], {"after-reset": 1})

        def new_cluster_seen() -> bool:
            snapshot = observer.build()[0]
            return (snapshot.zookeeper_state == "connected"
                    and snapshot.partition("after-reset", 0) is not None
                    and snapshot.partition("before-reset", 0) is None)

        wait_until(new_cluster_seen, 90, "the observer to show the reset cluster")
    finally:
        observer.stop()
