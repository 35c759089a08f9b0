"""Hand-made run dirs whose post-mortem answers are known exactly (see SCENARIO_A)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kinspect.load.ack_ledger import LedgerWriter
from kinspect.load.verify import FINAL_LOG_SCHEMA, PreviousSeqs

T0 = 1_700_000_000_000
TOPIC = "t"


def log_stamp(ts: int) -> str:
    """A broker log timestamp (UTC, as the lab's JVMs log) for epoch ms."""
    moment = datetime.fromtimestamp(ts / 1000, tz=UTC)
    return f"[{moment:%Y-%m-%d %H:%M:%S},{ts % 1000:03d}]"


def write_final_log(run_dir: Path, partition: int, rows: list[tuple[int | None, int | None, int]],
                    run: str | None = None, ordered: bool = True) -> None:
    """rows: (producer, seq, leader_epoch) in offset order; producer None = a foreign record.
    `run` None writes ids as kinspect did before run ids (`<producer>-<seq>`); `ordered` adds
    verify's prev_seq column (False: a final log written before it had one)."""
    out = run_dir / "final_log"
    out.mkdir(parents=True, exist_ok=True)
    n = len(rows)
    table = pa.table({
        "topic": [TOPIC] * n, "partition": pa.array([partition] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()),
        "id": [(f"{run}-" if run else "") + f"{p}-{s}" if p is not None else None for p, s, _ in rows],
        "producer": pa.array([p for p, _, _ in rows], pa.int32()),
        "seq": pa.array([s if p is not None else None for p, s, _ in rows], pa.int64()),
        "leader_epoch": pa.array([e for _, _, e in rows], pa.int32()),
        "timestamp": pa.array([T0 + i for i in range(n)], pa.int64()),
        "run": pa.array([run if p is not None else None for p, _, _ in rows], pa.string()),
    }, schema=FINAL_LOG_SCHEMA)
    if ordered:
        table = table.append_column("prev_seq", pa.chunked_array(
            [PreviousSeqs().of(b) for b in table.to_batches()] or [pa.array([], pa.int64())]))
    pq.write_table(table, out / f"part-{partition:04d}.parquet")


def _jsonl(path: Path, entries: list[dict[str, Any]], torn: str = "") -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + torn)


