"""One controller move is one event: the snapshots of a move, built here from the raw views the
sources hand over, and the one line each sequence must give (written out by hand)."""

from __future__ import annotations

from kinspect.model import (
    ClusterSnapshot,
    ControllerMoves,
    Event,
    EventKind,
    build_snapshot,
    diff,
)
from kinspect.model.controller_moves import VACANCY_GRACE_MS
from tests.helpers.kraft_fixtures import kraft_snapshot, kraft_view, quorum
from tests.helpers.model_fixtures import T0, broker_view, zk_view


def zk(controller: int | None, epoch: int, at_ms: int) -> ClusterSnapshot:
    """The cluster as ZooKeeper says it at T0 + at_ms: /controller and /controller_epoch."""
    view = zk_view(controller=controller, epoch=epoch)
    return build_snapshot(view, broker_view(view, polled_at=T0 + at_ms), [1, 2, 3], T0 + at_ms)


def observed(snapshots: list[ClusterSnapshot]) -> list[list[Event]]:
    """The controller events of each snapshot, diffed as the observer does: one ControllerMoves
    kept across them."""
    moves, out, previous = ControllerMoves(), [], None
    for snapshot in snapshots:
        out.append([e for e in diff(previous, snapshot, moves)
                    if e.kind is EventKind.CONTROLLER_CHANGED])
        previous = snapshot
    return out


def test_a_zookeeper_move_seen_in_three_snapshots_is_one_event() -> None:
    """/controller deleted, created by broker 1, then /controller_epoch bumped: three snapshots
    20 ms apart, one move, told when the new controller's epoch is known."""
    steps = observed([zk(3, 1, 0), zk(None, 1, 20), zk(1, 1, 40), zk(1, 2, 60)])
    assert [len(s) for s in steps] == [0, 0, 0, 1]
    move = steps[3][0]
    assert (move.ts, move.detail, move.broker) == (T0 + 60, "controller 3 → 1 (epoch 2)", 1)
    # what `kinspect watch --jsonl` prints and timeline.jsonl keeps
    assert {k: move.to_json()[k] for k in ("kind", "old", "new", "epoch")} == {
        "kind": "controller_changed", "old": 3, "new": 1, "epoch": 2}


def test_a_long_vacancy_is_told_once_from_its_start_and_the_arrival_apart() -> None:
    """No controller for 8 s (snapshots every second): the vacancy is news once the grace is
    over, stamped when it began; the new controller is its own line later."""
    assert VACANCY_GRACE_MS == 5_000
    snapshots = [zk(3, 1, 0)] + [zk(None, 1, s * 1000) for s in range(1, 9)] \
        + [zk(1, 1, 9000), zk(1, 2, 9010)]
    steps = observed(snapshots)
    told = [(i, e.ts, e.detail, e.severity, e.fields) for i, s in enumerate(steps) for e in s]
    assert told == [
        (6, T0 + 1000, "controller 3 → none (epoch 1)", "error",
         {"old": 3, "new": None, "epoch": 1}),
        (10, T0 + 9010, "controller none → 1 (epoch 2)", "warn",
         {"old": None, "new": 1, "epoch": 2})]


def test_a_controller_back_within_the_grace_is_no_event() -> None:
    """The znode read missing for a moment and back, same controller, same epoch: nothing
    happened to the cluster."""
    assert observed([zk(3, 1, 0), zk(None, 1, 500), zk(3, 1, 1000), zk(3, 1, 9000)]) \
        == [[], [], [], []]


def test_a_new_controller_whose_epoch_never_moves_is_told_after_the_grace() -> None:
    steps = observed([zk(3, 1, 0), zk(1, 1, 100), zk(1, 1, 2000), zk(1, 1, 5200)])
    assert [[e.detail for e in s] for s in steps] == [[], [], [], ["controller 3 → 1 (epoch 1)"]]
    assert steps[3][0].ts == T0 + 100  # when it was first seen


def test_a_re_election_says_so() -> None:
    steps = observed([zk(3, 1, 0), zk(None, 1, 10), zk(3, 2, 20)])
    assert [e.detail for e in steps[2]] == ["controller 3 re-elected (epoch 2)"]


def test_a_kraft_election_through_an_unanswered_quorum_is_one_event() -> None:
    """The quorum leader dies: DescribeQuorum goes unanswered for two polls, then 102 leads at
    epoch 8. One line, KRaft's words."""
    silent = kraft_view(answer=None, error="timed out")
    snapshots = [kraft_snapshot(taken_at=T0), kraft_snapshot(silent, taken_at=T0 + 1000),
                 kraft_snapshot(silent, taken_at=T0 + 2000),
                 kraft_snapshot(kraft_view(answer=quorum(102, 8)), taken_at=T0 + 3000)]
    assert snapshots[1].controller.id is None
    steps = observed(snapshots)
    assert [[(e.detail, e.fields) for e in s] for s in steps] == [[], [], [], [
        ("quorum leader 101 → 102 (epoch 8)", {"old": 101, "new": 102, "epoch": 8})]]


def test_two_snapshots_alone_tell_any_change_at_once() -> None:
    """Without a ControllerMoves kept across calls, the pair is all there is: a vacancy is told
    at once (a one-off diff cannot wait for what comes next)."""
    gone = diff(zk(3, 1, 0), zk(None, 1, 20))
    assert [(e.kind, e.detail, e.fields) for e in gone] == [
        (EventKind.CONTROLLER_CHANGED, "controller 3 → none (epoch 1)",
         {"old": 3, "new": None, "epoch": 1})]
    assert [e.detail for e in diff(zk(3, 1, 0), zk(1, 2, 20))] == ["controller 3 → 1 (epoch 2)"]
    assert diff(zk(3, 1, 0), zk(3, 1, 20)) == []


def test_a_kraft_leader_after_a_long_leaderless_epoch_is_told_at_once() -> None:
    """Candidates bump the epoch before a leader wins at that same epoch: a long leaderless
    spell (told) and then the leader at the epoch already seen is the arrival, not a wait."""
    leaderless = kraft_view(answer=quorum(None, 8))
    snapshots = [kraft_snapshot(taken_at=T0)] + [
        kraft_snapshot(leaderless, taken_at=T0 + s * 1000) for s in range(1, 8)] + [
        kraft_snapshot(kraft_view(answer=quorum(102, 8)), taken_at=T0 + 8000)]
    told = [(i, e.detail) for i, s in enumerate(observed(snapshots)) for e in s]
    assert told == [(6, "quorum leader 101 → none (epoch 8)"),
                    (8, "quorum leader none → 102 (epoch 8)")]
