"""The recording format: keyframes + deltas give back exactly the snapshots recorded, a seek
gives the snapshot in force then, and a file cut short replays to its last complete record."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import fields
from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.model import PartitionInfo, snapshot_to_json
from kinspect.sources.playback import Recording, open_recording, parse_at
from kinspect.sources.recording import (
    CHUNK,
    POINTER_FILE,
    Recorder,
    _pieces,
    json_chunks,
    partition_row,
    snapshot_delta,
)
from tests.helpers.model_fixtures import T0, demo_snapshot
from tests.helpers.recording_story import FAILOVER_STEP, STEP_MS, fault, record_story


def all_frames(rec: Recording) -> list:  # type: ignore[type-arg]
    return [f for i in range(len(rec.paths)) for f in rec.frames(i)]


def test_every_field_of_a_partition_is_recorded() -> None:
    p = record_story.__globals__["story"](1)[0][0].topics[0].partitions[0]
    assert len(partition_row(p)) == len(fields(PartitionInfo)) - 1  # the topic is the key


def test_a_record_written_a_piece_at_a_time_reads_as_the_standard_encoder_would() -> None:
    """Keyframes and deltas, with names beyond ASCII, numeric keys, empty lists and dicts:
    json.loads reads back what the standard library's encoder would have written."""
    snapshot = demo_snapshot()
    rows = [[n, "réplica", None, True, 1.5] for n in range(200)]
    later = demo_snapshot(taken_at=T0 + 1000)
    records = [{"t": T0, "k": "key", "ev": [], "s": snapshot_to_json(snapshot), "faults": []},
               {"t": T0, "k": "snap", **snapshot_delta(snapshot, later)},
               {"t": T0, "k": "state", "p": {"tópico": rows}, "ids": {1: "a", 2: [3, 4]},
                "none": [], "nothing": {}}]
    for record in records:
        line = b"".join(json_chunks(record))
        assert line.endswith(b"\n") and b"\n" not in line[:-1]
        assert json.loads(line) == json.loads(json.dumps(record))


