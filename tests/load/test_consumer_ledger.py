"""The consumer ledger's files (written, cut by a crash, read back by us and by DuckDB), the
consumer settings' rules, and the post-mortem's words about never-processed records."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from kinspect.errors import KinspectError
from kinspect.load.consumers.consumer_ledger import ConsumerLedger, ledger_path, read_consumer_ledger
from kinspect.load.consumers.settings import ConsumeSettings
from kinspect.postmortem.story.consumer_story import lost_ranges, poll_anomalies, story


def _write_two_incarnations(run_dir: Path) -> None:
    first = ConsumerLedger(run_dir, 0, 0)
    first.polled(1000, [(0, 0, 9, 10)])
    first.committed(1001, [(0, 10)], "auto")  # the timer commits the whole poll …
    for offset in range(4):
        first.processed(0, offset, f"abcd0123-0-{offset}", 1000, 1002 + offset, "processed")
    first.event(1010, "crash", "after 4 records")  # … and the consumer dies at offset 4
    first.close()
    second = ConsumerLedger(run_dir, 0, 1)
    second.polled(2000, [(0, 10, 14, 5)])
    for offset in range(10, 15):
        second.processed(0, offset, f"abcd0123-0-{offset}", 2000, 2001, "processed")
    second.committed(2002, [(0, 15)], "auto")
    second.close()


def test_lines_written_are_read_back_and_a_cut_line_is_not(tmp_path: Path) -> None:
    _write_two_incarnations(tmp_path)
    records = ledger_path(tmp_path) / "c000-i001.records.csv"
    with open(records, "ab") as handle:
        handle.write(b"0,1,0,15,abcd0123-0-15,2000,20")  # a crash in the middle of a line
    ledger = read_consumer_ledger(tmp_path)
    assert ledger.records.num_rows == 9
    assert sorted(ledger.records["offset"].to_pylist()) == [0, 1, 2, 3, 10, 11, 12, 13, 14]
    assert ledger.commits["how"].to_pylist() == ["auto", "auto"]
    assert ledger.events["event"].to_pylist() == ["crash"]
    assert ledger.polls["records"].to_pylist() == [10, 5]


def test_duckdb_reads_the_same_files(tmp_path: Path) -> None:
    import duckdb

    _write_two_incarnations(tmp_path)
    pattern = str(ledger_path(tmp_path) / "c*-i*.records.csv")
    row = duckdb.connect().execute(
        f"SELECT count(*), count(DISTINCT \"offset\") FROM read_csv('{pattern}', header = true)"
        " WHERE outcome = 'processed'").fetchone()
    assert row == (9, 9)


def test_an_empty_run_dir_reads_as_empty_tables(tmp_path: Path) -> None:
    ledger = read_consumer_ledger(tmp_path)
    assert ledger.records.num_rows == 0 and isinstance(ledger.polls, pa.Table)


def test_the_crash_is_named_in_words(tmp_path: Path) -> None:
    _write_two_incarnations(tmp_path)
    ledger = read_consumer_ledger(tmp_path)
    never = [(0, offset, 0, 0) for offset in range(4, 10)]
    ranges = lost_ranges(never, ledger)
    assert [(r.first, r.last, r.cause, r.consumer, r.incarnation) for r in ranges] == [
        (4, 9, "crash", 0, 0)]
    assert ranges[0].commit_how == "auto" and ranges[0].commit_ts == 1001
    text = story(ranges)
    assert text.startswith("Offsets 4..9 of partition 0 were auto-committed at ")
    assert "consumer 0 crashed at" in text


def test_failed_processing_is_its_own_cause(tmp_path: Path) -> None:
    _write_two_incarnations(tmp_path)
    ranges = lost_ranges([(0, 4, 1, 0), (0, 5, 1, 0), (0, 6, 0, 0)],
                         read_consumer_ledger(tmp_path))
    assert [(r.first, r.last, r.cause) for r in ranges] == [(4, 5, "failed"), (6, 6, "crash")]


def test_polls_that_go_back_or_jump_are_counted() -> None:
    polls = pa.table({
        "consumer": [0, 0, 1, 1], "incarnation": [0, 0, 0, 0], "ts": [1, 2, 3, 4],
        "partition": [0, 0, 0, 0], "first_offset": [0, 10, 15, 40],
        "last_offset": [9, 19, 24, 49], "records": [10, 10, 10, 10]})
    counts = poll_anomalies(polls, {0: (0, 50)})
    assert counts == {"poll_skip": 1, "poll_skipped_records": 15, "nonmonotonic_poll": 1,
                      "redelivered_records": 5}


@pytest.mark.parametrize(("changes", "words"), [
    ({"commit": "sometimes"}, "--commit must be one of"),
    ({"commit": "transaction"}, "--commit transaction needs --output"),
    ({"output": "in"}, "--output must be another topic"),
    ({"crash_after": 10, "crash_at_s": 1.0}, "not both"),
    ({"fail_rate": 1.5}, "--fail-rate must be"),
    ({"consumers": 0}, "--consumers must be"),
    ({"isolation": "serializable"}, "--isolation must be one of"),
])
def test_settings_refuse_what_cannot_run(changes: dict[str, object], words: str) -> None:
    settings = ConsumeSettings(topic="in", bootstrap="127.0.0.1:9092", group="g")
    with pytest.raises(KinspectError, match=words):
        ConsumeSettings(**{**settings.__dict__, **changes}).validate()  # type: ignore[arg-type]


def test_settings_survive_the_run_dir_without_their_secrets(tmp_path: Path) -> None:
    settings = ConsumeSettings(topic="in", bootstrap="127.0.0.1:9092", group="g",
                               commit="auto", extra={"sasl.password": "hunter2"})
    settings.save(tmp_path)
    assert "hunter2" not in (tmp_path / "consumer" / "settings.json").read_text()
    loaded = ConsumeSettings.load(tmp_path)
    assert loaded.commit == "auto" and loaded.extra["sasl.password"] != "hunter2"


def test_a_registered_consumer_group_is_named_and_stopped_as_one() -> None:
    from kinspect.load.active import ActiveLoad

    group = ActiveLoad(1, "/runs/r1/consumer", "test1", "h:1", "consumer group",
                       "kinspect consume stop --run-dir /runs/r1")
    load = ActiveLoad(2, "/runs/r1", "test1", "h:1")
    assert group.what() == "the consumer group on test1"
    assert group.stop_command() == "kinspect consume stop --run-dir /runs/r1"
    assert load.what() == "the load on test1"
    assert load.stop_command() == "kinspect load stop --run-dir /runs/r1"


def test_lag_at_end_is_kafka_consumer_groups_lag() -> None:
    """High watermark less the committed offset, a commit at 0 included (kafka-consumer-groups
    says the same); never committed: from the log start."""
    from kinspect.load.consumers.group_run import PartitionOffsets

    assert PartitionOffsets(0, 0, 100, None).lag() == 100
    assert PartitionOffsets(0, 40, 100, None).lag() == 60
    assert PartitionOffsets(0, 40, 100, 0).lag() == 100  # was 60: 0 read as "never"
    assert PartitionOffsets(0, 40, 100, 70).lag() == 30
    assert PartitionOffsets(0, 0, 100, 100).lag() == 0


def test_a_scenarios_group_is_idle_only_after_its_load_ended(tmp_path: Path) -> None:
    """Records stop during a fault (every broker's power cut) for longer than idle_stop_s: a
    scenario's group keeps reading until its run dir's load has ended, then stops when idle."""
    from kinspect.load.consumers.consumer_worker import ConsumerWorker
    from kinspect.load.rundir import SUMMARY_FILE

    settings = ConsumeSettings(topic="t", bootstrap="127.0.0.1:1", group="g", idle_stop_s=20.0,
                               idle_after_load=True)
    worker = ConsumerWorker(settings, 0, 0, tmp_path)  # librdkafka connects only on poll
    try:
        worker.assigned_at = worker.last_record = 100.0
        assert not worker._idle(500.0)  # 400 s without a record, the load still running
        (tmp_path / SUMMARY_FILE).write_text("{}")
        assert not worker._idle(510.0)  # the load's end seen now: the clock starts here
        assert worker._idle(530.0)
        standalone = ConsumerWorker(replace(settings, idle_after_load=False), 1, 0, tmp_path)
        standalone.assigned_at = standalone.last_record = 100.0
        assert standalone._idle(120.0)  # `kinspect consume run --idle-stop 20`: as before
        standalone.consumer.close()
    finally:
        worker.consumer.close()
