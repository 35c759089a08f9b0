"""The election timeline tells the truth once: real session expiries only, broker stamps read as
UTC whatever this machine's zone, and one line per fact however many places saw it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kinspect.lab.nodes import JVM_FLAGS
from kinspect.model.events import Source, TimelineEvent
from kinspect.postmortem.evidence import brokerlogs
from kinspect.postmortem.story import timeline

T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC
STAMP = "[2023-11-14 22:13:20,000]"


def stamp(ms: int) -> str:
    """A broker-log stamp T0 + ms, as a UTC JVM writes it (ms < 40 s keeps the minute)."""
    return f"[2023-11-14 22:13:{20 + ms // 1000:02d},{ms % 1000:03d}]"


def log(ms: int, text: str, node: str = "kafka2") -> TimelineEvent:
    event = brokerlogs.parse_line(f"{stamp(ms)} {text}", node)
    assert event is not None, text
    return event


# --- 1. session expiry only from the lines Kafka 3.9 / ZooKeeper 3.8 log when it expired -----

@pytest.mark.parametrize(("node", "line"), [
    ("kafka2", "WARN Client session timed out, have not heard from server in 4002ms for session id "
     "0x100004a1b2c0002 (org.apache.zookeeper.ClientCnxn)"),
    ("kafka2", "WARN Session 0x100004a1b2c0002 for server zk1/198.19.239.10:2181, Closing socket "
     "connection. Attempting reconnect except it is a SessionExpiredException. "
     "(org.apache.zookeeper.ClientCnxn)"),
    ("kafka2", "INFO Pending member m-1 in group g has been removed after session timeout "
     "expiration. (kafka.coordinator.group.GroupCoordinator)"),
    ("kafka2", "INFO [ZooKeeperClient Kafka server] Waiting until connected. "
     "(kafka.zookeeper.ZooKeeperClient)"),
    ("zk1", "INFO Invalid session 0x100004a1b2c0002 for client /198.19.239.12:41234, probably "
     "expired (org.apache.zookeeper.server.ZooKeeperServer)"),
])
def test_reconnect_warnings_are_not_expiry(node: str, line: str) -> None:
    event = brokerlogs.parse_line(f"{STAMP} {line}", node)
    assert event is None or event.kind != "log_zk_expired"


@pytest.mark.parametrize("line", [
    "WARN Unable to reconnect to ZooKeeper service, session 0x100004a1b2c0002 has expired "
    "(org.apache.zookeeper.ClientCnxn)",
    "INFO [ZooKeeperClient Kafka server] Session expired. (kafka.zookeeper.ZooKeeperClient)",
])
def test_real_expiry_lines_count(line: str) -> None:
    event = brokerlogs.parse_line(f"{STAMP} {line}", "kafka2")
    assert event is not None and event.kind == "log_zk_expired" and event.broker == 2
    assert event.ts == T0


SESSION = "0x100004a1b2c0002"
TIMED_OUT = [
    f"WARN Client session timed out, have not heard from server in 4002ms for session id {SESSION} "
    "(org.apache.zookeeper.ClientCnxn)",
    f"WARN Session {SESSION} for server zk1/198.19.239.10:2181, Closing socket connection. "
    "Attempting reconnect except it is a SessionExpiredException. (org.apache.zookeeper.ClientCnxn)",
    "INFO Opening socket connection to server zk1/198.19.239.10:2181. (org.apache.zookeeper.ClientCnxn)",
]


def test_a_reconnect_within_the_session_is_no_expiry() -> None:
    lines = [f"{stamp(i * 1000)} {t}" for i, t in enumerate(TIMED_OUT * 3)] + [
        f"{stamp(9000)} INFO Session establishment complete on server zk1/198.19.239.10:2181, session "
        f"id = {SESSION}, negotiated timeout = 6000 (org.apache.zookeeper.ClientCnxn)"]
    assert [e.kind for e in brokerlogs.parse_lines(lines, "kafka2")] == ["log_zk_session"]


def test_an_expired_session_is_one_expiry_then_a_new_session_and_registration() -> None:
    after = [
        f"WARN Unable to reconnect to ZooKeeper service, session {SESSION} has expired "
        "(org.apache.zookeeper.ClientCnxn)",
        TIMED_OUT[1],
        f"INFO EventThread shut down for session: {SESSION} (org.apache.zookeeper.ClientCnxn)",
        "INFO [ZooKeeperClient Kafka server] Session expired. (kafka.zookeeper.ZooKeeperClient)",
        "INFO [ZooKeeperClient Kafka server] Initializing a new session to zk1:2181. "
        "(kafka.zookeeper.ZooKeeperClient)",
        "INFO Session establishment complete on server zk1/198.19.239.10:2181, session id = "
        "0x100004a1b2c0009, negotiated timeout = 6000 (org.apache.zookeeper.ClientCnxn)",
        "INFO Creating /brokers/ids/2 (is it secure? false) (kafka.zk.KafkaZkClient)",
        "INFO Registered broker 2 at path /brokers/ids/2 with addresses: PLAINTEXT://198.19.239.12:9092, "
        "czxid (broker epoch): 4294967381 (kafka.zk.KafkaZkClient)",
    ]
    lines = [f"{stamp(i * 1000)} {t}" for i, t in enumerate(TIMED_OUT * 4)]
    lines += [f"{stamp(20_000 + i * 10)} {t}" for i, t in enumerate(after)]
    events = brokerlogs.parse_lines(lines, "kafka2")
    assert [e.kind for e in events] == ["log_zk_expired", "log_zk_session", "log_broker_registered"]
    assert events[0].ts == T0 + 20_000 and events[0].broker == 2


# --- 2. broker stamps are UTC, whatever zone this machine is in ------------------------------

@pytest.fixture
def new_york() -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    try:
        assert time.timezone != 0  # the zone really changed
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.mark.usefixtures("new_york")
def test_stamps_are_utc_in_another_zone() -> None:
    assert brokerlogs.parse_ts("2023-11-14 22:13:20", "042") == T0 + 42
    assert log(1500, "INFO [ZooKeeperClient Kafka server] Session expired. "
               "(kafka.zookeeper.ZooKeeperClient)").ts == T0 + 1500


def test_every_lab_jvm_logs_in_utc() -> None:
    assert "-Duser.timezone=UTC" in JVM_FLAGS  # java_command and the docker nodes both use them


# --- 3. one line per fact --------------------------------------------------------------------

CONTROLLER = ("INFO [Controller id=1 epoch=2] Changed partition t-0 from OfflinePartition to "
              "OnlinePartition with state LeaderAndIsr(leader={leader}, leaderEpoch={epoch}, "
              "isrWithBrokerEpoch=List(), leaderRecoveryState=RECOVERED, partitionEpoch=9) "
              "(state.change.logger)")
LEADER = ("INFO [Broker id={broker}] Leader t-0 with topic id Some(Rn5-q_1) starts at leader epoch "
          "{epoch} from offset 34669 with partition epoch 9, high watermark 34669, ISR [3,1], adding "
          "replicas [] and removing replicas [] . Previous leader epoch was 4. (state.change.logger)")
FOLLOWER = ("INFO [Broker id={broker}] Follower t-0 starts at leader epoch {epoch} from offset 66453 "
            "with partition epoch 9 and high watermark 34669. Current leader is {leader}. Previous leader "
            "epoch was 4. (state.change.logger)")


def observed(ms: int, kind: str, **fields: Any) -> TimelineEvent:
    event = TimelineEvent.from_json({"ts": T0 + ms, "kind": kind,
                                     "partition": fields.pop("partition", "t-0"),
                                     "severity": "warn", "detail": kind, **fields})
    assert event is not None
    return event


def election(ms: int, epoch: int, old: int = 1, new: int = 3) -> list[TimelineEvent]:
    """What one election leaves behind: controller line, leader line, follower line, observer."""
    return [log(ms, CONTROLLER.format(leader=new, epoch=epoch), "kafka1"),
            log(ms + 40, LEADER.format(broker=new, epoch=epoch), f"kafka{new}"),
            log(ms + 45, FOLLOWER.format(broker=old, epoch=epoch, leader=new), f"kafka{old}"),
            observed(ms + 800, "leader_changed", broker=new, old=old, new=new, epoch=epoch)]


def merged(events: list[TimelineEvent]) -> list[TimelineEvent]:
    observer = [e for e in events if e.source is Source.OBSERVER]
    logs = [e for e in events if e.source is not Source.OBSERVER]
    return timeline.merge(observer, [], logs, "t", T0 - 60_000, T0 + 600_000)


def test_one_election_seen_three_ways_is_one_line() -> None:
    [entry] = merged(election(100, 5))
    assert list(entry.sources) == ["observer", "controller log", "broker log"]
    assert entry.ts == T0 + 100 and entry.kind == "log_leader_start" and entry.epoch == 5
    assert entry.detail == "t-0: broker 3 leads at epoch 5 from offset 34,669 (was broker 1)"
    assert dict(entry.seen) == {"controller log": T0 + 100, "broker log": T0 + 140, "observer": T0 + 900}
    [row], _ = timeline.report_entries([entry], T0)
    assert row["sources"] == list(entry.sources) and row["delta_ms"] == 100


def test_two_elections_stay_two_lines() -> None:
    events = merged(election(100, 5) + election(8000, 6, old=3, new=2))
    assert [(e.epoch, e.broker, len(e.sources)) for e in events] == [(5, 3, 3), (6, 2, 3)]


def test_a_late_follower_is_its_own_line() -> None:
    """The isolated old leader rejoining as a follower after the heal is news, not an echo."""
    late = log(30_000, FOLLOWER.format(broker=2, epoch=5, leader=3), "kafka2")
    events = merged([*election(100, 5), late])
    assert [e.kind for e in events] == ["log_leader_start", "log_follower_start"]
    assert not events[1].sources


def test_isr_and_controller_sightings_fold() -> None:
    shrink = log(100, "INFO [Partition t-0 broker=3] Shrinking ISR from 1,2,3 to 3. Leader: "
                 "(highWatermark: 5, endOffset: 9). (kafka.cluster.Partition)", "kafka3")
    elected = log(50, "INFO [Controller id=3] 3 successfully elected as the controller. Epoch "
                  "incremented to 2 and epoch zk version is now 2 (kafka.controller.KafkaController)",
                  "kafka3")
    events = merged([
        shrink, elected,
        observed(900, "isr_shrank", broker=1, replica=1, isr=[3]),
        observed(900, "isr_shrank", broker=2, replica=2, isr=[3]),
        observed(900, "controller_changed", partition=None, broker=3, old=1, new=3, epoch=2),
        observed(9000, "isr_expanded", broker=1, replica=1, isr=[3, 1]),
    ])
    assert [(e.kind, list(e.sources) or None) for e in events] == [
        ("controller_changed", ["observer", "controller log"]),
        ("log_isr_shrink", ["observer", "broker log"]),
        ("isr_expanded", None)]
    assert events[0].ts == T0 + 50 and events[1].ts == T0 + 100


def test_epoch_leaders_prefers_the_brokers_own_line_after_folding() -> None:
    sightings = [log(100, CONTROLLER.format(leader=2, epoch=5), "kafka1"),
                 log(200, LEADER.format(broker=3, epoch=5), "kafka3"),
                 observed(900, "leader_changed", broker=1, old=2, new=1, epoch=5)]
    assert timeline.epoch_leaders(merged(sightings)) == {("t-0", 5): (3, T0 + 100)}
    assert timeline.epoch_leaders(merged([sightings[0], sightings[2]])) == {("t-0", 5): (2, T0 + 100)}
    assert timeline.epoch_leaders(merged(sightings[2:])) == {("t-0", 5): (1, T0 + 900)}


def test_no_leader_window_survives_folding() -> None:
    offline = observed(0, "partition_offline", broker=1, old=1)
    events = merged([offline, *election(1000, 5)])
    assert [w.to_json() for w in timeline.no_leader_windows(events, None)] == [
        {"partition": "t-0", "start": T0, "end": T0 + 1800, "ms": 1800, "reason": "no leader"}]
    logs_only = merged([offline, *election(1000, 5)[:3]])  # the observer missed the election
    assert timeline.no_leader_windows(logs_only, None)[0].end == T0 + 1000


def test_only_the_runs_window() -> None:
    events = merged([*election(100, 5), observed(-70_000, "leader_changed", old=3, new=1, epoch=4)])
    assert all(e.ts >= T0 - 60_000 for e in events) and len(events) == 1


def test_an_event_reads_back_from_its_report_entry() -> None:
    """The TUI draws the lanes from report.json: an entry must give back the event's facts."""
    [entry] = merged(election(100, 5))
    back = TimelineEvent.from_json(entry.to_json())
    assert back == entry  # every field a report entry keeps
    assert TimelineEvent.from_json({"ts": 1, "kind": "no_such_kind"}) is None


