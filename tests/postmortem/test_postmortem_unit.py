"""Post-mortem pieces that need no Spark: inputs, broker log lines, timeline, report text, CLI errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.model.events import EventKind, LogKind, Source, TimelineEvent
from kinspect.postmortem.evidence import brokerlogs
from kinspect.postmortem.evidence.inputs import load_inputs, read_jsonl, read_timeline, run_window
from kinspect.postmortem.run import _notes as run_notes
from kinspect.postmortem.story import report as rep
from kinspect.postmortem.story import timeline
from kinspect.postmortem.story.values import Report
from tests.helpers.rundirs import T0, clean_run, log_stamp, scenario_a

STAMP = "[2026-11-23 10:01:26,123]"


def test_log_timestamps_are_local_time() -> None:
    event = brokerlogs.parse_line(f"{log_stamp(T0 + 42)} INFO [Controller id=3] 3 successfully "
                                  "elected as the controller. Epoch incremented to 2 and epoch zk "
                                  "version is now 2 (kafka.controller.KafkaController)", "kafka3")
    assert event is not None and event.ts == T0 + 42
    assert event.kind == "log_controller_elected" and event.broker == 3 and event.epoch == 2


@pytest.mark.parametrize(("line", "expected"), [
    ("INFO [Partition test1-0 broker=2] Shrinking ISR from 1,2,3 to 2. Leader: (highWatermark: 34669, "
     "endOffset: 66453). Out of sync replicas: (brokerId: 1, endOffset: 34669) (kafka.cluster.Partition)",
     {"kind": "log_isr_shrink", "partition": "test1-0", "broker": 2, "old_isr": [1, 2, 3], "new_isr": [2]}),
    ("INFO [Partition test1-0 broker=3] Expanding ISR from 3 to 3,2 (kafka.cluster.Partition)",
     {"kind": "log_isr_expand", "broker": 3, "new_isr": [3, 2]}),
    ("INFO [Broker id=3] Leader test1-0 with topic id Some(Rn5-q_1) starts at leader epoch 5 from "
     "offset 34669 with partition epoch 9, high watermark 34669, ISR [3,1], adding replicas [] and "
     "removing replicas [] . Previous leader epoch was 4. (state.change.logger)",
     {"kind": "log_leader_start", "partition": "test1-0", "broker": 3, "epoch": 5, "offset": 34669}),
    ("INFO [Partition test1-0 broker=0] test1-0 starts at Leader Epoch 0 from offset 0. Previous "
     "Leader Epoch was: -1 (kafka.cluster.Partition)",
     {"kind": "log_leader_start", "partition": "test1-0", "broker": 0, "epoch": 0}),
    ("INFO [Broker id=2] Follower test1-0 starts at leader epoch 5 from offset 66453 with partition "
     "epoch 9 and high watermark 34669. Current leader is 3. Previous leader epoch was 4. "
     "(state.change.logger)",
     {"kind": "log_follower_start", "broker": 2, "epoch": 5, "leader": 3}),
    ("INFO [ReplicaFetcher replicaId=2, leaderId=3, fetcherId=0] Truncating partition test1-0 with "
     "TruncationState(offset=34669, completed=true) due to leader epoch and offset "
     "EpochEndOffset(errorCode=0, partition=0, leaderEpoch=5, endOffset=34669) "
     "(kafka.server.ReplicaFetcherThread)",
     {"kind": "log_truncate", "partition": "test1-0", "broker": 2, "offset": 34669}),
    ("INFO [UnifiedLog partition=test1-0, dir=/data/kafka2] Truncating to offset 34669 "
     "(kafka.log.UnifiedLog$)", {"kind": "log_truncate", "partition": "test1-0", "offset": 34669}),
    ("INFO [Controller id=1 epoch=2] Changed partition test1-0 from OnlinePartition to "
     "OnlinePartition with state LeaderAndIsr(leader=3, leaderEpoch=5, isrWithBrokerEpoch=List(), "
     "leaderRecoveryState=RECOVERED, partitionEpoch=9) (state.change.logger)",
     {"kind": "log_leader_and_isr", "partition": "test1-0", "broker": 3, "epoch": 5}),
    ("WARN Unable to reconnect to ZooKeeper service, session 0x100004a1b2c0002 has expired "
     "(org.apache.zookeeper.ClientCnxn)", {"kind": "log_zk_expired", "broker": 2}),
    ("INFO Registered broker 2 at path /brokers/ids/2 with addresses: PLAINTEXT://x:9092 "
     "(kafka.zk.KafkaZkClient)", {"kind": "log_broker_registered", "broker": 2}),
    # KRaft 3.9, as a lab's ctl1 and kafka2 logged them
    ("INFO [QuorumController id=101] Becoming the active controller at epoch 1, next write "
     "offset 1. (org.apache.kafka.controller.QuorumController)",
     {"kind": "log_controller_elected", "broker": 101, "epoch": 1}),
    ("INFO [QuorumController id=101] Fencing broker 2 because its session has timed out. "
     "(org.apache.kafka.controller.ReplicationControlManager)",
     {"kind": "log_broker_fenced", "broker": 2,
      "detail": "controller fenced broker 2 (session has timed out)"}),
    ("INFO [QuorumController id=101] The request from broker 2 to unfence has been granted "
     "because it has caught up with the offset of its register broker record 11. "
     "(org.apache.kafka.controller.BrokerHeartbeatManager)",
     {"kind": "log_broker_unfenced", "broker": 2}),
    ("DEBUG [QuorumController id=101] partition change for test1-0 with topic ID oEpE4W7fQE2: "
     "leader: 2 -> 3, leaderEpoch: 0 -> 1, partitionEpoch: 0 -> 1 "
     "(org.apache.kafka.controller.ReplicationControlManager)",
     {"kind": "log_leader_and_isr", "partition": "test1-0", "broker": 3, "epoch": 1}),
    ("INFO [QuorumController id=1] Fencing broker 1 at epoch 11 because its session has timed "
     "out. (org.apache.kafka.controller.ReplicationControlManager)",
     {"kind": "log_broker_fenced", "broker": 1}),
    ("INFO [BrokerLifecycleManager id=2] Unable to send a heartbeat because the RPC got timed "
     "out before it could be sent. (kafka.server.BrokerLifecycleManager)",
     {"kind": "log_heartbeat_failed", "broker": 2}),
])
def test_kafka_log_lines(line: str, expected: dict[str, object]) -> None:
    event = brokerlogs.parse_line(f"{STAMP} {line}", "kafka2")
    assert event is not None
    got = {k: getattr(event, k) for k in expected}
    assert {k: list(v) if isinstance(v, tuple) else v for k, v in got.items()} == expected


@pytest.mark.parametrize("line", [
    f"{STAMP} INFO [UnifiedLog partition=test1-0, dir=/d] Truncating to 5 has no effect as the "
    "largest offset in the log is 4 (kafka.log.UnifiedLog)",
    f"{STAMP} INFO [KafkaServer id=1] started (kafka.server.KafkaServer)",
    "\tat kafka.cluster.Partition.makeLeader(Partition.scala:1)",
    "",
])
def test_irrelevant_lines_are_skipped(line: str) -> None:
    assert brokerlogs.parse_line(line, "kafka1") is None


def test_other_topics_and_repeated_zk_lines_are_dropped() -> None:
    zk = "WARN Unable to reconnect to ZooKeeper service, session 0x1 has expired"
    lines = [f"{log_stamp(T0 + i * 1000)} {zk}" for i in range(8)] + [
        f"{log_stamp(T0)} INFO [Partition test10-0 broker=1] Shrinking ISR from 1,2 to 1.",
        f"{log_stamp(T0)} INFO [Partition test1-0 broker=1] Shrinking ISR from 1,2 to 1."]
    events = brokerlogs.parse_lines(lines, "kafka1", "test1")
    assert [e.kind for e in events] == ["log_zk_expired", "log_zk_expired", "log_isr_shrink"]
    assert events[2].partition == "test1-0"


def test_torn_jsonl_line_is_skipped_and_said_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "timeline.jsonl"
    path.write_text('{"ts": 1, "kind": "a"}\nnot json\n{"ts": 2, "kind": "b"}\n["ts"]\n'
                    '{"ts": 3, "ki')
    lines = read_jsonl(path)
    assert lines is not None
    assert [(n, e["kind"]) for n, e in lines.entries] == [(1, "a"), (3, "b")]
    assert lines.skipped == (
        "timeline.jsonl: 2 lines skipped, not JSON (a torn or garbled line): lines 2, 5",
        "timeline.jsonl: 1 line skipped, not a JSON object with a numeric ts: line 4")
    assert read_jsonl(tmp_path / "absent.jsonl") is None


def test_timeline_lines_this_version_cannot_read_are_counted_not_dropped(tmp_path: Path) -> None:
    """Unknown kinds (a newer observer's) and values that are not theirs: skipped, each reason
    said once with how many lines and which; the rest of the timeline is read."""
    known = {"ts": 5, "kind": "leader_changed", "partition": "t-0", "old": 1, "new": 2,
             "epoch": 4, "severity": "warn", "detail": "leader 1 → 2 (epoch 4)"}
    rows = [known, {"ts": 6, "kind": "quorum_wobbled"}, {"ts": 7, "kind": "quorum_wobbled"},
            {**known, "ts": 8, "severity": "dire"}, *[{"ts": 9 + i, "kind": "x"} for i in range(6)]]
    path = tmp_path / "timeline.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{torn\n")
    read = read_timeline(path)
    assert read is not None
    assert [(e.ts, e.kind, e.old, e.new) for e in read.events] == [(5, "leader_changed", 1, 2)]
    assert read.skipped == (
        "timeline.jsonl: 1 line skipped, not JSON (a torn or garbled line): line 11",
        "timeline.jsonl: 2 lines skipped, of kind 'quorum_wobbled', unknown to this version: "
        "lines 2, 3",
        "timeline.jsonl: 1 line skipped, with a value this version cannot read ('dire' is not a "
        "valid Severity): line 4",
        "timeline.jsonl: 6 lines skipped, of kind 'x', unknown to this version: lines 5, 6, 7, "
        "8, 9 and 1 more")


def test_skipped_evidence_reaches_the_reports_notes(tmp_path: Path) -> None:
    run = scenario_a(tmp_path / "run")
    path = run / "timeline.jsonl"
    kept = path.read_text().splitlines()
    path.write_text("\n".join([*kept, '{"ts": 1700000001000, "kind": "from_the_future"}',
                               '{"ts": 17']))
    inputs = load_inputs(run)
    assert len(kept) == 6 and kept[-1] == '{"ts": 17000000'  # run A's own torn last line
    assert inputs.unread == [
        "timeline.jsonl: 2 lines skipped, not JSON (a torn or garbled line): lines 6, 8",
        "timeline.jsonl: 1 line skipped, of kind 'from_the_future', unknown to this version: "
        "line 7"]
    assert inputs.timeline is not None and len(inputs.timeline) == 5
    assert set(inputs.unread) <= set(run_notes(inputs))


def test_inputs_from_footers_only(tmp_path: Path) -> None:
    inputs = load_inputs(scenario_a(tmp_path / "run"))
    assert inputs.topic == "t" and inputs.acks == "1"
    assert {p: (m.sent_upto, m.rows, m.max_seq) for p, m in inputs.producers.items()} == {
        0: (19, 20, 19), 1: (14, 11, 12), 2: (7, 5, 4)}
    assert inputs.final_log_partitions == [0, 1] and inputs.final_log_rows == 29
    assert run_window(inputs) == (T0, T0 + 5000)
    assert inputs.timeline is not None and len(inputs.timeline) == 5  # the torn line is gone
    assert list(inputs.broker_logs) == ["kafka3"]


def test_timeline_epochs_and_windows(tmp_path: Path) -> None:
    inputs = load_inputs(scenario_a(tmp_path / "run"))
    logs = brokerlogs.read_broker_logs(inputs.broker_logs, "t")
    fault = timeline.main_fault(inputs.faults, T0, T0 + 5000)
    assert fault is not None and fault.ts == T0 + 98  # not the one an hour earlier
    events = timeline.merge(inputs.timeline, inputs.faults, logs, "t", T0 - 60_000, T0 + 600_000)
    assert all(e.partition in {None, "t-0", "t-1", "t-2"} for e in events)
    assert [e.ts for e in events] == sorted(e.ts for e in events)
    leaders = timeline.epoch_leaders(events)
    assert {k: v[0] for k, v in leaders.items()} == {("t-0", 1): 1, ("t-0", 2): 2, ("t-1", 4): 2,
                                                      ("t-2", 7): 3}
    assert [w.to_json() for w in timeline.no_leader_windows(events, None)] == [
        {"partition": "t-1", "start": T0 + 200, "end": T0 + 1200, "ms": 1000, "reason": "no leader"}]
    entries, more = timeline.report_entries(events, fault.ts, cap=3)
    assert len(entries) == 3 and more == len(events) - 3
    assert entries[0]["delta_ms"] == entries[0]["ts"] - fault.ts


def test_broker_log_beats_observer_for_epoch_owner() -> None:
    events = [
        TimelineEvent(5, EventKind.LEADER_CHANGED, "", "t-0", new=1, epoch=4),
        TimelineEvent(9, LogKind.LEADER_START, "", "t-0", 2, epoch=4, source=Source.BROKER_LOG),
    ]
    assert timeline.epoch_leaders(events) == {("t-0", 4): (2, 5)}


def _report(**over: object) -> Report:
    """A report as report.json would give it (an older file's partial rows included)."""
    base: dict[str, object] = {"acks": "1", "acked": 0, "acked_lost": 0, "unacked_present": 0,
                               "duplicates": 0, "duplicate_ids": 0, "reordered": 0,
                               "first_ack_after_fault_ms": None, "topic": "test1", "attribution": []}
    return Report.from_json({**base, **over})


def test_explanation_zero_loss_says_so() -> None:
    text = rep.explain(_report(acked=20000), [], {})
    assert text.startswith("No acknowledged message was lost: all 20,000 acknowledged messages")
    assert "acks=0" not in text


def test_explanation_says_what_acknowledged_means_with_acks_0() -> None:
    assert rep.explain(_report(acks="0", acked=1), [], {}).startswith(
        "No acknowledged message was lost: all 1 acknowledged message is in the final log"
        + rep.ACKS_ZERO_NOTE + ".")
    assert "acks=0" in rep.ACKS_ZERO_NOTE


def test_explanation_names_broker_epoch_and_truncation() -> None:
    attribution = [{"partition": 0, "leader_epoch": 4, "broker": 2, "count": 31784,
                    "first_ack_ts": T0, "last_ack_ts": T0 + 14_000}]
    events = [TimelineEvent(T0 + 500, LogKind.ZK_EXPIRED, "", broker=2),
              TimelineEvent(T0 + 30_000, LogKind.TRUNCATE, "", "test1-0", 2, offset=34669)]
    leaders = {("test1-0", 4): (2, T0 - 9000), ("test1-0", 5): (3, T0 + 100)}
    report = _report(acked=66453, acked_lost=31784, attribution=attribution,
                     fault={"ts": T0 - 100, "action": "partition", "node": "kafka2"})
    text = rep.explain(report, events, leaders)
    assert text.startswith(f"31,784 acknowledged messages were lost: broker 2 acknowledged them at "
                           f"leader epoch 4 between {rep.clock(T0)} and {rep.clock(T0 + 14_000)}")
    # only the broker's own late line: said as when it learned, not when ZooKeeper expired it
    assert (f"broker 2 learned at {rep.clock(T0 + 500)}, on reaching ZooKeeper again, that "
            "ZooKeeper had expired its session") in text
    assert f"had already made broker 3 leader at {rep.clock(T0 + 100)} (epoch 5)" in text
    assert "truncated its log to offset 34,669" in text


def _stage(events: list[TimelineEvent]) -> str:
    """The stage's run: broker 3 acknowledged (epoch 4) from T0 to T0 + 5 s; the controller
    made broker 2 leader at T0 + 6 s (epoch 5); broker 3 came back at T0 + 18 s."""
    attribution = [{"partition": 0, "leader_epoch": 4, "broker": 3, "count": 500,
                    "first_ack_ts": T0, "last_ack_ts": T0 + 5000}]
    report = _report(acked=1000, acked_lost=500, attribution=attribution)
    return rep.explain(report, events, {("test1-0", 4): (3, T0 - 9000),
                                        ("test1-0", 5): (2, T0 + 6000)})


def test_the_brokers_late_expiry_line_is_told_when_it_learned_never_before_the_election(
        ) -> None:
    """Issue 34's paragraph: "it lost ZooKeeper at 20:16:10.5; the controller then made broker
    2 leader at 20:15:58.6". The broker's line is when it learned; it is told after."""
    text = _stage([TimelineEvent(T0 + 18_000, LogKind.ZK_EXPIRED, "", broker=3)])
    assert text.endswith(f"; the controller then made broker 2 leader at {rep.clock(T0 + 6000)} "
                         f"(epoch 5); broker 3 learned at {rep.clock(T0 + 18_000)}, on reaching "
                         "ZooKeeper again, that ZooKeeper had expired its session.")


def test_when_zookeeper_ended_the_session_comes_from_who_saw_it_then() -> None:
    deleted = brokerlogs.parse_line(
        f"{log_stamp(T0 + 5900)} INFO [Controller id=1] Newly added brokers: , deleted brokers: "
        "3, bounced brokers: , all live brokers: 1,2 (kafka.controller.KafkaController)", "kafka1")
    assert deleted is not None and (deleted.kind, deleted.broker) == (LogKind.BROKER_GONE, 3)
    # without the broker's own expiry line, it may have been a clean shutdown: "gone"
    assert f"; broker 3 was gone from ZooKeeper at {rep.clock(T0 + 5900)} (as the controller " \
        f"saw it); the controller then made broker 2 leader" in _stage([deleted])
    learned = TimelineEvent(T0 + 18_000, LogKind.ZK_EXPIRED, "", broker=3)
    observed = TimelineEvent(T0 + 5905, EventKind.BROKER_GONE, "", broker=3)
    text = _stage(timeline.merge([observed], [], [deleted, learned], "test1"))
    assert f"; ZooKeeper expired broker 3's session at {rep.clock(T0 + 5900)} (as the " \
        f"observer and the controller saw it); the controller then made broker 2 leader at " \
        f"{rep.clock(T0 + 6000)} (epoch 5); broker 3 itself learned of it only at " \
        f"{rep.clock(T0 + 18_000)}, when it reached ZooKeeper again." in text


def test_a_controller_line_naming_two_gone_brokers_is_two_events() -> None:
    line = (f"{log_stamp(T0)} INFO [Controller id=1] Newly added brokers: , deleted brokers: 2,3, "
            "bounced brokers: , all live brokers: 1 (kafka.controller.KafkaController)")
    assert [(e.kind, e.broker) for e in brokerlogs.parse_lines([line], "kafka1")] == [
        (LogKind.BROKER_GONE, 2), (LogKind.BROKER_GONE, 3)]
    added = line.replace("Newly added brokers: ", "Newly added brokers: 2").replace(
        "deleted brokers: 2,3", "deleted brokers: ")
    assert brokerlogs.parse_lines([added], "kafka1") == []


def test_explanation_unknown_broker() -> None:
    attribution = [{"partition": 0, "leader_epoch": 7, "broker": None, "count": 3,
                    "first_ack_ts": T0, "last_ack_ts": T0}]
    text = rep.explain(_report(acked=5, acked_lost=3, attribution=attribution), [], {})
    assert "an unknown broker" in text and "Nothing recorded says which broker led epoch 7" in text


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinspect", "postmortem", *args],
                          capture_output=True, text=True, timeout=120)


def _one_line_error(proc: subprocess.CompletedProcess[str], words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kinspect: error:") and words in lines[0], lines
    assert "Traceback" not in proc.stderr


def test_cli_missing_run_dir(tmp_path: Path) -> None:
    _one_line_error(_cli(str(tmp_path / "nope")), "does not exist")


def test_cli_missing_ledger(tmp_path: Path) -> None:
    (tmp_path / "final_log").mkdir()
    _one_line_error(_cli(str(tmp_path)), "ledger/")


def test_cli_missing_final_log(tmp_path: Path) -> None:
    run = clean_run(tmp_path / "run")
    for part in (run / "final_log").iterdir():
        part.unlink()
    _one_line_error(_cli(str(run)), "final_log/ missing: run `kinspect verify --topic t")


def test_cli_malformed_parquet(tmp_path: Path) -> None:
    run = clean_run(tmp_path / "run")
    (run / "ledger" / "p001-000000.parquet").write_bytes(b"PAR1 this is not parquet")
    _one_line_error(_cli(str(run)), "ledger/p001-000000.parquet is not a readable Parquet file")
    run2 = clean_run(tmp_path / "run2")
    (run2 / "final_log" / "part-0000.parquet").write_text("garbage")
    _one_line_error(_cli(str(run2)), "final_log/part-0000.parquet is not a readable Parquet file")


def test_wrong_schema_is_named(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = clean_run(tmp_path / "run")
    pq.write_table(pa.table({"x": [1]}), run / "final_log" / "part-0001.parquet")
    with pytest.raises(KinspectError, match=r"part-0001\.parquet lacks column"):
        load_inputs(run)


def test_refused_sends_are_unknown_when_a_chunk_does_not_say(tmp_path: Path) -> None:
    """A ledger chunk written before refused sends were counted has no kinspect.refused in its
    footer: the run's refused count is unknown, not 0; chunks that say it are added up."""
    import pyarrow.parquet as pq

    run = scenario_a(tmp_path / "run")
    assert load_inputs(run).refused == 0  # every chunk says 0
    chunk = sorted((run / "ledger").glob("p001-*.parquet"))[0]
    table = pq.read_table(chunk)
    told = dict(table.schema.metadata)
    pq.write_table(table.replace_schema_metadata({**told, b"kinspect.refused": b"3"}), chunk)
    assert load_inputs(run).refused == 3
    del told[b"kinspect.refused"]
    pq.write_table(table.replace_schema_metadata(told), chunk)
    assert load_inputs(run).refused is None


def test_a_loss_the_power_cut_dropped_is_blamed_on_the_power_cut() -> None:
    """The filesystem's record, not the leadership history, says why: the lost were all in the
    batches the cut dropped, on every broker at once."""
    attribution = [{"partition": 0, "leader_epoch": 0, "broker": 2, "count": 500,
                    "first_ack_ts": T0, "last_ack_ts": T0 + 5_000}]
    cut = {"nodes": ["kafka1", "kafka2", "kafka3"], "at_ms": T0 + 6_000, "dropped": 520,
           "lost_dropped": 500}
    report = _report(acked=1000, acked_lost=500, attribution=attribution, power_cut=cut,
                     lost_outside_power_cuts=0)
    assert report.power_cut is not None and report.power_cut.lost_dropped == 500
    assert Report.from_json(report.to_json()) == report  # the record round-trips report.json
    text = rep.explain(report, [], {})
    assert text.startswith("500 acknowledged messages were lost: acknowledged from the page "
                           "cache of brokers 1, 2, 3 and never on disk.")
    assert f"The power cut at {rep.clock(T0 + 6_000)} dropped every write" in text
    assert "had not fsynced, on all at once, all of them among the batches the filesystem " \
        "dropped" in text
    one = _report(acked=1000, acked_lost=500, attribution=attribution,
                  power_cut={**cut, "nodes": ["kafka2"]})
    assert rep.explain(one, [], {}).startswith("500 acknowledged messages were lost: "
                                               "acknowledged from the page cache of broker 2 "
                                               "and never on disk.")
    assert "on all at once" not in rep.explain(one, [], {})  # one broker's cut is one's
    # A nemesis's many cuts: each broker named once, the cuts counted with their span.
    many = _report(acked=1000, acked_lost=500, attribution=attribution, power_cut={
        **cut, "nodes": ["kafka2", "kafka3", "kafka2", "kafka1"], "last_ms": T0 + 600_000})
    said = rep.explain(many, [], {})
    assert "the page cache of brokers 1, 2, 3 and never on disk. The 4 power cuts from " \
        f"{rep.clock(T0 + 6_000)} to {rep.clock(T0 + 600_000)} each dropped every write its " \
        "broker had not fsynced, all of them among" in said
    # Without a cut the story is the broker's, and report.json carries no power fields.
    plain = _report(acked=1000, acked_lost=500, attribution=attribution)
    assert rep.explain(plain, [], {}).startswith("500 acknowledged messages were lost: broker 2")
    assert "power_cut" not in plain.to_json() and "lost_outside_power_cuts" not in plain.to_json()
