"""verify streams each partition to Parquet in fixed-size row groups, against a stand-in
consumer: the same rows and schema as before, nothing half-written, a timeout that says how far
it got, and a done/total callback that ends at the total."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka import KafkaError

from kinspect.errors import KinspectError
from kinspect.load import verify as v
from kinspect.load.rundir import MESSAGE_ID, id_prefix, parse_message_id

RUN = "0a1b2c3d"


class Msg:
    def __init__(self, partition: int, offset: int, value: bytes | None = None,
                 epoch: int | None = 3, eof: bool = False) -> None:
        self._p, self._o, self._v, self._e, self._eof = partition, offset, value, epoch, eof

    def error(self) -> Any:
        return KafkaError(KafkaError._PARTITION_EOF) if self._eof else None

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes | None:
        return self._v

    def leader_epoch(self) -> int | None:
        return self._e

    def timestamp(self) -> tuple[int, int]:
        return 1, 1_700_000_000_000 + self._o


class Consumer:
    """Hands out the assigned partitions' records interleaved, then an EOF for each; `stop_at`
    records in, it goes silent (a cluster that stopped answering)."""

    def __init__(self, logs: dict[int, list[Msg]], stop_at: int | None = None) -> None:
        self.logs, self.stop_at, self.given = logs, stop_at, 0
        self.queue: list[Msg] = []

    def assign(self, tps: list[Any]) -> None:
        lists = [self.logs[tp.partition][tp.offset - self.logs[tp.partition][0].offset():]
                 for tp in tps]
        mixed = [m for group in itertools.zip_longest(*lists) for m in group if m is not None]
        self.queue = mixed + [Msg(tp.partition, 0, eof=True) for tp in tps]

    def consume(self, num_messages: int, timeout: float) -> list[Msg]:
        n = min(num_messages, 5)
        if self.stop_at is not None:
            n = max(0, min(n, self.stop_at - self.given))
        out, self.queue = self.queue[:n], self.queue[n:]
        self.given += len(out)
        return out


def value(producer: int, seq: int, run: str | None = RUN) -> bytes:
    return ((f"{run}-" if run else "") + f"{producer}-{seq}|").encode() + b"x" * 20


def logs(sizes: dict[int, int], low: int = 0) -> dict[int, list[Msg]]:
    return {p: [Msg(p, low + o, value(p, o)) for o in range(n)] for p, n in sizes.items()}


def read(tmp_path: Path, sizes: dict[int, int], consumer: Consumer | None = None,
         low: int = 0, **kw: Any) -> list[v.PartitionRead]:
    ranges = {p: (low, low + n) for p, n in sizes.items()}
    reader = v._Reader(consumer or Consumer(logs(sizes, low)), "t", ranges, tmp_path / "final_log")
    return reader.run(kw.pop("timeout_s", None), kw.pop("stall_s", 5.0), None, kw.pop("count", None))


def test_ids_parsed_in_arrow_as_parse_message_id_does() -> None:
    values = [value(2, 15), value(0, 0, None), b"007-0042|old", b"junk", b"", None,
              b"\xff\xfe\x00", value(123456789, 10**17), b"0A1B2C3D-1-1|upper hex is foreign",
              b"1-2", b"deadbeef-1-2|" + bytes(range(256))]
    batch = v.to_batch("t", [4] * len(values), list(range(len(values))), values,
                       [3, -1, None, 0, 1, 2, 3, 4, 5, 6, 7], [9] * len(values))
    assert batch.schema == v.FINAL_LOG_SCHEMA
    for i, raw in enumerate(values):
        row = {name: batch.column(name)[i].as_py() for name in batch.schema.names}
        ident = parse_message_id(raw)
        if ident is None:
            assert (row["id"], row["producer"], row["seq"], row["run"]) == (None,) * 4, raw
        else:
            run, producer, seq = ident
            assert row["id"] == id_prefix(run or "", producer) + str(seq)
            assert (row["run"], row["producer"], row["seq"]) == (run, producer, seq)
    assert batch.column("leader_epoch").to_pylist()[:3] == [3, None, None]
    assert set(batch.column("topic").to_pylist()) == {"t"}
    assert set(batch.column("partition").to_pylist()) == {4}


def test_the_arrow_pattern_is_the_message_id_pattern() -> None:
    assert v.ID_PATTERN.replace("?P<run>", "").replace("?P<producer>", "").replace(
        "?P<seq>", "") == MESSAGE_ID.pattern.decode()


def test_streams_fixed_size_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(v, "ROWS", 7)
    reads = read(tmp_path, {0: 50, 1: 3, 2: 0}, low=100)
    assert [(r.partition, r.log_start, r.high_watermark, r.records) for r in reads] == [
        (0, 100, 150, 50), (1, 100, 103, 3), (2, 100, 100, 0)]
    out = tmp_path / "final_log"
    assert sorted(p.name for p in out.iterdir()) == [f"part-000{p}.parquet" for p in range(3)]
    meta = pq.read_metadata(out / "part-0000.parquet")
    assert meta.num_rows == 50 and meta.num_row_groups == 8  # 7 groups of 7, then 1
    assert max(meta.row_group(g).num_rows for g in range(meta.num_row_groups)) == 7
    table = pq.read_table(out / "part-0000.parquet")
    assert table.schema == v.FINAL_LOG_FILE_SCHEMA
    assert table["offset"].to_pylist() == list(range(100, 150))
    assert table["prev_seq"].to_pylist() == [None, *range(49)]  # one producer, in order
    assert table["id"].to_pylist() == [f"{RUN}-0-{o}" for o in range(50)]
    assert pq.read_table(out / "part-0002.parquet").num_rows == 0
    whole = pq.read_table(out)  # what the tests and DuckDB read: the directory
    assert whole.num_rows == 53


def test_many_partitions_hold_a_bounded_number_of_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(v, "ROWS", 1000)
    monkeypatch.setattr(v, "BUFFERED", 40)
    held: list[int] = []
    real_route = v._Reader._route

    def route(self: v._Reader, batch: pa.RecordBatch) -> None:
        real_route(self, batch)
        held.append(sum(p.rows for p in self.parts.values()))

    monkeypatch.setattr(v._Reader, "_route", route)
    sizes = {p: 30 for p in range(12)}
    reads = read(tmp_path, sizes)
    assert sum(r.records for r in reads) == 360
    assert max(held) <= 40 + 5  # the cap and one consume(); never the 360, though ROWS is larger
    meta = pq.read_metadata(tmp_path / "final_log" / "part-0000.parquet")
    assert meta.num_rows == 30


def test_count_reaches_the_total(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(v, "ROWS", 4)
    seen: list[tuple[int, int]] = []
    clock = itertools.count(0, 0.2)
    monkeypatch.setattr(v.time, "monotonic", lambda: next(clock))
    read(tmp_path, {0: 40, 1: 20}, count=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (60, 60) and len(seen) > 2
    assert seen.count((60, 60)) == 1  # the end is said once (a bar would finish twice)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_stall_says_how_far_and_writes_nothing(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "final_log"
    out.mkdir()
    pq.write_table(v.FINAL_LOG_SCHEMA.empty_table(), out / "part-0000.parquet")
    before = (out / "part-0000.parquet").read_bytes()
    clock = itertools.count(0, 1.0)
    monkeypatch.setattr(v.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(v, "ROWS", 4)
    with pytest.raises(KinspectError) as caught:
        read(tmp_path, {0: 40, 1: 20}, Consumer(logs({0: 40, 1: 20}), stop_at=31), stall_s=5)
    text = str(caught.value)
    assert "no progress for 5 s" in text and "31 of 60 records read" in text
    assert "t-0 at offset 16 of 40" in text and "t-1 at offset 15 of 20" in text
    assert sorted(p.name for p in out.iterdir()) == ["part-0000.parquet"]  # no temp left
    assert (out / "part-0000.parquet").read_bytes() == before  # the previous verify's, intact


def test_the_overall_limit_scales_and_an_explicit_one_wins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert v.time_limit(0) == v.BASE_S
    assert v.time_limit(10_000_000) == v.BASE_S + 10 * v.PER_MILLION_S
    assert v.time_limit(100_000_000) > 10 * v.time_limit(1_000_000) - 10 * v.BASE_S
    clock = itertools.count(0, 1.0)
    monkeypatch.setattr(v.time, "monotonic", lambda: next(clock))
    with pytest.raises(KinspectError, match="its limit of 3 s"):
        read(tmp_path, {0: 100}, timeout_s=3, stall_s=1000)


def test_a_killed_verify_leaves_no_file_that_looks_whole(tmp_path: Path) -> None:
    out = tmp_path / "final_log"
    out.mkdir()
    (out / ".part-0000.parquet.tmp").write_bytes(b"PAR1 half a file")  # killed mid-write
    assert not list(out.glob("part-*.parquet"))  # what the post-mortem and Spark pick up
    read(tmp_path, {0: 5})
    assert sorted(p.name for p in out.iterdir()) == ["part-0000.parquet"]
    assert pq.read_table(out / "part-0000.parquet").num_rows == 5


def test_foreign_and_old_records_keep_their_rows(tmp_path: Path) -> None:
    log = {0: [Msg(0, 0, b"not ours"), Msg(0, 1, value(1, 7, None)), Msg(0, 2, None, epoch=-1),
               Msg(0, 3, value(2, 9))]}
    read(tmp_path, {0: 4}, Consumer(log))
    table = pq.read_table(tmp_path / "final_log" / "part-0000.parquet")
    assert table["id"].to_pylist() == [None, "1-7", None, f"{RUN}-2-9"]
    assert table["run"].to_pylist() == [None, None, None, RUN]
    assert table["leader_epoch"].to_pylist() == [3, 3, None, 3]
    assert table.schema.equals(pa.schema(v.FINAL_LOG_FILE_SCHEMA))
    assert table["prev_seq"].to_pylist() == [None, None, None, None]  # each first of its kind


def test_records_past_the_high_watermark_are_left_and_eof_ends_a_partition(
        tmp_path: Path) -> None:
    # partition 0 grew after its high watermark was asked; partition 1 ends in control
    # records (a transaction's markers): only its end-of-partition says it is done
    reads = read(tmp_path, {0: 7, 1: 5}, Consumer(logs({0: 10, 1: 3})))
    assert [(r.partition, r.records) for r in reads] == [(0, 7), (1, 3)]
    table = pq.read_table(tmp_path / "final_log" / "part-0000.parquet")
    assert table["offset"].to_pylist() == list(range(7))
