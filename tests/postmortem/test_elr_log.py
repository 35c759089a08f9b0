"""The KRaft controller's ELR decisions, read from its own log lines (as Kafka 4.4 wrote them
in a lab: every voter logs each record it replays), into the timeline and the metrics."""

from __future__ import annotations

from kinspect.model.events import Election, LogKind
from kinspect.postmortem.evidence import brokerlogs
from kinspect.postmortem.story.timeline import fold
from kinspect.postmortem.story.values import Report
from kinspect.scenarios.scenario_run import elections

CHANGE = ("DEBUG [QuorumController id={node}] partition change for test1-0 with topic ID "
          "w_aiUnw1TNeiwHFcrdXPGQ: {diff} (org.apache.kafka.controller.ReplicationControlManager)")
DIFFS = (  # a follower stops, the other stops (ELR), the leader dies, the ELR replica returns
    "isr: [2, 3, 1] -> [2, 1], partitionEpoch: 0 -> 1",
    "isr: [2, 1] -> [2], elr: [] -> [1], partitionEpoch: 1 -> 2",
    "isr: [2] -> [], leader: 2 -> -1, leaderEpoch: 0 -> 1, elr: [1] -> [1, 2], lastKnownElr: "
    "[] -> [2], partitionEpoch: 2 -> 3",
    "isr: [] -> [1], leader: -1 -> 1, leaderEpoch: 1 -> 2, elr: [1, 2] -> [2], lastKnownElr: "
    "[2] -> [], partitionEpoch: 3 -> 4",
)


def lines(node: int, first_second: int = 10) -> list[str]:
    return [f"[2026-11-27 11:30:{first_second + i:02d},700] "
            + CHANGE.format(node=node, diff=diff) for i, diff in enumerate(DIFFS)]


def test_each_decision_and_its_elr() -> None:
    events = [e for line in lines(102) for e in brokerlogs.parse_events(line, "ctl2")]
    assert [(e.kind, e.elr, e.broker) for e in events] == [
        (LogKind.ELR_CHANGED, (1,), None),
        (LogKind.LEADER_AND_ISR, None, None), (LogKind.ELR_CHANGED, (1, 2), None),
        (LogKind.LEADER_AND_ISR, None, 1), (LogKind.ELR_CHANGED, (2,), None)]
    elected = events[3]
    assert elected.election is Election.ELR and elected.epoch == 2
    assert "from the eligible leader replicas" in elected.detail
    assert events[0].detail == ("controller: eligible leader replicas [] → [1] "
                                "(ISR [2, 1] → [2])")
    assert events[1].election is None and events[1].leader == -1  # leaderless: no how


def test_an_unclean_election_is_the_lines_own_word() -> None:
    """As Kafka 4.4 logged unclean-election's: the recovery state sits between the leader and
    its epoch (the first pattern missed the line, and with it the election)."""
    line = ("[2026-11-27 12:13:15,048] INFO [QuorumController id=101] UNCLEAN partition change "
            "for test1-0 with topic ID _emw0pIAQlC6wnpLjY_Y3g: isr: [1] -> [2], leader: 1 -> 2, "
            "leaderRecoveryState: RECOVERED -> RECOVERING, leaderEpoch: 0 -> 1, partitionEpoch: "
            "2 -> 3 (org.apache.kafka.controller.ReplicationControlManager)")
    event = brokerlogs.parse_line(line, "ctl1")
    assert event is not None and event.election is Election.UNCLEAN
    assert (event.broker, event.epoch) == (2, 1)
    assert "was 1; an unclean election" in event.detail


def test_three_voters_logging_one_record_are_one_entry_and_one_count() -> None:
    events = [e for node, name in ((101, "ctl1"), (102, "ctl2"), (103, "ctl3"))
              for line in lines(node) for e in brokerlogs.parse_events(line, name)]
    folded = fold(events)
    assert len(folded) == 5  # three ELR changes, one leaderless decision, one election
    elected = [e for e in folded if e.kind is LogKind.LEADER_AND_ISR and e.broker == 1]
    assert len(elected) == 1 and elected[0].election is Election.ELR
    assert "from the eligible leader replicas (ELR)" in elected[0].detail
    report = Report(timeline=[e.to_json() for e in folded])
    assert elections(report) == {"elr_elections": 1, "unclean_elections": 0}


def test_a_leaderless_decision_logged_by_every_voter_is_one_line_saying_so() -> None:
    events = [e for node, name in ((101, "ctl1"), (102, "ctl2"))
              for e in brokerlogs.parse_events(lines(node)[2], name)]
    leaderless = [e for e in fold(events) if e.kind is LogKind.LEADER_AND_ISR]
    assert len(leaderless) == 1
    assert leaderless[0].detail == "test1-0: no leader at epoch 1 (the controller's decision)"


def test_the_last_leader_back_after_a_kill_is_told_apart_but_counted_as_kafka_counts_it() -> None:
    """4.4, slow-network: the killed leader re-registers (an unclean shutdown: out of the ELR)
    and is elected as the last known leader, which Kafka logs UNCLEAN."""
    cleared = ("[2026-11-27 12:48:01,120] DEBUG [QuorumController id=101] partition change for "
               "test1-0 with topic ID o: elr: [3] -> [], partitionEpoch: 2 -> 3 "
               "(org.apache.kafka.controller.ReplicationControlManager)")
    back = ("[2026-11-27 12:48:02,014] INFO [QuorumController id=101] UNCLEAN partition change "
            "for test1-0 with topic ID o: isr: [] -> [3], leader: -1 -> 3, leaderRecoveryState: "
            "RECOVERED -> RECOVERING, leaderEpoch: 1 -> 2, lastKnownElr: [3] -> [], "
            "partitionEpoch: 3 -> 4 (org.apache.kafka.controller.ReplicationControlManager)")
    events = [e for line in (cleared, back) for e in brokerlogs.parse_events(line, "ctl1")]
    assert [e.kind for e in events] == [LogKind.ELR_CHANGED, LogKind.LEADER_AND_ISR]
    assert events[1].election is Election.LAST_LEADER
    assert "the last leader, back after an unclean shutdown" in events[1].detail
    report = Report(timeline=[e.to_json() for e in fold(events)])
    assert elections(report) == {"elr_elections": 0, "unclean_elections": 1}
