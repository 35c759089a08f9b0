"""The partition schema is the one place a partition is declared: every field is a fact, the
codecs compiled from it give back what they were given, recordings made before rows were named
still read, and the text, the screen, the flags and the exporter carry every fact that asks."""

from __future__ import annotations

import gzip
import json
import math
import random
from dataclasses import fields, replace
from pathlib import Path

import pytest

from kinspect.model import PartitionInfo, Unknown
from kinspect.model.partition_codec import (
    partition_from_json,
    partition_row,
    partition_to_json,
    row_decoder,
)
from kinspect.model.partition_schema import (
    PARTITION_FACTS,
    ROW_FIELDS,
    UNNAMED_ROWS,
    gauges,
    screen_columns,
    text_columns,
)
from kinspect.model.partition_words import FLAG_TESTS, flag_words
from kinspect.model.snapshot import ReplicaDisk, ReplicaLog
from kinspect.model.views import EligibleLeaders, Reassignment
from kinspect.sources.metrics import SnapshotMetrics
from kinspect.sources.playback import Recording
from kinspect.tui.partition_cells import FLAG_STYLE, partition_cells
from tests.helpers.kraft_fixtures import kraft_snapshot
from tests.helpers.model_fixtures import T0, demo_snapshot
from tests.helpers.recording_story import record_story

NOT_TOLD = Unknown("no DescribeConfigs permission on the topic")


def _ids(rng: random.Random) -> tuple[int, ...]:
    return tuple(rng.sample([1, 2, 3, 4], rng.randint(0, 3)))


def _maybe(rng: random.Random, value: object, unknown: bool = False) -> object:
    """The value, None, or (where the fact can be) Unknown."""
    roll = rng.random()
    if unknown and roll < 0.2:
        return NOT_TOLD
    if roll < 0.35:
        return None
    return value


def random_partition(rng: random.Random) -> PartitionInfo:
    """A partition with every fact drawn: values, None and Unknown where each can be."""
    replicas = _ids(rng)
    moving = _maybe(rng, Reassignment(replicas, _ids(rng), _ids(rng)), unknown=True)
    elr = _maybe(rng, EligibleLeaders(_ids(rng), _ids(rng)), unknown=True)
    logs = tuple(ReplicaLog(b, rng.choice([None, 10]), rng.choice([None, 3]),
                            rng.choice([None, -2, 0, 5]), rng.choice([0, 7])) for b in replicas)
    disks = tuple(ReplicaDisk(b, f"/data/{b}", rng.randint(0, 9), rng.choice([None, "/d2"]),
                              rng.randint(0, 9)) for b in replicas[:rng.randint(0, 2)])
    broker_isr = _maybe(rng, _ids(rng))
    return PartitionInfo(
        topic="t", partition=rng.randint(0, 99), leader=_maybe(rng, 1),  # type: ignore[arg-type]
        leader_epoch=_maybe(rng, 4), replicas=replicas, isr=_ids(rng),  # type: ignore[arg-type]
        high_watermark=_maybe(rng, 12_345), log_start=_maybe(rng, 7),  # type: ignore[arg-type]
        min_isr=rng.choice([2, 1, NOT_TOLD]), broker_leader=_maybe(rng, 2),  # type: ignore[arg-type]
        broker_isr=broker_isr, views_disagree=rng.random() < 0.3,  # type: ignore[arg-type]
        replica_logs=logs, epoch_ends=tuple((e, e, e * 10) for e in range(rng.randint(0, 2))),
        reassignment=moving, elr=elr, leader_live=rng.random() < 0.8,  # type: ignore[arg-type]
        stalled_ms=_maybe(rng, 90_000), disks=disks,  # type: ignore[arg-type]
        offline_replicas=_ids(rng),
        state_changed_at=_maybe(rng, T0, unknown=True))  # type: ignore[arg-type]


PARTITIONS = [random_partition(random.Random(seed)) for seed in range(2000)]


def test_every_field_of_a_partition_is_a_fact() -> None:
    recorded = [f.name for f in PARTITION_FACTS if f.field]
    assert sorted(recorded) == sorted(f.name for f in fields(PartitionInfo))
    assert len(set(recorded)) == len(recorded)
    derived = [f.name for f in PARTITION_FACTS if not f.field]
    assert all(isinstance(getattr(PartitionInfo, name), property) for name in derived)


def test_json_gives_back_every_partition() -> None:
    for p in PARTITIONS:
        written = json.loads(json.dumps(partition_to_json(p)))
        assert partition_from_json("t", written) == p


