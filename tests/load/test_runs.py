"""Run identity, the ledger's run-aware ids and sent_upto mark, and the segment reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.load.ack_ledger import LedgerWriter, read_ledger
from kinspect.load.rundir import begin_run, latest_run, mark, parse_message_id, read_run
from kinspect.postmortem.evidence.segments import Held, ids_of, read_segment
from tests.helpers.segments import record_batch as _batch


def test_message_ids_carry_the_run() -> None:
    assert parse_message_id(b"0a1b2c3d-3-123|xxxx") == ("0a1b2c3d", 3, 123)
    assert parse_message_id(b"3-123|xx") == (None, 3, 123)  # before run ids
    assert parse_message_id(b"not ours") is None and parse_message_id(None) is None
    assert parse_message_id(b"0A1B2C3D-3-1|") is None  # a run id is lower-case hex


def test_a_run_dir_holds_one_run_and_its_window(tmp_path: Path) -> None:
    info = begin_run(tmp_path, "test1", "load")
    with pytest.raises(KinspectError, match="already holds run"):
        begin_run(tmp_path, "test1", "load")
    marked = mark(tmp_path, load_ended_at_ms=info.started_at_ms + 5)
    assert marked is not None and marked.load_ended_at_ms == info.started_at_ms + 5
    verified = mark(tmp_path, verified_at_ms=info.started_at_ms + 9)
    assert verified is not None and verified.load_ended_at_ms == info.started_at_ms + 5
    assert read_run(tmp_path) == verified and verified.window() == (info.started_at_ms,
                                                                    info.started_at_ms + 9)
    assert read_run(tmp_path / "nothing") is None
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(KinspectError, match="not a kinspect run file"):
        read_run(tmp_path)


def test_latest_run_is_the_one_that_began_last(tmp_path: Path) -> None:
    import os

    for name, mtime in (("zzz-old", 100), ("aaa-new", 200)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "settings.json").write_text("{}")
        os.utime(tmp_path / name / "settings.json", (mtime, mtime))
    assert latest_run(tmp_path) == tmp_path / "aaa-new"


def test_ledger_ids_and_unknowns_carry_the_run(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path, 2, "t", "1", run_id="0a1b2c3d")
    writer.note_sent(0, 1)
    writer.note_sent(1, 1)
    writer.record(0, 0, 5, None, "acked", None, 1, 2)
    writer.flush(10)
    ids = sorted(read_ledger(tmp_path)["id"].to_pylist())
    assert ids == ["0a1b2c3d-2-0", "0a1b2c3d-2-1"]  # seq 1 sent, never reported: unknown


def test_sent_upto_is_kept_when_no_report_arrives(tmp_path: Path) -> None:
    """A paused leader answers nothing: the mark must still reach the disk on the flush cadence,
    or a SIGKILLed generator leaves sends neither in the ledger nor counted as unknown."""
    writer = LedgerWriter(tmp_path, 0, "t", "1", run_id="0a1b2c3d")
    writer.note_sent(0, 1)
    writer.record(0, 0, 0, None, "acked", None, 1, 2)
    writer.flush(0)
    for seq in range(1, 50):
        writer.note_sent(seq, 3)
    writer.maybe_flush(10_000)  # no report since the last flush; sent_upto moved
    table = read_ledger(tmp_path)
    assert table.num_rows == 50 and table["status"].to_pylist().count("unknown") == 49
    chunks = len(list((tmp_path / "ledger").glob("*.parquet")))
    writer.maybe_flush(20_000)  # nothing moved: no new chunk
    assert len(list((tmp_path / "ledger").glob("*.parquet"))) == chunks




def test_segment_reader_finds_ids_offsets_and_epochs(tmp_path: Path) -> None:
    segment = tmp_path / "00000000000000000000.log"
    first = _batch(0, 4, [b"0a1b2c3d-0-0|xx", b"0a1b2c3d-0-1|xx"])
    odd = _batch(2, 5, [b"foreign", b"0a1b2c3d-1-7|x"])  # a foreign record: the slow path
    cut = _batch(4, 5, [b"0a1b2c3d-0-2|xx"])[:-5]  # copied mid-append: ignored
    segment.write_bytes(first + odd + cut)
    held = Held()
    read_segment(segment, ("snap", 1, "kafka2", 0), held)
    rows = held.table().to_pylist()
    assert [(r["offset"], r["batch_epoch"], r["producer"], r["seq"]) for r in rows] == \
        [(0, 4, 0, 0), (1, 4, 0, 1), (3, 5, 1, 7)]
    assert {r["node"] for r in rows} == {"kafka2"} and {r["run"] for r in rows} == {"0a1b2c3d"}


def test_segment_reader_of_one_run_skips_the_others(tmp_path: Path) -> None:
    """A reused topic: another run's batches, and one batch mixing both runs (the slow path)."""
    segment = tmp_path / "00000000000000000000.log"
    other = _batch(0, 3, [b"ffffffff-0-0|xx", b"ffffffff-0-1|xx"])
    ours = _batch(2, 4, [b"0a1b2c3d-0-0|xx", b"0a1b2c3d-0-1|xx"])
    mixed = _batch(4, 4, [b"ffffffff-0-2|xx", b"0a1b2c3d-2-9|x"])
    segment.write_bytes(other + ours + mixed)
    held = Held()
    read_segment(segment, ("snap", 1, "kafka1", 0), held, ids_of("0a1b2c3d"))
    rows = held.table().to_pylist()
    assert [(r["offset"], r["batch_epoch"], r["producer"], r["seq"], r["run"]) for r in rows] == \
        [(2, 4, 0, 0, "0a1b2c3d"), (3, 4, 0, 1, "0a1b2c3d"), (5, 4, 2, 9, "0a1b2c3d")]
    everyone = Held()
    read_segment(segment, ("snap", 1, "kafka1", 0), everyone)
    assert everyone.table().num_rows == 6