# --- 4. one controller move is one line; ZooKeeper's expiry by ZooKeeper's clock -------------

ELECTED = ("INFO [Controller id=1] 1 successfully elected as the controller. Epoch incremented to 2 "
           "and epoch zk version is now 2 (kafka.controller.KafkaController)")


def test_a_controller_move_recorded_in_steps_is_one_timeline_line() -> None:
    """A timeline.jsonl written before the observer told each move once holds the move as
    three lines; with the new controller's own line they are one entry, with both sources."""
    steps = [observed(900, "controller_changed", partition=None, broker=None, old=3, new=None,
                      epoch=1),
             observed(905, "controller_changed", partition=None, broker=1, old=None, new=1,
                      epoch=1),
             observed(910, "controller_changed", partition=None, broker=1, old=1, new=1, epoch=2)]
    [entry] = merged([*steps, log(903, ELECTED, "kafka1")])
    assert (entry.detail, entry.old, entry.new, entry.epoch) == ("controller 3 → 1 (epoch 2)", 3, 1, 2)
    assert list(entry.sources) == ["observer", "controller log"] and entry.ts == T0 + 903
    assert {k: entry.to_json()[k] for k in ("kind", "old", "new", "epoch")} == {
        "kind": "controller_changed", "old": 3, "new": 1, "epoch": 2}


