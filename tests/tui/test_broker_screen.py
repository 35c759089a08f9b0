"""The broker view (`b`), under Pilot on a recorded model where broker 3 was cut off and led on:
every replica broker 3 hosts, what it is (leader, follower, in sync), how far behind, how big;
sorted with `s`, filtered with `/` and `u`, back with Esc; kept live by new snapshots."""

from __future__ import annotations

import asyncio
import dataclasses

from textual.widgets import Static

from kinspect.model import ClusterSnapshot, ReplicaDisk
from kinspect.model.brokers import HostedReplica, Role, hosted_by, summary, view
from kinspect.tui.app import KinspectApp
from kinspect.tui.broker_screen import BrokerScreen, ReplicaList, replica_cells
from kinspect.tui.feed import RecordedFeed
from tests.helpers.kraft_fixtures import T0
from tests.helpers.recorded import recorded_snapshot
from tests.helpers.waiting import first_snapshot, until


def with_sizes(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """Broker 3's replica of each partition is 1,000 bytes per partition number + 1."""
    topics = tuple(dataclasses.replace(t, partitions=tuple(
        dataclasses.replace(p, disks=(ReplicaDisk(3, "/data/a", 1_000 * (p.partition + 1)),))
        for p in t.partitions)) for t in snapshot.topics)
    return dataclasses.replace(snapshot, topics=topics)


def test_a_brokers_replicas_from_the_model() -> None:
    snapshot = with_sizes(recorded_snapshot())
    hosted = hosted_by(snapshot, 3)
    expected = {p.name for p in snapshot.partitions() if 3 in p.replicas}
    assert {r.name for r in hosted} == expected
    test1 = next(r for r in hosted if r.name == "test1-0")
    assert (test1.role, test1.in_isr) == (Role.FOLLOWER, False)
    own, lead = (next(r for r in p.replica_logs if r.broker == b) for p in snapshot.partitions()
                 if p.name == "test1-0" for b in (3, 1))
    assert own.log_end is not None and lead.log_end is not None
    assert test1.behind == lead.log_end - own.log_end < 0  # the cut-off leader ran ahead
    assert test1.size == 1_000
    load = summary(hosted)
    assert load.hosted == len(expected)
    assert load.leads == sum(p.leader == 3 for p in snapshot.partitions())
    assert load.size == sum(r.size or 0 for r in hosted)
    assert view(hosted, "health")[0].name == "test1-0"  # out of the ISR comes first
    assert [r.name for r in view(hosted, text="orders")] == sorted(
        (r.name for r in hosted if r.name.startswith("orders")),
        key=lambda n: int(n.rsplit("-", 1)[1]))


def test_a_replicas_cells_say_what_was_not_told_and_colour_how_far_it_trails() -> None:
    """Each cell's words and style: `?` (dim) for what its broker did not tell, behind in
    yellow, ahead of the leader (a log a rejoin truncates) in red, level dim."""
    base = HostedReplica("t", 0, Role.FOLLOWER, True, False, 90, 100, 2_000, "/data/a")

    def cells(**changes: object) -> list[tuple[str, str]]:
        replica = dataclasses.replace(base, **changes)  # type: ignore[arg-type]
        return [(cell.plain, str(cell.style)) for cell in replica_cells(replica)]

    assert cells() == [("t-0", ""), ("follower", ""), ("yes", "green"), ("90", ""),
                       ("100", "dim"), ("10", "bold yellow"), ("2.0 kB", ""), ("a", "")]
    assert cells(role=Role.LEADER, log_end=100)[1:6] == [
        ("leader", "bold"), ("yes", "green"), ("100", ""), ("100", "dim"), ("0", "dim")]
    assert cells(log_end=120)[5] == ("-20", "bold red")
    assert cells(in_isr=False)[2] == ("NO", "bold red")
    assert cells(offline=True)[2] == ("OFFLINE", "bold red")
    assert cells(log_end=None)[3:6] == [("?", "dim"), ("100", "dim"), ("?", "dim")]
    assert cells(leader_end=None)[3:6] == [("90", ""), ("?", "dim"), ("?", "dim")]
    assert cells(size=None, log_dir=None)[6:] == [("?", "dim"), ("?", "dim")]
    assert cells(log_dir="")[7] == ("?", "dim")


def test_b_opens_the_selected_broker_and_its_keys_sort_filter_and_go_back() -> None:
    async def scenario() -> None:
        snapshot = with_sizes(recorded_snapshot())
        app = KinspectApp(RecordedFeed(snapshot), clock=lambda: (T0 + 400) / 1000)
        async with app.run_test(size=(160, 40)) as pilot:
            await first_snapshot(pilot, app)
            await pilot.press("3", "b")
            await until(pilot, lambda: isinstance(app.screen, BrokerScreen), "the broker screen")
            screen = app.screen
            assert isinstance(screen, BrokerScreen) and screen.broker == 3
            rows = screen.query_one(ReplicaList).rows
            assert len(rows) == len(hosted_by(snapshot, 3))
            said = str(screen.query_one("#broker-summary", Static).content)
            assert said.startswith(f"broker 3 · hosts {len(rows)} · leads ")
            out = sum(not r.in_isr for r in rows)
            assert f"{out} not in ISR" in said and out >= 1
            await pilot.press("s")  # partition → health: the replica out of the ISR first
            first = screen.query_one(ReplicaList).rows[0]
            assert (screen.sort, first.name) == ("health", "test1-0")
            assert [c.plain for c in replica_cells(first)][:3] == ["test1-0", "follower", "NO"]
            await pilot.press("u")
            unhealthy = [r.name for r in screen.query_one(ReplicaList).rows]
            assert unhealthy[0] == "test1-0" and all(
                not r.in_isr or (r.behind or 0) > 0 for r in screen.query_one(ReplicaList).rows)
            await pilot.press("u", "slash", *"orders-1")
            await until(pilot, lambda: [r.name for r in screen.query_one(ReplicaList).rows]
                        == ["orders-1"], "the filter applied")
            await pilot.press("escape")  # clears the filter first
            assert len(screen.query_one(ReplicaList).rows) == len(rows)
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, BrokerScreen), "back")

    asyncio.run(scenario())
