"""The post-mortem on real Spark (local mode), against run dirs whose answers are known exactly.

One SparkSession for the module: Spark takes seconds to start on a 2-core machine.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kinspect.postmortem import run_postmortem
from kinspect.postmortem.lost_set import read_lost
from kinspect.postmortem.story.values import Report
from tests.helpers.oracles import duckdb_answers, duckdb_rewritten
from tests.helpers.rundirs import EXPECTED_A, T0, clean_run, scenario_a, write_final_log

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from kinspect.postmortem.spark.job import start_spark

    session = start_spark("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def report_a(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, list[str]]:
    run = scenario_a(tmp_path_factory.mktemp("pm") / "run")
    lines: list[str] = []
    report = run_postmortem(run, spark=spark, progress=lines.append)
    return report, lines


def test_exact_counts(report_a: tuple[Report, list[str]]) -> None:
    report = report_a[0].to_json()
    assert {k: report[k] for k in EXPECTED_A} == EXPECTED_A
    assert report_a[0].engine.startswith("pyspark 4.")


def test_three_valued_answers_equal_duckdbs_recount(report_a: tuple[Report, list[str]]) -> None:
    """Run A's sends as ok, failed and indefinite, recounted in DuckDB from the ledger's
    Parquet files, their footers and marks, against the final log's ids: seq 15 failed with a
    definite error and is in the log; seq 16 timed out (indefinite) and is too."""
    import duckdb

    report = report_a[0]
    final_log = str(Path(report.run_dir) / "final_log" / "*.parquet")
    ids = duckdb.sql(f"SELECT producer, seq FROM read_parquet('{final_log}') "
                     "WHERE producer IS NOT NULL").fetchall()
    recount = duckdb_answers(Path(report.run_dir), Counter(f"{p}-{s}" for p, s in ids))
    assert recount == {"ok": report.acked, "failed_definite": 1, "indefinite": report.indefinite,
                       "indefinite_present": report.indefinite_present,
                       "failed_present": report.failed_present}
    assert (report.failed, report.indefinite, report.indefinite_present,
            report.failed_present) == (2, 11, 3, 1)


def test_rewritten_offsets_equal_duckdbs_recount(report_a: tuple[Report, list[str]]) -> None:
    """Run A's acked offsets that its final log holds another record at: partition 0's lost
    seqs 5, 9, 10 and 13, and 7, 11, 12 and 14, in the log at other offsets (each acked offset
    now holds a later seq); partition 1's seq 12, acked at 12, where a foreign record sits."""
    import duckdb

    report = report_a[0]
    final_log = str(Path(report.run_dir) / "final_log" / "*.parquet")
    records = duckdb.sql(f"SELECT partition, \"offset\", id FROM read_parquet('{final_log}')"
                         ).fetchall()
    assert report.offsets_rewritten == duckdb_rewritten(Path(report.run_dir), records) == 9
    by_partition: Counter[int] = Counter()
    for row in report.rewritten:
        by_partition[row.pp] += row.count
    assert by_partition == {0: 8, 1: 1}
    assert {(r.pp, r.acked_epoch, r.held_epoch) for r in report.rewritten} >= {(1, 3, 3)}


def test_per_partition(report_a: tuple[Report, list[str]]) -> None:
    rows = {p.partition: p.to_json() for p in report_a[0].partitions}
    assert sorted(rows) == [0, 1, 2]
    assert {k: rows[0][k] for k in ("acked", "failed", "unknown", "in_log", "acked_lost",
                                    "unacked_present", "duplicates", "reordered", "lost_by_epoch")} == {
        "acked": 15, "failed": 2, "unknown": 1, "in_log": 15, "acked_lost": 4, "unacked_present": 3,
        "duplicates": 1, "reordered": 1, "lost_by_epoch": {"1": 2, "2": 2}}
    assert {k: rows[1][k] for k in ("acked", "in_log", "foreign", "acked_lost", "unacked_present",
                                    "not_in_ledger")} == {
        "acked": 11, "in_log": 14, "foreign": 1, "acked_lost": 0, "unacked_present": 2,
        "not_in_ledger": 1}
    # No final log for partition 2: everything acked there is lost, and said so.
    assert rows[2]["final_log"] is False and rows[2]["in_log"] == 0
    assert rows[2]["acked_lost"] == 5 and rows[2]["lost_by_epoch"] == {"7": 5}


def test_attribution(report_a: tuple[Report, list[str]]) -> None:
    report = report_a[0]
    assert [(a.partition, a.leader_epoch, a.broker, a.count) for a in report.attribution] \
        == [(2, 7, 3, 5), (0, 1, 1, 2), (0, 2, 2, 2)]
    top = report.attribution[0]
    assert (top.first_ack_ts, top.last_ack_ts) == (T0 + 7, T0 + 47)
    assert report.explanation.startswith("9 acknowledged messages were lost: broker 3")