def scenario_a(run_dir: Path) -> Path:
    """Three producers, partitions 0-2; partition 2 has no final log. Answers: EXPECTED_A."""
    (run_dir / "settings.json").parent.mkdir(parents=True, exist_ok=True)
    (run_dir / "settings.json").write_text(json.dumps({"topic": TOPIC, "acks": "1"}))
    # Producer 0, partition 0, two chunks: 0-14 acked (epoch 1 to seq 9, then 2), 15 failed with
    # a definite error, 16 timed out (indefinite), 17-19 recorded as unknown by the worker.
    p0 = LedgerWriter(run_dir, 0, TOPIC, "1")
    for seq in range(20):
        p0.note_sent(seq, T0 + seq * 10)
        send, ack = T0 + seq * 10, T0 + seq * 10 + 5
        if seq < 15:
            p0.record(seq, 0, seq, 1 if seq < 10 else 2, "acked", None, send, ack)
        elif seq < 17:
            error = "NOT_ENOUGH_REPLICAS" if seq == 15 else "_MSG_TIMED_OUT"
            p0.record(seq, 0, -1, None, "failed", error, send, ack)
        else:
            p0.record(seq, -1, -1, None, "unknown", None, send, None)
        if seq == 9:
            p0.flush()
    p0.flush()
    # Producer 1, partition 1: 0-9 and 12 acked (epoch 3); sent up to 14, so 10, 11, 13, 14 are
    # unknown and must be synthesized from the metadata (not a tail: anti-join path).
    p1 = LedgerWriter(run_dir, 1, TOPIC, "1")
    p1.note_sent(14, T0)
    for seq in [*range(10), 12]:
        ack = T0 + 5000 if seq == 12 else T0 + seq * 10 + 6
        p1.record(seq, 1, seq, 3, "acked", None, T0 + seq * 10 + 1, ack)
    p1.flush()
    # Producer 2, partition 2: 0-4 acked at epoch 7, sent up to 7: 5-7 unknown (tail fast path).
    p2 = LedgerWriter(run_dir, 2, TOPIC, "1")
    p2.note_sent(7, T0)
    for seq in range(5):
        p2.record(seq, 2, seq, 7, "acked", None, T0 + seq * 10 + 2, T0 + seq * 10 + 7)
    p2.flush()
    # Final log. Partition 0: 5, 9, 10, 13 lost; 6 after 7 (reordered); 8 twice; 15 (failed,
    # definitely), 16 (timed out) and 18 (unknown) present anyway.
    write_final_log(run_dir, 0, [(0, s, 1) for s in (0, 1, 2, 3, 4, 7, 6, 8, 8)]
                    + [(0, s, 2) for s in (11, 12, 14, 15, 16, 18)])
    # Partition 1: everything of producer 1, plus 13 (synthesized unknown), a foreign record and
    # 1-20, which the ledger never heard of.
    write_final_log(run_dir, 1, [(1, s, 3) for s in (*range(10), 12, 13)]
                    + [(None, None, 3), (1, 20, 4)])
    _jsonl(run_dir / "timeline.jsonl", [
        {"ts": T0 - 1000, "kind": "partition_online", "partition": "t-0", "broker": 1,
         "severity": "info", "detail": "t-0 online: leader 1 (epoch 1)", "new": 1, "epoch": 1},
        {"ts": T0 + 99, "kind": "leader_changed", "partition": "t-0", "broker": 2, "severity": "warn",
         "detail": "leader 1 → 2 (epoch 2)", "old": 1, "new": 2, "epoch": 2},
        {"ts": T0 + 200, "kind": "partition_offline", "partition": "t-1", "broker": 1,
         "severity": "error", "detail": "t-1 has no leader (was 1)", "old": 1},
        {"ts": T0 + 1200, "kind": "partition_online", "partition": "t-1", "broker": 2,
         "severity": "info", "detail": "t-1 online: leader 2 (epoch 4)", "new": 2, "epoch": 4},
        {"ts": T0 + 300, "kind": "leader_changed", "partition": "other-0", "broker": 3,
         "severity": "warn", "detail": "another topic", "old": 1, "new": 3, "epoch": 9},
    ], torn='{"ts": 17000000')
    _jsonl(run_dir / "faults.jsonl", [
        {"ts": T0 - 3_600_000, "action": "kill", "node": "kafka2", "groups": None, "detail": "",
         "lab_id": "x"},
        {"ts": T0 + 98, "action": "kill", "node": "kafka1", "groups": None, "detail": "",
         "lab_id": "x"},
    ])
    logs = run_dir / "broker-logs" / "kafka3"
    logs.mkdir(parents=True)
    (logs / "server.log").write_text("\n".join([
        f"{log_stamp(T0 - 500)} INFO [Broker id=3] Leader t-2 with topic id Some(AbC-12_x) starts at "
        "leader epoch 7 from offset 0 with partition epoch 9, high watermark 0, ISR [3], adding "
        "replicas [] and removing replicas []. Previous leader epoch was 6. (state.change.logger)",
        f"{log_stamp(T0 + 50)} INFO [Partition other-0 broker=3] Shrinking ISR from 1,2,3 to 3. "
        "Leader: (highWatermark: 5, endOffset: 9). (kafka.cluster.Partition)",
        "java.lang.RuntimeException: noise", "\tat kafka.Foo(Foo.scala:1)",
        f"{log_stamp(T0 + 600)} INFO [UnifiedLog partition=t-2, dir=/tmp/k] Truncating to offset 0 "
        "(kafka.log.UnifiedLog)", ""]))
    return run_dir


EXPECTED_A: dict[str, Any] = {
    "sent": 43, "acked": 31, "failed": 2, "unknown": 10, "indefinite": 11, "in_log": 29,
    "acked_lost": 9, "unacked_present": 5, "unknown_present": 2, "indefinite_present": 3,
    "failed_present": 1, "not_in_ledger": 1, "duplicates": 1,
    "duplicate_ids": 1, "reordered": 1,
    "foreign_records": 1, "lost_ranges": {"0": [[5, 5], [9, 10], [13, 13]], "2": [[0, 4]]},
    "first_ack_after_fault_ms": 7, "first_kept_ack_after_fault_ms": 17, "unavailable_ms": 4904,
    "no_leader_ms": 1000,
}