def test_a_new_recording_row_gives_back_every_partition() -> None:
    decode = row_decoder(ROW_FIELDS)
    for p in PARTITIONS:
        assert decode("t", json.loads(json.dumps(partition_row(p)))) == p


def test_rows_are_read_by_the_names_their_keyframe_gives() -> None:
    """A later kinspect may write the fields in another order or add some: read by name."""
    shuffled = list(ROW_FIELDS)
    random.Random(1).shuffle(shuffled)
    decode = row_decoder(tuple(shuffled))
    for p in PARTITIONS[:200]:
        row = dict(zip(ROW_FIELDS, partition_row(p), strict=True))
        assert decode("t", [row[name] for name in shuffled]) == p


def test_a_row_without_a_later_fact_reads_it_as_not_recorded() -> None:
    fields_then = tuple(f for f in ROW_FIELDS if f != "state_changed_at")
    p = replace(PARTITIONS[0], state_changed_at=T0)
    row = dict(zip(ROW_FIELDS, partition_row(p), strict=True))
    told = row_decoder(fields_then)("t", [row[name] for name in fields_then])
    assert told == replace(p, state_changed_at=None)


def test_a_row_without_a_required_fact_is_refused() -> None:
    with pytest.raises(ValueError, match="without leader"):
        row_decoder(tuple(f for f in ROW_FIELDS if f != "leader"))


# Rows as kinspect wrote them before keyframes named their fields (by position; 13 cells
# before reassignments and ELR were seen, 17 before disks were, 19 until now).
ROW_13 = [0, 1, 4, [1, 2, 3], [1, 2], 100, 0, 2, 1, [1, 2], False,
          [[1, 100, 4, 0, 0], [2, 90, 4, 10, 0]], [[3, 3, 80]]]
ROW_17 = [*ROW_13, {"replicas": [1, 2, 3, 4], "adding": [4], "removing": [3]},
          {"eligible": [3], "last_known": []}, False, 75_000]
ROW_19 = [*ROW_17, [[1, "/data", 512, None, 0]], [3]]


def test_rows_recorded_before_rows_were_named_still_read() -> None:
    assert set(UNNAMED_ROWS) == {13, 17, 19}
    decode = row_decoder(None)
    p13, p17, p19 = (decode("t", row) for row in (ROW_13, ROW_17, ROW_19))
    assert (p13.leader, p13.isr, p13.min_isr, p13.epoch_ends) == (1, (1, 2), 2, ((3, 3, 80),))
    assert p13.replica_logs[1] == ReplicaLog(2, 90, 4, 10, 0)
    assert (p13.reassignment, p13.elr, p13.leader_live, p13.disks) == (None, None, True, ())
    assert p17.reassignment == Reassignment((1, 2, 3, 4), (4,), (3,))
    assert (p17.elr, p17.leader_live, p17.stalled_ms) == (EligibleLeaders((3,), ()), False,
                                                         75_000)
    assert (p19.disks, p19.offline_replicas) == ((ReplicaDisk(1, "/data", 512, None, 0),), (3,))
    assert p19.state_changed_at is None  # not read by the kinspect that recorded it


def _cut(rows: list[list[object]]) -> None:
    """Each row in the order of the day, without the facts added since."""
    for i, row in enumerate(rows):
        named = dict(zip(ROW_FIELDS, row, strict=True))
        rows[i] = [named[name] for name in UNNAMED_ROWS[19]]


def _as_before_names(root: Path) -> None:
    """Rewrite a recording as the last kinspect before named rows wrote it: no `fields` in its
    keyframes, and its rows in that day's order without the facts added since (19 cells)."""
    for segment in sorted(root.glob("seg-*.jsonl.gz")):
        records = [json.loads(line) for line in gzip.decompress(segment.read_bytes()).splitlines()]
        for record in records:
            record.pop("fields", None)
            for topic in record.get("s", {}).get("topics", []):
                for partition in topic["partitions"]:
                    del partition["state_changed_at"]
            delta = record.get("d") or {}
            for rows in delta.get("p", {}).values():
                _cut(rows)
            for topic in delta.get("T", []):
                _cut(topic[3])
        segment.write_bytes(gzip.compress(b"".join(json.dumps(r).encode() + b"\n"
                                                   for r in records)))


def test_a_recording_made_before_rows_were_named_still_plays(tmp_path: Path) -> None:
    recorded = [s for s, _ in record_story(tmp_path)]
    _as_before_names(tmp_path)
    rec = Recording(tmp_path)
    played = [f.snapshot for i in range(len(rec.paths)) for f in rec.frames(i)]
    assert played[-1].topics and played[-1].partitions()
    for snapshot in played:
        expected = next(s for s in recorded if s.taken_at == snapshot.taken_at)
        for was, now in zip(expected.partitions(), snapshot.partitions(), strict=True):
            assert now == replace(was, state_changed_at=None)