def test_a_long_vacancy_in_a_recorded_timeline_stays_its_own_line() -> None:
    steps = [observed(0, "controller_changed", partition=None, old=3, new=None, epoch=1),
             observed(30_000, "controller_changed", partition=None, broker=1, old=None, new=1,
                      epoch=1),
             observed(30_010, "controller_changed", partition=None, broker=1, old=1, new=1,
                      epoch=2)]
    assert [(e.ts - T0, e.detail) for e in merged(steps)] == [
        (0, "controller 3 → none (epoch 1)"), (30_010, "controller none → 1 (epoch 2)")]


OWN_SESSION = ("INFO Session establishment complete on server zk1/198.19.239.10:2181, session id = "
               "0x100004a1b2c0003, negotiated timeout = 6000 (org.apache.zookeeper.ClientCnxn)")


def test_zookeepers_own_expiry_is_named_by_broker_and_folds_with_the_sightings(
        tmp_path: Any) -> None:
    """ZooKeeper's log says when it expired a session, by its clock; broker 3's own line names
    the session, so it is broker 3's. The controller's "deleted brokers" line and the observer
    saw the same moment; broker 3 learns it 10 s later, on reconnecting."""
    logs = {"zk1": ["INFO Expiring session 0x100004a1b2c0003, timeout of 6000ms exceeded "
                    "(org.apache.zookeeper.server.ZooKeeperServer)",
                    "INFO Expiring session 0x100004a1b2c0007, timeout of 6000ms exceeded "
                    "(org.apache.zookeeper.server.ZooKeeperServer)"],  # the observer's own
            "kafka2": ["INFO [Controller id=2] Newly added brokers: , deleted brokers: 3, bounced "
                       "brokers: , all live brokers: 1,2 (kafka.controller.KafkaController)"],
            "kafka3": [OWN_SESSION,
                       "WARN Unable to reconnect to ZooKeeper service, session 0x100004a1b2c0003 "
                       "has expired (org.apache.zookeeper.ClientCnxn)"]}
    at = {"zk1": [1000, 1000], "kafka2": [1012], "kafka3": [0, 11_000]}
    files = {}
    for node, lines in logs.items():
        (tmp_path / node).mkdir()
        path = tmp_path / node / ("zookeeper.log" if node == "zk1" else "server.log")
        path.write_text("".join(f"{stamp(ms)} {line}\n"
                                for ms, line in zip(at[node], lines, strict=True)))
        files[node] = [path]
    parsed = brokerlogs.read_broker_logs(files, "t")
    gone = observed(1008, "broker_gone", partition=None, broker=3)
    events = timeline.merge([gone], [], parsed, "t", T0 - 60_000, T0 + 600_000)
    said = [(e.ts - T0, e.detail, list(e.sources)) for e in events if e.broker == 3
            and e.kind != "log_zk_session"]
    assert said == [
        (1000, "ZooKeeper expired broker 3's session 0x100004a1b2c0003 (timeout 6,000 ms)",
         ["zookeeper log", "observer", "controller log"]),
        (11_000, "broker 3 learned its ZooKeeper session had expired (on reaching ZooKeeper "
                 "again)", [])]