def clean_run(run_dir: Path, producers: int = 2, per: int = 50) -> Path:
    """Everything acked, everything in the log once, in order; no timeline, no faults."""
    rows: list[tuple[int | None, int | None, int]] = []
    for producer in range(producers):
        writer = LedgerWriter(run_dir, producer, TOPIC, "all")
        for seq in range(per):
            writer.note_sent(seq, T0 + seq)
            writer.record(seq, 0, len(rows), 0, "acked", None, T0 + seq, T0 + seq + 3)
            rows.append((producer, seq, 0))
        writer.flush()
    write_final_log(run_dir, 0, rows)
    return run_dir


ZOMBIE_RUN = "0a1b2c3d"


def zombie_run(run_dir: Path, with_segments: bool = False) -> Path:
    """Broker 2 leads t-0 (epoch 0) and is cut off at T0 + 500; broker 3 leads epoch 1 from
    offset 50 at T0 + 2000, but the producer keeps reaching broker 2, which acknowledges seqs
    50-149 (offsets 50-149) until T0 + 3000 — after the election. Broker 3 then takes seqs
    150-199 at offsets 50-99. Broker 2 comes back at T0 + 20000 and truncates to 50.
    Lost: seqs 50-149, every one acknowledged by broker 2 at epoch 0."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "settings.json").write_text(json.dumps({"topic": TOPIC, "acks": "1"}))
    writer = LedgerWriter(run_dir, 0, TOPIC, "1", run_id=ZOMBIE_RUN)
    for seq in range(200):
        writer.note_sent(seq, T0 + seq)
        if seq < 50:
            writer.record(seq, 0, seq, None, "acked", None, T0 + seq, T0 + seq * 10)
        elif seq < 150:
            writer.record(seq, 0, seq, None, "acked", None, T0, T0 + 500 + (seq - 50) * 25)
        else:
            writer.record(seq, 0, seq - 100, None, "acked", None, T0, T0 + 3500 + seq)
    writer.flush()
    write_final_log(run_dir, 0, [(0, s, 0) for s in range(50)] + [(0, s, 1) for s in range(150, 200)],
                    run=ZOMBIE_RUN)
    logs = run_dir / "broker-logs"
    (logs / "kafka2").mkdir(parents=True)
    (logs / "kafka3").mkdir(parents=True)
    (logs / "kafka2" / "state-change.log").write_text("\n".join([
        f"{log_stamp(T0 - 10_000)} INFO [Broker id=2] Leader t-0 with topic id Some(x) starts at "
        "leader epoch 0 from offset 0 with partition epoch 0, high watermark 0, ISR [2,3].",
        f"{log_stamp(T0 + 20_000)} INFO [Broker id=2] Follower t-0 starts at leader epoch 1 from "
        "offset 50 with partition epoch 3 and high watermark 50. Current leader is 3. Previous "
        "leader epoch was 0.", ""]))
    (logs / "kafka2" / "server.log").write_text(
        f"{log_stamp(T0 + 20_001)} INFO [UnifiedLog partition=t-0, dir=/tmp/k] Truncating to "
        "offset 50 (kafka.log.UnifiedLog)\n")
    (logs / "kafka3" / "state-change.log").write_text(
        f"{log_stamp(T0 + 2000)} INFO [Broker id=3] Leader t-0 with topic id Some(x) starts at "
        "leader epoch 1 from offset 50 with partition epoch 1, high watermark 50, ISR [3].\n")
    if with_segments:
        from tests.helpers.segments import record_batch as _batch

        part = run_dir / "replicas" / f"{T0 + 19_000}-heal" / "kafka2" / "t-0"
        part.mkdir(parents=True)
        values = [f"{ZOMBIE_RUN}-0-{s}|xx".encode() for s in range(150)]
        (part / "00000000000000000000.log").write_bytes(_batch(0, 0, values))
    return run_dir


SESSION_2 = "0x100004a1b2c0002"  # broker 2's ZooKeeper session


def isolated_controller_run(run_dir: Path, observed: bool = True,
                            zookeeper_log: bool = True) -> Path:
    """zombie_run on stage: broker 2 leads t-0 and is the controller; it is cut off from
    ZooKeeper and the other brokers at T0 + 400 and healed at T0 + 19,900. ZooKeeper expires
    its session at T0 + 1,940 (its log; the observer sees broker 2 go at T0 + 1,950, the
    controller move 2 → 1 in three steps); broker 1 is elected controller at T0 + 1,955 and
    makes broker 3 leader at T0 + 2,000 while broker 2 still acknowledges (until T0 + 2,975).
    Broker 2 learns its session expired only on reconnecting, at T0 + 19,990, and truncates.
    `observed` False: no timeline.jsonl; `zookeeper_log` False: no zookeeper.log (the evidence
    of a run whose story had only broker 2's late line)."""
    zombie_run(run_dir)
    _jsonl(run_dir / "faults.jsonl", [
        {"ts": T0 + 400, "action": "partition", "node": None,
         "groups": [["kafka2"], ["zk1", "kafka1", "kafka3"]], "detail": "partition kafka2",
         "lab_id": "stage"},
        {"ts": T0 + 19_900, "action": "heal", "node": None, "groups": None,
         "detail": "all partitions removed", "lab_id": "stage"}])
    if observed:
        _jsonl(run_dir / "timeline.jsonl", [
            {"ts": T0 + 1950, "kind": "broker_gone", "partition": None, "broker": 2,
             "severity": "error", "detail": "broker 2 is gone from ZooKeeper"},
            # as an observer diffing snapshot by snapshot recorded one move
            {"ts": T0 + 1950, "kind": "controller_changed", "partition": None, "broker": None,
             "severity": "warn", "detail": "controller 2 → None (epoch 1)", "old": 2,
             "new": None, "epoch": 1},
            {"ts": T0 + 1960, "kind": "controller_changed", "partition": None, "broker": 1,
             "severity": "warn", "detail": "controller None → 1 (epoch 1)", "old": None,
             "new": 1, "epoch": 1},
            {"ts": T0 + 1970, "kind": "controller_changed", "partition": None, "broker": 1,
             "severity": "warn", "detail": "controller 1 → 1 (epoch 2)", "old": 1, "new": 1,
             "epoch": 2},
            {"ts": T0 + 2010, "kind": "leader_changed", "partition": f"{TOPIC}-0", "broker": 3,
             "severity": "warn", "detail": "leader 2 → 3 (epoch 1)", "old": 2, "new": 3,
             "epoch": 1}])
    logs = run_dir / "broker-logs"
    (logs / "kafka1").mkdir(parents=True, exist_ok=True)
    (logs / "kafka1" / "controller.log").write_text(
        f"{log_stamp(T0 + 1955)} INFO [Controller id=1] 1 successfully elected as the controller. "
        "Epoch incremented to 2 and epoch zk version is now 2 (kafka.controller.KafkaController)\n")
    server = logs / "kafka2" / "server.log"
    server.write_text(
        f"{log_stamp(T0 - 10_000)} INFO Session establishment complete on server "
        f"zk1/198.18.1.10:2181, session id = {SESSION_2}, negotiated timeout = 6000 "
        "(org.apache.zookeeper.ClientCnxn)\n"
        f"{log_stamp(T0 + 19_990)} WARN Unable to reconnect to ZooKeeper service, session "
        f"{SESSION_2} has expired (org.apache.zookeeper.ClientCnxn)\n" + server.read_text())
    if zookeeper_log:
        (logs / "zk1").mkdir(parents=True, exist_ok=True)
        (logs / "zk1" / "zookeeper.log").write_text(
            f"{log_stamp(T0 + 1940)} INFO Expiring session {SESSION_2}, timeout of 6000ms "
            "exceeded (org.apache.zookeeper.server.ZooKeeperServer)\n")
    return run_dir