def test_a_big_record_is_encoded_a_topic_and_a_row_at_a_time() -> None:
    """Each piece is one encoder call that holds the GIL: a keyframe's topics and a delta's
    rows are pieces of their own, and the compressor gets chunks, never the whole line."""
    keyframe = {"t": T0, "k": "key", "s": snapshot_to_json(demo_snapshot())}
    topics = keyframe["s"]["topics"]
    pieces = list(_pieces(keyframe, 0))
    assert [json.loads(p) for p in pieces if p.startswith(b'{"name":')] == topics
    rows = [[n, "x" * 100] for n in range(CHUNK // 50)]  # ~2.5 chunks of rows
    delta = {"t": T0, "k": "state", "p": {"big": rows}}
    assert sum(1 for p in _pieces(delta, 0) if p.startswith(b"[") and p != b"[") == len(rows)
    chunks = list(json_chunks(delta))
    assert len(chunks) >= 2 and all(len(c) < CHUNK + 200 for c in chunks)


def test_round_trip_gives_exactly_the_recorded_snapshots(tmp_path: Path) -> None:
    snaps = record_story(tmp_path)
    rec = Recording(tmp_path)
    assert len(rec.paths) == 6  # 60 s of story, a keyframe every 10 s
    frames = all_frames(rec)
    snapshots = []
    for f in frames:
        if not snapshots or f.snapshot is not snapshots[-1]:
            snapshots.append(f.snapshot)
    assert snapshots == [s for s, _ in snaps]
    assert [e for f in frames for e in f.events] == [e for _, es in snaps for e in es]
    assert [x for f in frames for x in f.faults] == [fault(FAILOVER_STEP - 1)]
    assert frames[-1].problems == ("AdminClient: boom",)
    assert frames[-1].lab == {"lab_id": "story", "nodes": [{"name": "kafka3", "state": "killed"}]}
    assert rec.start_ms == T0 and rec.end_ms == T0 + 119 * STEP_MS


def test_seek_gives_the_snapshot_in_force(tmp_path: Path) -> None:
    snaps = record_story(tmp_path)
    rec = Recording(tmp_path)
    for t in range(T0 - 100, T0 + 120 * STEP_MS, 137):
        expected = max((s for s, _ in snaps if s.taken_at <= t), key=lambda s: s.taken_at,
                       default=snaps[0][0])
        assert rec.frame(rec.locate(t)).snapshot == expected, t
        cold = Recording(tmp_path)  # nothing built yet: the deltas up to t merged into one
        assert cold.frame(cold.locate(t)).snapshot == expected, t
    lab_at = rec.frame(rec.locate(T0 + (FAILOVER_STEP + 6) * STEP_MS)).lab
    assert lab_at and lab_at["nodes"][0]["state"] == "killed"  # state from the keyframe on


def test_step_back_and_forth_visits_every_frame(tmp_path: Path) -> None:
    record_story(tmp_path, steps=50)
    rec = Recording(tmp_path)
    cursor, forward = rec.locate(rec.start_ms), []
    while cursor is not None:
        forward.append(cursor)
        cursor = rec.next(cursor)  # type: ignore[assignment]
    backward, cursor = [], forward[-1]
    while cursor is not None:
        backward.append(cursor)
        cursor = rec.prev(cursor)  # type: ignore[assignment]
    assert backward == forward[::-1] and len(forward) == len(all_frames(rec))


def test_a_file_cut_short_replays_to_its_last_complete_record(tmp_path: Path) -> None:
    snaps = record_story(tmp_path / "full")
    last = sorted((tmp_path / "full").glob("seg-*"))[-1]
    data = last.read_bytes()
    complete = Recording(tmp_path / "full")
    previous: list = []  # type: ignore[type-arg]
    for cut in range(40, len(data), max(1, len(data) // 25)):
        shutil.rmtree(tmp_path / "cut", ignore_errors=True)
        shutil.copytree(tmp_path / "full", tmp_path / "cut")
        (tmp_path / "cut" / last.name).write_bytes(data[:cut])
        rec = Recording(tmp_path / "cut")
        frames = all_frames(rec)
        assert frames == all_frames(complete)[:len(frames)]  # a prefix, every frame exact
        assert len(frames) >= len(previous)
        previous = frames
    assert previous[-1].snapshot == snaps[-1][0] or len(previous) < len(all_frames(complete))


def test_a_killed_recorder_is_readable_up_to_its_last_second(tmp_path: Path) -> None:
    snaps = record_story(tmp_path / "story", steps=30)
    recorder = Recorder(tmp_path / "live", flush_s=0.05)
    for s, events in snaps:
        recorder.snapshot(s, events)
    time.sleep(0.5)  # the recorder's sync: no close, as if the process were killed now
    rec = Recording(tmp_path / "live")
    assert rec.frame(rec.locate(rec.end_ms)).snapshot == snaps[-1][0]
    recorder.close()


def test_a_run_gets_its_window_and_a_copy(tmp_path: Path) -> None:
    from tests.helpers.recording_story import story

    snaps = story(80)
    run = tmp_path / "run"
    run.mkdir()
    recorder = Recorder(tmp_path / "session", keyframe_s=10, flush_s=0.05)
    for i, (s, events) in enumerate(snaps):
        if i == 30:
            recorder.attach_run(run, t=s.taken_at)
        if i == 50:
            recorder.attach_run(None, t=s.taken_at)
        recorder.snapshot(s, events)
    recorder.close()
    assert (run / POINTER_FILE).is_file()
    rec = open_recording(run)
    assert rec.root == run / "recording"
    # from the attach to the last change before the detach
    assert (rec.start_ms, rec.end_ms) == (snaps[30][0].taken_at, snaps[49][0].taken_at)
    assert rec.frame(rec.locate(rec.end_ms)).snapshot == snaps[49][0]
    assert len(rec.paths) < len(list((tmp_path / "session").glob("seg-*")))


def test_at_takes_seconds_clock_times_and_epoch_ms(tmp_path: Path) -> None:
    record_story(tmp_path)
    rec = Recording(tmp_path)
    assert parse_at("0", rec) == T0 and parse_at("12.5s", rec) == T0 + 12_500
    assert parse_at(str(T0 + 20_000), rec) == T0 + 20_000
    clock = time.strftime("%H:%M:%S", time.localtime((T0 + 31_000) / 1000))
    assert parse_at(clock, rec) == T0 + 31_000
    for bad in ("-1", "soon", "nan", "9999", "25:00:00"):
        with pytest.raises(KinspectError):
            parse_at(bad, rec)


def test_not_a_recording_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(KinspectError, match="is not a recording"):
        open_recording(tmp_path)
    (tmp_path / "recording").mkdir()
    (tmp_path / "recording" / "seg-0000000000001.jsonl.gz").write_bytes(b"garbage")
    with pytest.raises(KinspectError, match="no readable recording"):
        open_recording(tmp_path)


def test_a_run_still_attached_when_the_session_ends_gets_its_copy(tmp_path: Path) -> None:
    """Quitting during a load: the run's copy is made before the open segment is closed
    (closing first left a finished gzip stream to flush, and the copy was never made)."""
    from tests.helpers.recording_story import story

    snaps = story(20)
    run = tmp_path / "run"
    run.mkdir()
    recorder = Recorder(tmp_path / "session", keyframe_s=10, flush_s=0.05)
    recorder.attach_run(run, t=snaps[0][0].taken_at)
    for s, events in snaps:
        recorder.snapshot(s, events)
    recorder.close()
    assert recorder.error is None
    rec = open_recording(run)
    assert rec.frame(rec.locate(rec.end_ms)).snapshot == snaps[-1][0]
