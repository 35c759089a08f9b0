"""The scenario format and catalog, without a lab: parsing, validation, tables, the CLI's errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.scenarios.catalog import builtin, find
from kinspect.scenarios.spec import Condition, parse, read
from kinspect.scenarios.table import markdown_table, text_table
from tests.helpers import kinspect
from tests.helpers.scenario_runs import minimal

SOURCE_SEVEN = {"acks0-kill-leader", "acks1-kill-leader", "acks1-kill-leader-10p",
                "acksall-kill-leader-10p", "acks1-isolate-leader", "acksall-isolate-leader",
                "acks1-isolate-leader-zk", "acksall-isolate-leader-zk"}
OTHERS = {"unclean-election", "unclean-election-off", "min-isr-two-down", "short-retries",
          "duplicates", "duplicates-idempotent", "offsets-rf1", "slow-network",
          "slow-follower", "slow-network-unclean", "slow-network-min-isr-2"}


def test_catalog_has_every_named_scenario_with_2018_settings() -> None:
    scenarios = {s.name: s for s in builtin()}
    assert set(scenarios) >= SOURCE_SEVEN | OTHERS
    for name in SOURCE_SEVEN:
        s = scenarios[name]
        assert s.broker_config["min.insync.replicas"] == "1"
        assert s.preset == "demo" and s.load["retries"] == 0
        assert s.steps[0].at == pytest.approx(0.3) and s.steps[0].target == "leader"
        assert s.expect, name
    # What each source experiment must show (the 2018 outcomes), pinned so a reversed
    # expectation in a catalogue file cannot pass unnoticed.
    pinned = {name: scenarios[name].expectation_text() for name in SOURCE_SEVEN}
    assert pinned == {
        "acks0-kill-leader": "acked_lost in 1..20000 and faults_applied >= 1",
        "acks1-kill-leader": "acked_lost in 0..1000 and acked > 50000 and faults_applied >= 1",
        "acks1-kill-leader-10p":
            "acked_lost in 0..5000 and acked > 150000 and faults_applied >= 1",
        "acksall-kill-leader-10p": "acked_lost == 0 and acked > 0 and faults_applied >= 1",
        "acks1-isolate-leader":
            "acked_lost >= 1000 and lost_blamed_on_target >= 0.99 and faults_applied >= 1",
        "acksall-isolate-leader": "acked_lost == 0 and acked > 0 and faults_applied >= 1",
        "acks1-isolate-leader-zk":
            "acked_lost >= 1000 and lost_blamed_on_target >= 0.99 and faults_applied >= 1",
        "acksall-isolate-leader-zk": "acked_lost == 0 and acked > 0 and faults_applied >= 1"}
    assert scenarios["unclean-election"].topic_config["unclean.leader.election.enable"] == "true"
    assert scenarios["unclean-election-off"].topic_config["unclean.leader.election.enable"] == "false"
    # The slow-network family runs on any kernel: rate and loss, never netem's delay.
    slow = [s for s in scenarios.values() if s.name.startswith("slow-")]
    assert len(slow) == 4 and all(not s.needs for s in slow)
    shapes = [step.shape for s in slow for step in s.steps if step.shape is not None]
    assert len(shapes) == 4 and all(sh.rate_kbit and not sh.delay_ms for sh in shapes)



def test_minimal_scenario_gets_defaults() -> None:
    s = parse(minimal(fault=[{"at": 0.5, "do": "pause", "for_s": 3}],
                      expect={"acked_lost": "== 0"}), Path("mine.toml"))
    assert (s.topic, s.preset, s.brokers) == ("test1", "demo", 3)
    assert s.steps[0].target == "leader" and s.steps[0].for_s == 3
    assert s.expect == (Condition("acked_lost", "==", 0),)
    assert s.expect[0].holds({"acked_lost": 0}) and not s.expect[0].holds({"acked_lost": 2})
    assert not s.expect[0].holds({})  # a metric that was never measured does not hold


@pytest.mark.parametrize(("data", "message"), [
    (minimal(colour="red"), "unknown key 'colour'"),
    (minimal(fault=[{"do": "explode", "at": 0.1}]), "do must be one of"),
    (minimal(fault=[{"do": "kill"}]), "exactly one of at"),
    (minimal(fault=[{"do": "kill", "at": 3}]), "at must be between 0 and 1"),
    (minimal(fault=[{"do": "start", "at": 0.1, "for_s": 2}]), "cannot be undone"),
    (minimal(fault=[{"do": "kill", "at": 0.1, "target": "kafka"}]), "is not a role"),
    (minimal(expect={"acked_lost": "lots"}), "write e.g."),
    (minimal(expect={"happiness": "> 0"}), "unknown metric"),
    (minimal(lab={"preset": "ancient"}), "preset must be one of"),
    (minimal(load={"acks": "2"}), r"\[load\]: --acks must be 0, 1 or all"),
    (minimal(load={"acks": "1", "idempotent": True}), "idempotent needs --acks all"),
    ({"name": "x"}, "title is required"),
    ({k: v for k, v in minimal().items() if k != "load"}, r"\[load\] is required"),
    (minimal(expect={}), r"\[expect\] names no condition"),
    (minimal(topic={"replication_factor": 4}), "more than the lab's 3 brokers"),
    (minimal(fault=[{"do": "kill", "at": 0.1, "target": "kafka4"}]), "not in a lab of 3"),
    (minimal(fault=[{"do": "kill", "at": 0.1, "target": "@gone"}]), "names no earlier step"),
    (minimal(load={"rate": float("nan")}), "--rate must be a number"),
])
def test_bad_scenarios_are_one_line_errors(data: dict[str, object], message: str) -> None:
    with pytest.raises(KinspectError, match=message) as info:
        parse(data, Path("bad.toml"))
    assert str(info.value).startswith("bad.toml: ") and "\n" not in str(info.value)


def test_user_file_by_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\ntitle = "mine"\nwhy = "w"\n[load]\n[[fault]]\nat = 0.2\n'
                    'do = "isolate-zk"\n[expect]\nacked = "> 0"\n')
    assert find(str(path)).steps[0].do == "isolate-zk"
    path.write_text("name = [")
    with pytest.raises(KinspectError, match="not valid TOML"):
        read(path)


def test_cli_list_and_bad_input(tmp_path: Path) -> None:
    listed = json.loads(kinspect("scenario", "list", "--json").stdout)
    assert {entry["name"] for entry in listed} >= SOURCE_SEVEN | OTHERS
    unknown = kinspect("scenario", "run", "no-such-thing", check=False)
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert "unknown scenario" in unknown.stderr and "Traceback" not in unknown.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "b"\ntitle = "b"\nwhy = "w"\n[load]\nacks = 2\n[expect]\nacked = "> 0"\n')
    proc = kinspect("scenario", "run", str(bad), check=False)
    assert proc.returncode == 2 and "[load] acks must be a string" in proc.stderr
    repeat = kinspect("scenario", "matrix", "--repeat", "0", check=False)
    assert repeat.returncode == 2 and "--repeat" in repeat.stderr


def test_tables_show_rows_and_skips() -> None:
    ran = {"scenario": "acks1-isolate-leader", "status": "ran", "acked": 100000, "in_log": 40731,
           "acked_lost": 59269, "unacked_present": 0, "duplicates": 0, "failed": 0,
           "failover_ms": 5200, "unavailable_ms": 0, "expectation_met": True}
    failed = {**ran, "scenario": "x", "expectation_met": False,
              "expectation_failed": ["acked_lost == 0"]}
    skipped = {"scenario": "slow-network", "status": "skipped", "reason": "no netem",
               "expectation_met": None}
    text = text_table([ran, failed, skipped])
    assert "59,269" in text and "5.2 s" in text and "NO: acked_lost == 0" in text
    assert "skipped: no netem" in text
    md = markdown_table([ran, skipped]).splitlines()
    assert md[0].startswith("| scenario | acked |") and md[1].startswith("|---|---:")
    assert md[2].startswith("| acks1-isolate-leader | 100,000 | 40,731 | 59,269 |")


def test_the_table_says_what_the_client_and_the_group_did() -> None:
    base = {"scenario": "s", "status": "ran", "acked": 1, "expectation_met": True}
    grouped = {**base, "never_processed": 251, "processed_twice": 0, "client_lost": 0,
               "refused": 0}
    client = {**base, "client_lost": 3961, "refused": 0}
    text = text_table([grouped, client, base])
    assert "never processed 251; processed twice 0" in text
    assert "client lost 3,961" in text and "refused" not in text
    assert text.splitlines()[-1].split()[-2] == "-"  # a producer-only row: nothing to say


def test_matrix_out_replaces_only_its_block(tmp_path: Path) -> None:
    from kinspect.cli.scenario import MARK_END, MARK_START, write_table

    doc = tmp_path / "README.md"
    doc.write_text(f"intro\n{MARK_START}\nold table\n{MARK_END}\noutro\n")
    write_table(doc, "new table")
    assert doc.read_text() == f"intro\n{MARK_START}\nnew table\n{MARK_END}\noutro\n"
    unmarked = tmp_path / "notes.md"
    unmarked.write_text("my notes\n")
    with pytest.raises(KinspectError, match="not overwriting"):
        write_table(unmarked, "table")
    assert unmarked.read_text() == "my notes\n"
    fresh = tmp_path / "fresh.md"
    write_table(fresh, "table")
    assert fresh.read_text() == "table\n"


def test_a_result_row_holds_only_what_was_measured_and_planned() -> None:
    from kinspect.postmortem.story.values import Report
    from kinspect.scenarios.plan import PlanEntry, PlanLog
    from kinspect.scenarios.scenario_run import failover_ms, result_row

    scenario = find("acks1-isolate-leader")  # acked_lost >= 1000, blamed on the isolated broker
    report = Report.from_json({"acked": 5000, "in_log": 3000, "acked_lost": 2000, "explanation": "why",
              "attribution": [{"partition": 0, "leader_epoch": 0, "broker": 2, "count": 2000,
                               "method": "inferred"}],
              "timeline": [{"kind": "leader_changed", "ts": 1_500, "source": "observer",
                            "new": 3}]})
    log = PlanLog(entries=[PlanEntry(1_000, "isolate", ("kafka2",)),
                           PlanEntry(16_000, "heal", ("kafka2",))],
                  first_fault_ms=1_000)
    row = result_row(scenario, report, {}, log, {}, None)
    assert row["expectation_met"] is True and row["expectation_failed"] == []
    assert row["acked_lost"] == 2000 and row["failover_ms"] == 500 == failover_ms(report, 1_000)
    assert result_row(scenario, report, {}, log, {}, "the plan failed")["expectation_met"] is False
    unmeasured = result_row(scenario, Report.from_json({"acked": 100}), {}, log, {}, None)
    assert unmeasured["expectation_met"] is False
    assert unmeasured["expectation_failed"] == ["acked_lost >= 1000",
                                                "lost_blamed_on_target >= 0.99"]