def test_timeline_and_unavailability(report_a: tuple[Report, list[str]]) -> None:
    report = report_a[0]
    assert report.fault is not None
    assert report.fault["ts"] == T0 + 98 and report.fault["node"] == "kafka1"
    kinds = [e["kind"] for e in report.timeline]
    assert "fault" in kinds and "leader_changed" in kinds and "log_leader_start" in kinds
    fault = next(e for e in report.timeline if e["kind"] == "fault")
    assert fault["delta_ms"] == 0
    assert [(w.partition, w.start, w.end) for w in report.unavailable] == [
        ("t-1", T0 + 96, T0 + 5000), ("t-1", T0 + 200, T0 + 1200)]


def test_outputs_written(report_a: tuple[Report, list[str]]) -> None:
    out = Path(report_a[0].out)
    saved = json.loads((out / "report.json").read_text())
    assert saved["schema_version"] == 2 and Report.from_json(saved) == report_a[0]
    assert saved["acked_lost"] == 9 and saved["lost_ranges"] == EXPECTED_A["lost_ranges"]
    md = (out / "report.md").read_text()
    assert "9 acknowledged messages were lost" in md and "| acked lost | 9 |" in md
    assert "no final log" in md  # partition 2
    assert (out / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    assert any(line.startswith("reading ledger (36 rows") for line in report_a[1])


def test_clean_run_zero_loss_and_no_timeline(spark: Any, tmp_path: Path) -> None:
    run = clean_run(tmp_path / "run")
    report = run_postmortem(run, out=tmp_path / "out", spark=spark, chart=False)
    assert (report.sent, report.acked, report.in_log, report.acked_lost) == (100, 100, 100, 0)
    assert report.duplicates == report.reordered == report.unacked_present == 0
    assert report.explanation.startswith("No acknowledged message was lost: all 100 acknowledged")
    assert report.timeline == () and report.fault is None
    lost = read_lost(tmp_path / "out", report.acked_lost)
    assert lost is not None and lost.num_rows == 0 and not (tmp_path / "out" / "lost.parquet").exists()
    assert any("no timeline was recorded" in n for n in report.notes)
    assert "No timeline was recorded" in (tmp_path / "out" / "report.md").read_text()


def test_a_final_log_without_prev_seq_is_judged_the_same(spark: Any,
                                                         report_a: tuple[Report, list[str]],
                                                         tmp_path: Path) -> None:
    """A final log verified before prev_seq existed: the post-mortem sorts it itself and
    reaches the same report (reordering included)."""
    import pyarrow.parquet as pq

    run = scenario_a(tmp_path / "run")
    for part in (run / "final_log").glob("part-*.parquet"):
        table = pq.read_table(part)
        assert "prev_seq" in table.column_names
        pq.write_table(table.drop_columns(["prev_seq"]), part)
    report = run_postmortem(run, spark=spark, chart=False)
    assert {k: report.to_json()[k] for k in EXPECTED_A} == EXPECTED_A
    assert report.partitions == report_a[0].partitions


def test_unknown_tail_only_and_many_ranges(spark: Any, tmp_path: Path) -> None:
    """Every other seq lost: 60 ranges, capped at 50 with the rest counted; the unknown tail
    comes only from sent_upto."""
    from kinspect.load.ack_ledger import LedgerWriter

    run = tmp_path / "run"
    writer = LedgerWriter(run, 0, "t", "1")
    for seq in range(120):
        writer.record(seq, 0, seq, 3, "acked", None, T0 + seq, T0 + seq + 1)
    writer.note_sent(129, T0)
    writer.flush()
    write_final_log(run, 0, [(0, s, 3) for s in range(0, 120, 2)])
    report = run_postmortem(run, spark=spark, chart=False)
    assert (report.sent, report.unknown, report.acked_lost) == (130, 10, 60)
    assert len(report.lost_ranges["0"]) == 50 and report.lost_ranges_more == {"0": 10}
    assert report.lost_ranges["0"][:2] == ((1, 1), (3, 3))
    assert report.attribution[0].broker is None  # nothing says who led epoch 3
    # The lost set holds every lost message, past the report's cap: as DuckDB finds them over
    # the ledger and the final log, with the ack time the ledger gave each.
    lost = read_lost(Path(report.out), report.acked_lost)
    assert lost is not None
    import duckdb

    recount = duckdb.sql(
        f"select producer, seq, ack_ts from read_parquet('{run}/ledger/*.parquet') "
        f"where status = 'acked' and (producer, seq) not in "
        f"(select (producer, seq) from read_parquet('{run}/final_log/*.parquet')) "
        "order by seq").fetchall()
    assert len(recount) == 60
    assert sorted(zip(*(lost.column(c).to_pylist() for c in ("producer", "seq", "ack_ts")),
                      strict=True)) == recount


def test_cli_json_and_quiet_stderr(tmp_path: Path) -> None:
    """The real command: --json prints exactly the report; Spark's noise stays out of stderr."""
    run = clean_run(tmp_path / "run")
    proc = subprocess.run([sys.executable, "-m", "kinspect", "postmortem", str(run), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["acked"] == 100 and report["acked_lost"] == 0
    assert "starting Spark (local[2])" in proc.stderr
    for bad in ("WARN", "INFO", "log4j", "Exception", "Traceback", "Setting default log level"):
        assert bad not in proc.stderr, proc.stderr
    human = subprocess.run([sys.executable, "-m", "kinspect", "postmortem", str(run), "--no-chart",
                            "--out", str(tmp_path / "o2")], capture_output=True, text=True, timeout=300)
    assert human.returncode == 0 and "acked but lost 0" in human.stdout
    assert (tmp_path / "o2" / "report.md").exists() and not (tmp_path / "o2" / "timeline.png").exists()


def test_bad_master_is_one_line(tmp_path: Path) -> None:
    """A master of the right shape that Spark refuses (a malformed one is refused before Spark
    starts: see tests/cli/test_bad_input.py)."""
    run = clean_run(tmp_path / "run")
    proc = subprocess.run([sys.executable, "-m", "kinspect", "postmortem", str(run), "--master",
                           "local[0]"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("kinspect: error:")]
    assert len(errors) == 1 and "cannot start Spark (local[0])" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("with_segments", [False, True], ids=["inferred", "measured"])
def test_a_zombie_leaders_acks_are_blamed_on_the_zombie(spark: Any, tmp_path: Path,
                                                        with_segments: bool) -> None:
    """Acks that arrive after the new leader's election but come from the isolated old leader
    (the issue's wrong-broker bug) are blamed on the old leader, from its history or its bytes."""
    from tests.helpers.rundirs import zombie_run

    report = run_postmortem(zombie_run(tmp_path / "run", with_segments), spark=spark, chart=False)
    assert report.acked_lost == 100 and report.in_log == 100
    method = "measured" if with_segments else "inferred"
    assert [(a.broker, a.leader_epoch, a.count, a.method)
            for a in report.attribution] == [(2, 0, 100, method)]
    assert report.explanation.startswith("100 acknowledged messages were lost: broker 2 "
                                            "acknowledged them at leader epoch 0")


def _clock(ms: int) -> str:
    """T0 + ms as the paragraph shows it (local wall clock, tenths), computed here."""
    moment = datetime.fromtimestamp((T0 + ms) / 1000)
    return f"{moment:%H:%M:%S}.{moment.microsecond // 100_000}"


STORIES = {
    # ZooKeeper's log and the observer: when ZooKeeper expired the session, by its clock
    "zookeeper's clock": (True, True, (
        f"; ZooKeeper expired broker 2's session at {_clock(1940)} (ZooKeeper's own log; the "
        f"observer saw it too); the controller then made broker 3 leader at {_clock(2000)} "
        f"(epoch 1), while broker 2 still acknowledged writes until {_clock(2975)}; broker 2 "
        f"itself learned of it only at {_clock(19_990)}, when it reached ZooKeeper again")),
    # what the stage's run had: only broker 2's own line, logged on reconnecting after the heal
    "only the broker's late line": (False, False, (
        f"; the controller had already made broker 3 leader at {_clock(2000)} (epoch 1); "
        f"broker 2 learned at {_clock(19_990)}, on reaching ZooKeeper again, that ZooKeeper "
        "had expired its session")),
}


@pytest.mark.parametrize("story", list(STORIES))
def test_the_story_of_an_isolated_controller_is_told_in_time_order(
        spark: Any, tmp_path: Path, story: str) -> None:
    """Issue 34: broker 2 logs its session's expiry only when it reconnects after the heal, so
    the paragraph once said it "lost ZooKeeper" after the controller "then" elected broker 3,
    18 s earlier. Every moment is now told in time order, by the clock that saw it, and the
    controller's move (recorded in three steps) is one line of the timeline."""
    from tests.helpers.rundirs import isolated_controller_run

    observed, zookeeper_log, middle = STORIES[story]
    run = isolated_controller_run(tmp_path / "run", observed, zookeeper_log)
    report = run_postmortem(run, spark=spark, chart=False)
    assert report.explanation == (
        "100 acknowledged messages were lost: broker 2 acknowledged them at leader epoch 0 "
        f"(inferred from the brokers' leadership history) between {_clock(500)} and "
        f"{_clock(2975)}, after the fault (partition kafka2 at {_clock(400)})" + middle
        + "; when broker 2 came back it truncated its log to offset 50. 50 acknowledged "
        "offsets hold another record in the final log (Jepsen's inconsistent offsets: the log "
        "was truncated there and written again), most in partition 0, written over at leader "
        "epoch 1; the first successful acknowledgement after the fault came 10 ms after it.")
    moments = report.explanation.split(". ")[0].split("after the fault (")[1]
    told = re.findall(r"\d\d:\d\d:\d\d\.\d", moments)
    assert told == sorted(told)  # as text: the run lasts 20 s, nowhere near midnight
    controller = [(e["detail"], e.get("sources")) for e in report.timeline
                  if e["kind"] in ("controller_changed", "log_controller_elected")]
    assert controller == ([("controller 2 → 1 (epoch 2)", ["observer", "controller log"])]
                          if observed else [("broker 1 elected controller (epoch 2)", None)])


def test_the_engine_warms_on_the_newest_demo_sized_run_and_leaves_it_as_it_was(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kinspect.postmortem import warm as warmup

    runs = tmp_path / "runs"
    old, new = warmup.make_warmup_run(runs / "old"), warmup.make_warmup_run(runs / "new")
    (old / "settings.json").touch()  # the newest by its settings file: touched last
    def files() -> dict[Path, tuple[int, int]]:
        return {p.relative_to(old): (p.stat().st_size, p.stat().st_mtime_ns) for p in old.rglob("*")}

    before = files()
    assert warmup.warm_on_latest_run(spark, runs) == old
    assert files() == before  # nothing written, added or changed in the run dir
    monkeypatch.setattr(warmup, "LATEST_RUN_ROWS", 100)  # a benchmark's run: not warmed on
    assert warmup.warm_on_latest_run(spark, runs) is None
    (new / "settings.json").touch()
    (new / "ledger").rename(new / "gone")  # a run dir it cannot judge: no warm pass, no error
    monkeypatch.setattr(warmup, "LATEST_RUN_ROWS", 10**9)
    assert warmup.warm_on_latest_run(spark, runs) is None
    assert warmup.warm_on_latest_run(spark, tmp_path / "none") is None


def test_report_json_is_the_one_written_before_it_was_typed(
        report_a: tuple[Report, list[str]], update_goldens: bool) -> None:
    """report.json of run A, key for key and in order, as the dict-built report wrote it before
    the report became `Report` (tests/postmortem/data, kept from that code; the machine-bound
    values — paths, seconds, the pyspark version — left out): a typed report changes no byte."""
    written = json.loads((Path(report_a[0].run_dir) / "postmortem" / "report.json").read_text())
    assert written.pop("schema_version") == 2
    for volatile in ("seconds", "out", "run_dir"):
        written.pop(volatile)
    written["engine"] = "pyspark"
    # One change since, on purpose: a skipped line of the run dir is said (run A's torn last
    # line, 6 of timeline.jsonl); the golden's code dropped it in silence.
    assert written["notes"] == [
        "timeline.jsonl: 1 line skipped, not JSON (a torn or garbled line): line 6"]
    written["notes"] = []
    path = Path(__file__).parent / "data" / "scenario_a_report.json"
    if update_goldens:  # an intended change: rewritten, and its diff reviewed
        path.write_text(json.dumps(written, indent=1) + "\n")
    golden = json.loads(path.read_text())
    assert list(written) == list(golden)
    assert written == golden


def test_a_report_whose_counts_disagree_with_the_match_is_never_written(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The attribution's rows say 9 acknowledged messages were lost; were the ids the match
    found missing one more (an id lost between the two), the post-mortem stops before it
    writes anything, rather than report either number. Without the check this run's report
    would be written with 9."""
    from dataclasses import replace

    from kinspect.postmortem import run as pm_run
    from kinspect.postmortem.story.values import InconsistentReport

    real = pm_run._run_queries
    monkeypatch.setattr(pm_run, "_run_queries", lambda *args: replace(
        real(*args), lost_total=10))
    run = scenario_a(tmp_path / "run")
    with pytest.raises(InconsistentReport, match=r"acked_lost \(9\) is not .* \(10\)"):
        run_postmortem(run, out=tmp_path / "out", spark=spark, chart=False)
    assert not (tmp_path / "out" / "report.json").exists()
