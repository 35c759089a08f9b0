"""`kinspect verify`: read the final log back by identity (the rule Kafka's system tests use).

Every partition is read from its log start to its high watermark with a fresh consumer that
joins no group and commits nothing; each record's run, id, offset, batch leader epoch and
timestamp go to RUN_DIR/final_log/part-NNNN.parquet for the post-mortem, which keeps the run's
own records and counts the others (a topic used by several runs holds them all).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kinspect.clients.kafka import client_config, list_topics
from kinspect.errors import KinspectError
from kinspect.load.rundir import FINAL_LOG_DIR, id_prefix, parse_message_id

FINAL_LOG_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
    ("id", pa.string()), ("producer", pa.int32()), ("seq", pa.int64()),
    ("leader_epoch", pa.int32()), ("timestamp", pa.int64()), ("run", pa.string()),
])


@dataclass(frozen=True)
class PartitionRead:
    partition: int
    log_start: int
    high_watermark: int
    records: int


class _Columns:
    def __init__(self) -> None:
        self.offset: list[int] = []
        self.id: list[str | None] = []
        self.producer: list[int | None] = []
        self.seq: list[int | None] = []
        self.epoch: list[int | None] = []
        self.ts: list[int] = []
        self.run: list[str | None] = []

    def add(self, offset: int, value: bytes | None, epoch: int | None, ts: int) -> None:
        self.offset.append(offset)
        self.epoch.append(epoch if epoch is not None and epoch >= 0 else None)
        self.ts.append(ts)
        ident = parse_message_id(value)
        if ident is None:  # not written by kinspect: a foreign record
            self.id.append(None)
            self.producer.append(None)
            self.seq.append(None)
            self.run.append(None)
            return
        run, producer, seq = ident
        self.id.append(id_prefix(run or "", producer) + str(seq))
        self.producer.append(producer)
        self.seq.append(seq)
        self.run.append(run)

    def table(self, topic: str, partition: int) -> pa.Table:
        n = len(self.offset)
        return pa.table({
            "topic": pa.array([topic] * n, pa.string()),
            "partition": pa.array([partition] * n, pa.int32()),
            "offset": pa.array(self.offset, pa.int64()),
            "id": pa.array(self.id, pa.string()),
            "producer": pa.array(self.producer, pa.int32()),
            "seq": pa.array(self.seq, pa.int64()),
            "leader_epoch": pa.array(self.epoch, pa.int32()),
            "timestamp": pa.array(self.ts, pa.int64()),
            "run": pa.array(self.run, pa.string()),
        }, schema=FINAL_LOG_SCHEMA)


def _write(table: pa.Table, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def verify(bootstrap: str, topic: str, run_dir: Path, timeout_s: float = 120.0,
           progress: Callable[[str], None] | None = None,
           config: dict[str, str] | None = None, isolation: str = "read_uncommitted",
           into: str = FINAL_LOG_DIR) -> list[PartitionRead]:
    """Read every partition to its high watermark; write the final log (RUN_DIR/`into`);
    return counts. read_committed (a transactional output) leaves aborted records out."""
    settings, auth = client_config({
        **(config or {}),
        "bootstrap.servers": bootstrap,
        "group.id": f"kinspect-verify-{uuid.uuid4().hex[:8]}",  # never joined: we assign()
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": isolation,
        "auto.offset.reset": "earliest",  # a log start that moved under us: read from the start
        "enable.partition.eof": True,
        "socket.timeout.ms": 10000,
    })
    consumer = Consumer(settings)
    try:
        try:
            metadata = list_topics(consumer, auth, 15, topic)  # a refused login: said at once
        except KafkaException as exc:
            raise KinspectError(f"cannot reach the brokers at {bootstrap}: "
                                f"{exc.args[0].str()}") from None
        info = metadata.topics.get(topic)
        if info is None or info.error is not None or not info.partitions:
            raise KinspectError(f"topic {topic!r} does not exist")
        leaderless = sorted(p for p, m in info.partitions.items() if m.leader < 0)
        if leaderless:
            raise KinspectError(f"partition {topic}-{leaderless[0]} has no leader; heal the "
                                "cluster (kinspect lab heal / start) before verifying")
        ranges = {partition: _watermarks(consumer, topic, partition)
                  for partition in sorted(info.partitions)}
        return _read_all(consumer, topic, ranges, run_dir / into, timeout_s, progress)
    finally:
        consumer.close()


def _watermarks(consumer: Consumer, topic: str, partition: int,
                timeout_s: float = 30.0) -> tuple[int, int]:
    """(log start, high watermark), asked again while a cluster just healed settles (a broker
    handle being replaced answers "Broker handle destroyed" once)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=15)
            return int(low), int(high)
        except KafkaException as exc:
            if time.monotonic() >= deadline:
                raise KinspectError(f"cannot read offsets of {topic}-{partition}: "
                                    f"{exc.args[0].str()}") from None
            time.sleep(1.0)


def _read_all(consumer: Consumer, topic: str, ranges: dict[int, tuple[int, int]],
              out: Path, timeout_s: float,
              progress: Callable[[str], None] | None) -> list[PartitionRead]:
    columns = {p: _Columns() for p in ranges}
    pending = {p for p, (low, high) in ranges.items() if high > low}
    consumer.assign([TopicPartition(topic, p, ranges[p][0]) for p in pending])
    deadline = time.monotonic() + timeout_s
    total = sum(high - low for low, high in ranges.values())
    seen, last_report = 0, time.monotonic()
    while pending:
        if time.monotonic() > deadline:
            missing = ", ".join(f"{topic}-{p}" for p in sorted(pending))
            raise KinspectError(f"timed out reading {missing} to its high watermark")
        for msg in consumer.consume(num_messages=10000, timeout=0.5):
            partition = int(msg.partition() or 0)
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(partition)
                    continue
                raise KinspectError(f"reading {topic}-{partition}: {error.str()}")
            offset = int(msg.offset() or 0)
            if offset >= ranges[partition][1]:
                pending.discard(partition)
                continue
            columns[partition].add(offset, msg.value(), msg.leader_epoch(), msg.timestamp()[1])
            seen += 1
            if offset >= ranges[partition][1] - 1:
                pending.discard(partition)
        if progress and time.monotonic() - last_report > 1.0:
            progress(f"read {seen:,} of {total:,} records")
            last_report = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    reads = []
    for partition, (low, high) in sorted(ranges.items()):
        _write(columns[partition].table(topic, partition), out / f"part-{partition:04d}.parquet")
        reads.append(PartitionRead(partition, low, high, len(columns[partition].offset)))
    return reads