def test_every_flag_has_a_test_and_a_style() -> None:
    flagged = {f.name for f in PARTITION_FACTS if f.flag is not None}
    assert set(FLAG_TESTS) == flagged
    assert set(FLAG_STYLE) == flagged


def test_the_text_and_the_screen_say_the_same_flags() -> None:
    for p in PARTITIONS:
        words = flag_words(p)
        shown = partition_cells(p)["flags"].plain
        if words == "ok":
            assert shown == ""
            continue
        for word in words.split(" "):
            assert word in shown, (words, shown)


def test_the_text_the_screen_and_the_exporter_carry_each_fact_that_asks() -> None:
    from kinspect.cli.snapshot_text import render_snapshot
    from kinspect.model import snapshot_to_json

    header = render_snapshot(snapshot_to_json(demo_snapshot())).splitlines()[3]
    assert [c.text.label for c in text_columns() if c.text] == header.split()[:-1]
    assert "changed" in screen_columns()
    assert set(partition_cells(PARTITIONS[0])) == set(screen_columns())
    metrics = SnapshotMetrics()
    metrics.observe(demo_snapshot(), [])
    names = {m.name for m in metrics.collect()}
    for fact in gauges():
        assert fact.gauge is not None
        assert f"kinspect_partition_{fact.gauge.name}" in names


def test_when_the_state_changed_is_told_where_the_cluster_says_it() -> None:
    """ZooKeeper mode: the state znode's mtime (as the exporter's seconds); nothing invented."""
    snapshot = demo_snapshot()
    p = snapshot.partitions()[0]
    assert p.state_changed_at == T0 - 10_000  # the fixture's znode mtime
    metrics = SnapshotMetrics()
    metrics.observe(snapshot, [])
    family = next(m for m in metrics.collect()
                  if m.name == "kinspect_partition_state_changed_timestamp_seconds")
    assert family.samples[0].value == (T0 - 10_000) / 1000
    unknown = replace(p, state_changed_at=Unknown("KRaft's metadata keeps no time"))
    assert partition_cells(unknown)["changed"].plain == "?"
    assert partition_to_json(unknown)["state_changed_at"] == {
        "unknown": "KRaft's metadata keeps no time"}


def test_kraft_does_not_say_when_and_kinspect_says_it_was_not_told() -> None:
    snapshot = kraft_snapshot()
    said = {p.state_changed_at for p in snapshot.partitions()}
    assert said == {Unknown("KRaft's metadata keeps no time of a partition's change")}
    metrics = SnapshotMetrics()
    metrics.observe(snapshot, [])
    family = next(m for m in metrics.collect()
                  if m.name == "kinspect_partition_state_changed_timestamp_seconds")
    assert family.samples and all(math.isnan(s.value) for s in family.samples)


def test_without_zookeeper_a_zookeeper_cluster_says_why_there_is_no_time() -> None:
    """A ZooKeeper-mode cluster watched without --zookeeper: not KRaft's reason, ZooKeeper's."""
    from kinspect.model import build_snapshot
    from tests.helpers.model_fixtures import broker_view, zk_view

    snapshot = build_snapshot(None, broker_view(zk_view()), [1, 2, 3], T0)
    said = {p.state_changed_at for p in snapshot.partitions()}
    assert said == {Unknown("ZooKeeper not watched (--zookeeper): the time is its state "
                            "znode's")}


def _without_leader(segment: Path) -> None:
    records = [json.loads(line) for line in gzip.decompress(segment.read_bytes()).splitlines()]
    records[0]["fields"] = [f for f in records[0]["fields"] if f != "leader"]
    segment.write_bytes(gzip.compress(b"".join(json.dumps(r).encode() + b"\n" for r in records)))


def test_a_segment_whose_rows_lack_a_required_fact_is_unreadable_not_fatal(
        tmp_path: Path) -> None:
    """A keyframe naming fields this kinspect cannot read makes its segment unreadable, as a
    damaged one is: the recording plays up to it, and one made only of such segments is a
    one-line error."""
    from kinspect.errors import KinspectError

    record_story(tmp_path)
    segments = sorted(tmp_path.glob("seg-*.jsonl.gz"))
    _without_leader(segments[-1])
    rec = Recording(tmp_path)
    assert rec.paths == segments[:-1]
    assert all(rec.frames(i) for i in range(len(rec.paths)))
    for segment in segments:
        _without_leader(segment)
    with pytest.raises(KinspectError, match="no readable recording"):
        Recording(tmp_path)
