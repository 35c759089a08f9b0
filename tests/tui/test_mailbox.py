"""The UI's mailbox: a burst of snapshots is one repaint with every event kept."""

from __future__ import annotations

from kinspect.model import Event
from kinspect.tui.feed import Mailbox
from kinspect.tui.messages import Arrival, SnapshotArrived
from tests.helpers.model_fixtures import T0, demo_snapshot


def event(n: int) -> Event:
    return Event(ts=T0 + n, kind="leader_changed", detail=f"change {n}", partition="test1-0")


def test_burst_is_one_message_with_the_newest_snapshot_and_all_events() -> None:
    box = Mailbox()
    first, second, third = (Arrival.assessed(demo_snapshot(taken_at=T0 + i)) for i in range(3))
    assert box.put(Arrival.assessed(first.snapshot, [event(1)])) is True  # the UI must be told
    assert box.put(Arrival.assessed(second.snapshot, [event(2)])) is False  # told: replace
    assert box.put(Arrival.assessed(third.snapshot, [event(3), event(4)])) is False
    message = SnapshotArrived(first, box)
    latest = message.latest()
    assert latest is not None
    assert latest.snapshot is third.snapshot and latest.snapshot.taken_at == T0 + 2
    assert [e.detail for e in latest.events] == ["change 1", "change 2", "change 3", "change 4"]
    assert message.latest() is None  # a second message for the same burst shows nothing
    assert box.put(first) is True  # and the next snapshot is news again


def test_the_newest_snapshot_keeps_its_own_assessment() -> None:
    """The health drawn is the newest snapshot's, not the first one's of the burst."""
    box = Mailbox()
    calm = Arrival.assessed(demo_snapshot())
    worse = Arrival.assessed(demo_snapshot(isolated_leader=True, taken_at=T0 + 1))
    box.put(calm)
    box.put(worse)
    latest = box.take()
    assert latest is not None and latest.health is worse.health
    assert calm.health.at_min_isr == ()
    assert latest.health.at_min_isr == ("orders-2", "test1-0")


def test_recorded_messages_carry_their_own_snapshot() -> None:
    arrival = Arrival.assessed(demo_snapshot())
    assert SnapshotArrived(arrival).latest() is arrival


def test_the_panels_passes_are_prepared_in_the_feeds_thread_and_add_up_in_a_burst() -> None:
    """The model, the changes since the last snapshot and the brokers' counts come with the
    arrival (made where Arrival.assessed runs); a burst drawn as one keeps every change, and
    the view draws the prepared model as it is."""
    from kinspect.tui.partition_rows import PartitionTable, Preparer, broker_counts
    from kinspect.tui.partition_view import PartitionView

    preparer, box = Preparer(), Mailbox()
    calm, worse = demo_snapshot(), demo_snapshot(isolated_leader=True, taken_at=T0 + 1)
    first = Arrival.assessed(calm, (), preparer)
    assert first.prepared is not None and first.prepared.changes == ()
    assert first.prepared.model == PartitionTable.of(calm) and first.prepared.counts == broker_counts(calm)
    box.put(Arrival.assessed(worse, (), preparer))
    box.put(Arrival.assessed(calm, (), preparer))  # and back: both moves are kept
    latest = box.take()
    assert latest is not None and latest.prepared is not None
    moved = {(was.name, now.name) for was, now in latest.prepared.changes}
    assert moved == {(c.name, c.name) for c, w in zip(calm.partitions(), worse.partitions(),
                                                       strict=True) if c != w}
    assert len(latest.prepared.changes) == 2 * len(moved)
    view = PartitionView()
    view.show(calm, prepared=first.prepared)
    assert view._model is first.prepared.model
