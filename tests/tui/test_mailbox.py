"""The UI's mailbox: a burst of snapshots is one repaint with every event kept."""

from __future__ import annotations

from kinspect.model import Event
from kinspect.tui.feed import Mailbox
from kinspect.tui.messages import SnapshotArrived
from tests.helpers.model_fixtures import T0, demo_snapshot


def event(n: int) -> Event:
    return Event(ts=T0 + n, kind="leader_changed", detail=f"change {n}", partition="test1-0")


def test_burst_is_one_message_with_the_newest_snapshot_and_all_events() -> None:
    box = Mailbox()
    first, second, third = (demo_snapshot(taken_at=T0 + i) for i in range(3))
    assert box.put(first, [event(1)]) is True  # the UI must be told
    assert box.put(second, [event(2)]) is False  # already told: just replace
    assert box.put(third, [event(3), event(4)]) is False
    message = SnapshotArrived(first, [event(1)], box)
    latest = message.latest()
    assert latest is not None
    snapshot, events = latest
    assert snapshot.taken_at == T0 + 2
    assert [e.detail for e in events] == ["change 1", "change 2", "change 3", "change 4"]
    assert message.latest() is None  # a second message for the same burst shows nothing
    assert box.put(first, []) is True  # and the next snapshot is news again


def test_recorded_messages_carry_their_own_snapshot() -> None:
    snapshot = demo_snapshot()
    assert SnapshotArrived(snapshot, []).latest() == (snapshot, [])
