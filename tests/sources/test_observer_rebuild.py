"""The observer rebuilds the model only when a source told something new; woken with nothing
new it hands out the same snapshot, taken now (no cluster: a stand-in for the AdminSource
hands over fixed views, named as such)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kinspect.clients.groups_watch import GroupsWatch
from kinspect.model import GroupView, Offsets, PartitionStateZ, ZkView
from kinspect.sources import observer as observing
from kinspect.sources.observer import Observer
from tests.helpers.kraft_fixtures import CLAIMS, KEY, kraft_view
from tests.helpers.model_fixtures import T0, zk_view


class StandInAdmin:
    """Stands in for the AdminSource's state between polls (no cluster here): a view and each
    broker's claims, replaced whole as a poll replaces them."""

    def __init__(self) -> None:
        self.current = kraft_view()
        self.answers: dict[int, Any] = dict(CLAIMS)
        self.groups: GroupsWatch | None = None

    def view(self) -> Any:
        return self.current

    def claims(self) -> dict[int, Any]:
        return dict(self.answers)  # a copy, as AdminSource.claims() gives


def observer_with(stand_in: StandInAdmin) -> Observer:
    observer = Observer(None, None, expected_brokers={1: "a", 2: "b", 3: "c"})
    observer.admin = stand_in  # type: ignore[assignment]
    return observer


def test_nothing_new_is_the_same_snapshot_taken_later(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(1_000, 100_000, 1_000))
    monkeypatch.setattr(observing, "now_ms", lambda: next(clock))
    stand_in = StandInAdmin()
    observer = observer_with(stand_in)
    first, _ = observer.build()
    again, events = observer.build()
    assert again.topics is first.topics and again.brokers is first.brokers
    assert (first.taken_at, again.taken_at) == (1_000, 2_000) and events == []
    assert replace(again, taken_at=first.taken_at) == first
    rebuilt, _ = observer.build(anew=True)  # asked anew: the model is built again
    assert rebuilt.brokers is not first.brokers and rebuilt.taken_at == 3_000
    assert replace(rebuilt, taken_at=first.taken_at) == first


class ZooKeeperReads:
    """Stands in for the ZooKeeper source (no ZooKeeper here): like it, every read makes a new
    view from its tables; `states` is what its watches last told."""

    def __init__(self) -> None:
        self.states = {KEY: PartitionStateZ(2, 5, (2, 3), 3, T0 - 5000)}

    def view(self) -> ZkView:
        return zk_view(states=dict(self.states))


def test_zookeeper_views_read_anew_but_equal_are_nothing_new() -> None:
    observer = Observer(None, None, expected_brokers={1: "a", 2: "b", 3: "c"})
    zookeeper = observer.zk = ZooKeeperReads()  # type: ignore[assignment]
    first, _ = observer.build()
    again, _ = observer.build()
    assert again.topics is first.topics and again.brokers is first.brokers
    zookeeper.states = {KEY: PartitionStateZ(3, 6, (3,), 3, T0)}  # a watch told of an election
    elected, _ = observer.build()
    assert elected.partition(*KEY).leader == 3 and elected.partition(*KEY).isr == (3,)  # type: ignore[union-attr]


def test_a_new_poll_or_a_new_claim_is_built_again() -> None:
    stand_in = StandInAdmin()
    observer = observer_with(stand_in)
    first, _ = observer.build()
    stand_in.current = replace(stand_in.current, offsets={KEY: Offsets(900, 0, 5)})
    polled, _ = observer.build()
    assert polled.partition(*KEY).high_watermark == 900  # type: ignore[union-attr]
    assert first.partition(*KEY).high_watermark == 500  # type: ignore[union-attr]
    rogue = CLAIMS[1][KEY]  # broker 1 still says it leads: the broker view shows its word
    stand_in.answers[1] = {KEY: replace(rogue, isr=(1,))}  # a new answer of broker 1
    claimed, _ = observer.build()
    assert polled.partition(*KEY).broker_isr == (1, 2, 3)  # type: ignore[union-attr]
    assert claimed.partition(*KEY).broker_isr == (1,)  # type: ignore[union-attr]
    assert claimed.topics is not polled.topics


def test_the_groups_probe_tells_only_news() -> None:
    told: list[int] = []
    watch = GroupsWatch("127.0.0.1:1", {}, on_change=lambda: told.append(1))
    quiet = '{"listed": [], "groups": {}}'
    watch._take(quiet)
    watch._take(quiet)
    assert len(told) == 1 and watch.answered.is_set()  # the first answer, then nothing new
    busy = ('{"listed": ["g1"], "groups": {"g1": {"state": "Stable", "members": 1, '
            '"committed": [["t", 0, 5]]}}}')
    watch._take(busy)
    watch._take(busy)
    assert len(told) == 2
    assert watch.view() == {"g1": GroupView("g1", "Stable", 1, {("t", 0): 5}, {})}
    watch._take(quiet)
    assert len(told) == 3 and watch.view() == {}
