"""The filesystem that loses power, on a real FUSE mount (no broker): what was fsynced stays,
what was not goes back to its last fsync, and the record says exactly which bytes went."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinspect.lab import power
from kinspect.lab.state import LabState, NodeRecord
from tests.helpers import wait_until

INDEX_SIZE = 10 * 1024 * 1024  # Kafka's segment.index.bytes, preallocated

pytestmark = pytest.mark.skipif(power.problem() is not None,
                                reason=f"no FUSE here: {power.problem()}")


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[tuple[Path, Path, NodeRecord]]:
    """kafka1's filesystem over its data dir, in a lab root of the test's own."""
    node = NodeRecord(name="kafka1", role="broker", host="127.0.0.1", port=9092, broker_id=1)
    power.mount(tmp_path, node, expire=30.0)
    yield power.mount_path(tmp_path, node), tmp_path / "nodes" / "kafka1" / "data", node
    power.unmount(tmp_path, node)
    state = LabState(lab_id="t", backend="process", preset="demo", network="loopback",
                     kafka_version="3.9.2", nodes=[node], created_at=0, overrides={},
                     broker_config={})
    assert power.unmount_all(tmp_path, state) == 0  # nothing left mounted, the process gone
    assert not (tmp_path / "nodes" / "kafka1" / power.SOCKET).exists()


def test_a_cut_keeps_what_was_fsynced_and_drops_the_rest(
        mounted: tuple[Path, Path, NodeRecord], tmp_path: Path) -> None:
    view, disk, node = mounted
    (view / "t-0").mkdir()
    with open(view / "t-0" / "00.log", "wb") as log:  # appends: 100 on disk, 50 not
        log.write(b"A" * 100)
        log.flush()
        os.fsync(log.fileno())
        log.write(b"B" * 50)
    fd = os.open(view / "t-0" / "00.index", os.O_RDWR | os.O_CREAT)
    os.write(fd, b"x" * 20)
    os.fsync(fd)
    os.pwrite(fd, b"yy", 5)  # an overwrite of what is on disk
    os.close(fd)
    (view / "t-0" / "new.log").write_bytes(b"C" * 10)  # never fsynced
    os.rename(view / "t-0" / "new.log", view / "t-0" / "renamed.log")  # names are kept
    assert power.unsynced_bytes(tmp_path, node) == 50 + 2 + 10

    cut = power.cut(tmp_path, node)

    assert (disk / "t-0" / "00.log").read_bytes() == b"A" * 100
    assert (disk / "t-0" / "00.index").read_bytes() == b"x" * 20
    assert (disk / "t-0" / "renamed.log").read_bytes() == b""
    dropped = {f.file: f.dropped for f in cut.files}
    assert dropped == {"t-0/00.log": ((100, 150),), "t-0/00.index": ((5, 7),),
                       "t-0/renamed.log": ((0, 10),)}
    assert cut.dropped_bytes == 62
    # The dropped batches of each segment are kept, the segment's own bytes past the fsync.
    assert (cut.evidence / "t-0" / "00.log").read_bytes() == b"B" * 50
    assert (cut.evidence / "t-0" / "renamed.log").read_bytes() == b"C" * 10
    assert not (cut.evidence / "t-0" / "00.index").exists()
    with pytest.raises(OSError):  # no write reaches the disk after the cut
        (view / "t-0" / "late.log").write_bytes(b"late")


def test_a_log_truncated_into_what_is_on_disk_keeps_its_new_batches_from_the_truncation(
        mounted: tuple[Path, Path, NodeRecord], tmp_path: Path) -> None:
    """A follower truncates its log to the leader's and appends the leader's batches: what
    the cut drops starts at the truncation, below the fsynced length, and the evidence holds
    those new batches whole, not from the middle of the first."""
    view, disk, node = mounted
    fd = os.open(view / "00.log", os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"A" * 100)
        os.fsync(fd)
        os.ftruncate(fd, 60)  # the follower's truncation into what is on disk
        os.pwrite(fd, b"N" * 70, 60)  # the leader's batches, never fsynced
    finally:
        os.close(fd)

    cut = power.cut(tmp_path, node)

    assert (disk / "00.log").read_bytes() == b"A" * 100  # the disk as at the fsync
    assert {f.file: f.dropped for f in cut.files} == {"00.log": ((60, 130),)}
    assert (cut.evidence / "00.log").read_bytes() == b"N" * 70


def test_what_the_kernel_would_have_written_back_is_on_disk(tmp_path: Path) -> None:
    node = NodeRecord(name="kafka2", role="broker", host="127.0.0.1", port=9092, broker_id=2)
    power.mount(tmp_path, node, expire=0.2)  # a kernel writing back after 0.2 s
    try:
        view = power.mount_path(tmp_path, node)
        (view / "old.log").write_bytes(b"D" * 30)
        wait_until(lambda: power.unsynced_bytes(tmp_path, node) == 0, 10,
                   "the write counted as written back")
        cut = power.cut(tmp_path, node)
        assert cut.files == ()
        assert (tmp_path / "nodes" / "kafka2" / "data" / "old.log").read_bytes() == b"D" * 30
    finally:
        power.unmount(tmp_path, node)


def test_an_index_resized_counts_as_on_disk(mounted: tuple[Path, Path, NodeRecord],
                                            tmp_path: Path) -> None:
    """Kafka trims its preallocated 10 MB index to its entries and grows it back at every
    load: the new length is the file's on disk, and no copy of the old bytes is held (it had
    held GBs per broker, and a lab over 400 partitions took 48 s to load)."""
    view, disk, node = mounted
    fd = os.open(view / "00.index", os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"\x01" * 8)
        os.ftruncate(fd, INDEX_SIZE)
        os.ftruncate(fd, 8)
        os.ftruncate(fd, INDEX_SIZE)
    finally:
        os.close(fd)
    assert power.unsynced_bytes(tmp_path, node) == 0

    cut = power.cut(tmp_path, node)

    assert cut.files == ()
    assert (disk / "00.index").stat().st_size == INDEX_SIZE
    assert (disk / "00.index").read_bytes()[:8] == b"\x01" * 8
