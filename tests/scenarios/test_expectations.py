"""Expectations that can fail: skipped or failed fault steps, the new metrics, range conditions,
and every built-in scenario pinning what its lesson is about. No lab: fakes and TOML text."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, cast

import pytest

from kinspect.errors import KinspectError
from kinspect.lab.backend import LabBackend
from kinspect.postmortem.story.values import Report
from kinspect.scenarios.catalog import builtin
from kinspect.scenarios.plan import FaultPlan, PlanEntry, PlanLog
from kinspect.scenarios.scenario_run import blamed_broker, lost_blamed_on_target, result_row
from kinspect.scenarios.spec import DISRUPTIVE, METRICS, Condition, FaultStep, Scenario, parse
from kinspect.scenarios.table import text_table

ISOLATE = """
name = "isolate-test"
title = "acks=1, isolate the leader"
why = "the isolated leader's acknowledged writes are truncated"

[load]
acks = "1"
count = 100000

[[fault]]
at = 0.3
do = "isolate"
target = "leader"
for_s = 15

[expect]
acked_lost = ">= 1000"
lost_blamed_on_target = ">= 0.99"
faults_applied = ">= 1"
"""

SKIP_REASON = "fault step skipped: isolate leader: the load ended before 30% was acknowledged"

# What each built-in scenario is about: the metric its lesson is read from. A new scenario
# must say here what it demonstrates.
LESSONS = {
    "power-loss-all-brokers": "lost_outside_power_cuts",
    "power-loss-flush-every-message": "acked_lost",
    "power-loss-last-isr": "lost_outside_power_cuts", "power-loss-last-isr-unclean": "acked_lost",
    "power-loss-last-isr-elr": "acked_lost", "power-loss-last-isr-elr-off": "acked_lost",
    "power-loss-group-commits": "lost_outside_power_cuts",
    "acks0-kill-leader": "acked_lost", "acks1-kill-leader": "acked_lost",
    "acks1-kill-leader-10p": "acked_lost", "acksall-kill-leader-10p": "acked_lost",
    "acks1-isolate-leader": "lost_blamed_on_target", "acksall-isolate-leader": "acked_lost",
    "acks1-isolate-leader-zk": "lost_blamed_on_target", "acksall-isolate-leader-zk": "acked_lost",
    "unclean-election": "acked_lost", "unclean-election-off": "no_leader_ms",
    "min-isr-two-down": "failed", "short-retries": "failed", "duplicates": "duplicates",
    "duplicates-idempotent": "duplicates", "offsets-rf1": "consumed_during_fault",
    "slow-network": "isr_min", "slow-follower": "slowed_left_isr_ms",
    "slow-network-unclean": "acked_lost", "slow-network-min-isr-2": "acked_lost",
    "consumer-autocommit-crash": "never_processed",
    "consumer-commit-before-process": "never_processed",
    "consumer-commit-after-process": "processed_twice",
    "transactions-offsets-outside": "never_processed",
    "transactions-offsets-inside": "never_processed", "producer-crash-buffer": "client_lost",
    "producer-buffer-full": "refused", "exactly-once-leader-kill": "never_processed",
    "elr-last-replica-returns": "elr_elections", "elr-off-last-replica-returns": "elr_elections",
    "kraft-quorum-lost": "unavailable_ms", "kraft-controller-cut-from-brokers": "unavailable_ms",
    "kraft-fenced-leader": "lost_blamed_on_target",
    "kraft-controller-and-leader-fail": "acked_lost"}
# The client's own faults (a planned crash, aborted transactions): a scenario whose fault is
# one of these pins, instead of faults_applied, that it happened.
CLIENT_FAULTS = ("consumer_crashes", "generator_crashes", "aborted_visible")
# Values any metric could take; a condition that holds for all of them pins nothing.
PROBES = (0, 0.5, 0.99, 1, 5, 999, 1000, 5001, 20001, 50000, 10**9)


def scenario(text: str = ISOLATE) -> Scenario:
    return parse(tomllib.loads(text), Path("isolate-test.toml"))


def lost_report(lost: int = 1000, attribution: list[dict[str, Any]] | None = None) -> Report:
    """A post-mortem report: `lost` acknowledged messages gone, all acknowledged by broker 2."""
    if attribution is None:
        attribution = [{"partition": 0, "leader_epoch": 0, "broker": 2, "count": lost,
                        "method": "inferred"}]
    return Report.from_json({"acked": 100000, "in_log": 100000 - lost, "acked_lost": lost,
                             "attribution": attribution, "timeline": []})


def isolated(node: str = "kafka2") -> PlanLog:
    return PlanLog(entries=[PlanEntry(1_000, "isolate", (node,)),
                            PlanEntry(16_000, "heal", (node,))], first_fault_ms=1_000)


def can_fail(condition: Condition) -> bool:
    return any(not condition.holds({condition.metric: value}) for value in PROBES)


# --- a fault that never happened fails the expectation, with its reason ------------------

def test_a_skipped_step_fails_the_expectation_with_its_reason() -> None:
    log = PlanLog(skipped=["isolate leader: the load ended before 30% was acknowledged"])
    row = result_row(scenario(), lost_report(), {}, log, {}, None)
    assert row["expectation_met"] is False
    assert row["expectation_failed"][0] == SKIP_REASON
    assert "faults_applied >= 1" in row["expectation_failed"]
    assert SKIP_REASON in text_table([row])  # the matrix row says why


def test_a_skipped_step_fails_even_when_every_number_holds() -> None:
    log = isolated()
    log.skipped.append("kill leader: the load ended before 90% was acknowledged")
    row = result_row(scenario(), lost_report(), {}, log, {}, None)
    assert row["expectation_failed"] == [
        "fault step skipped: kill leader: the load ended before 90% was acknowledged"]
    assert row["expectation_met"] is False


def test_a_failed_plan_fails_the_expectation_with_its_reason() -> None:
    row = result_row(scenario(), lost_report(), {}, isolated(), {}, "kafka2 did not stop")
    assert row["expectation_failed"] == ["fault plan failed: kafka2 did not stop"]
    assert row["expectation_met"] is False and row["notes"] == row["expectation_failed"]


class NoLab:
    """A lab that is not there: the plan below never reaches it."""

    def state(self) -> None:
        return None


def plan(tmp_path: Path, text: str) -> FaultPlan:
    steps = scenario(text).steps
    return FaultPlan(steps, cast(LabBackend, NoLab()), cast(Any, None), "test1", tmp_path, 100000,
                     lambda _: None)


def test_the_plan_records_a_step_whose_moment_never_came(tmp_path: Path) -> None:
    fault_plan = plan(tmp_path, ISOLATE)
    fault_plan.load_done.set()  # the load is over and nothing was acknowledged
    fault_plan.run()
    assert fault_plan.log.skipped == ["isolate leader: the load ended before 30% was acknowledged"]
    assert fault_plan.error is None and fault_plan.log.entries == []
    row = result_row(scenario(), lost_report(), {}, fault_plan.log, {}, fault_plan.error)
    assert row["expectation_failed"] == [SKIP_REASON, "lost_blamed_on_target >= 0.99",
                                         "faults_applied >= 1"]


def test_the_plan_records_why_it_failed(tmp_path: Path) -> None:
    """A file naming @nobody is refused when read; a plan built otherwise still fails in words."""
    text = ISOLATE.replace('at = 0.3\ndo = "isolate"\ntarget = "leader"',
                           'after_s = 0\ndo = "kill"\ntarget = "@nobody"')
    with pytest.raises(KinspectError, match="names no earlier step"):
        scenario(text)
    steps = (FaultStep(do="kill", target="@nobody", after_s=0),)
    fault_plan = FaultPlan(steps, cast(LabBackend, NoLab()), cast(Any, None), "test1", tmp_path,
                           100000, lambda _: None)
    fault_plan.run()
    assert fault_plan.error == "target @nobody names nothing remembered by an earlier step"
    row = result_row(scenario(), lost_report(), {}, fault_plan.log, {}, fault_plan.error)
    assert row["expectation_failed"][0] == (
        "fault plan failed: target @nobody names nothing remembered by an earlier step")


# --- faults_applied, lost_blamed_on_target, blamed_broker ---------------------------------

def test_faults_applied_counts_only_the_steps_that_broke_something() -> None:
    log = PlanLog(entries=[PlanEntry(1, do, ("kafka1",)) for do in
                           ("pause", "resume", "kill", "start", "isolate-zk", "heal", "slow",
                            "unslow")])
    row = result_row(scenario(), lost_report(), {}, log, {}, None)
    assert row["faults_applied"] == 4
    assert set(DISRUPTIVE) == {"kill", "stop", "pause", "isolate", "isolate-zk",
                               "isolate-brokers", "partition", "slow", "power-off"}


def test_no_fault_at_all_is_not_met() -> None:
    row = result_row(scenario(), lost_report(), {}, PlanLog(), {}, None)
    assert row["faults_applied"] == 0 and row["lost_blamed_on_target"] is None
    assert row["expectation_failed"] == ["lost_blamed_on_target >= 0.99", "faults_applied >= 1"]


def test_loss_blamed_on_the_isolated_broker() -> None:
    row = result_row(scenario(), lost_report(), {}, isolated("kafka2"), {}, None)
    assert row["lost_blamed_on_target"] == 1.0 and row["blamed_broker"] == 2
    assert row["expectation_met"] is True


def test_loss_blamed_elsewhere_fails_the_isolation_expectation() -> None:
    row = result_row(scenario(), lost_report(), {}, isolated("kafka3"), {}, None)
    assert row["lost_blamed_on_target"] == 0.0 and row["blamed_broker"] == 2
    assert row["expectation_failed"] == ["lost_blamed_on_target >= 0.99"]


def test_blame_is_a_share_over_partitions_and_epochs() -> None:
    attribution: list[dict[str, Any]] = [
        {"partition": 0, "leader_epoch": 1, "broker": 2, "count": 900, "method": "inferred"},
        {"partition": 1, "leader_epoch": 3, "broker": 2, "count": 95, "method": "measured"},
        {"partition": 0, "leader_epoch": 2, "broker": 3, "count": 3, "method": "inferred"},
        {"partition": 0, "leader_epoch": None, "broker": None, "count": 2, "method": "inferred"}]
    report = lost_report(1000, attribution)
    assert lost_blamed_on_target(report, isolated("kafka2")) == pytest.approx(0.995)
    assert lost_blamed_on_target(report, isolated("kafka3")) == pytest.approx(0.003)
    assert blamed_broker(report) == 2


def test_blame_is_none_when_nothing_was_lost_or_no_broker_was_hit() -> None:
    assert lost_blamed_on_target(lost_report(0, []), isolated()) is None
    assert lost_blamed_on_target(lost_report(), isolated("zk1")) is None
    assert lost_blamed_on_target(lost_report(), PlanLog()) is None
    assert lost_blamed_on_target(Report(), isolated()) is None  # not measured
    assert blamed_broker(lost_report(0, [])) is None


def test_blame_follows_the_first_disruptive_step_only() -> None:
    log = PlanLog(entries=[PlanEntry(1, "start", ("kafka3",)),  # not disruptive
                           PlanEntry(2, "kill", ("kafka1", "kafka2")),
                           PlanEntry(3, "kill", ("kafka3",))])
    assert lost_blamed_on_target(lost_report(), log) == 1.0  # broker 2 was among the first hit


# --- conditions: ranges and fractions ------------------------------------------------------

def test_range_conditions_include_both_ends() -> None:
    band = scenario(ISOLATE.replace('acked_lost = ">= 1000"', 'acked_lost = "0..2000"')).expect[0]
    assert band == Condition("acked_lost", "..", 0, 2000) and str(band) == "acked_lost in 0..2000"
    assert [band.holds({"acked_lost": n}) for n in (0, 2000, 2001)] == [True, True, False]
    assert not band.holds({"acked_lost": None})


def test_fractions_compare_as_numbers() -> None:
    share = scenario().expect[1]
    assert share == Condition("lost_blamed_on_target", ">=", 0.99)
    assert share.holds({"lost_blamed_on_target": 1.0})
    assert not share.holds({"lost_blamed_on_target": 0.98})


@pytest.mark.parametrize(("value", "message"), [
    ("2000..0", "the range is empty"),
    ("0..", "write e.g."),
    ("1..2..3", "write e.g."),
    ("-1..5", "write e.g."),
    ("about 5", "write e.g."),
])
def test_bad_conditions_are_one_line_naming_file_and_key(value: str, message: str) -> None:
    text = ISOLATE.replace('acked_lost = ">= 1000"', f'acked_lost = "{value}"')
    with pytest.raises(KinspectError, match=message) as info:
        scenario(text)
    error = str(info.value)
    assert error.startswith("isolate-test.toml: [expect] acked_lost = ") and "\n" not in error


# --- every built-in scenario pins its lesson and that its fault happened -------------------

def test_every_metric_is_documented() -> None:
    assert all(text.strip() for text in METRICS.values())
    assert {"faults_applied", "lost_blamed_on_target", "unavailable_total_ms"} <= set(METRICS)


def test_every_builtin_scenario_says_what_its_lesson_is() -> None:
    assert {s.name for s in builtin()} == set(LESSONS)


@pytest.mark.parametrize("name", sorted(LESSONS))
def test_each_scenario_pins_its_lesson_with_a_condition_that_can_fail(name: str) -> None:
    found = next(s for s in builtin() if s.name == name)
    lesson = [c for c in found.expect if c.metric == LESSONS[name]]
    assert lesson and all(can_fail(c) for c in lesson), (name, found.expectation_text())


@pytest.mark.parametrize("found", builtin(), ids=lambda s: s.name)
def test_each_scenario_pins_that_its_faults_happened(found: Scenario) -> None:
    """faults_applied must demand every disruptive step of the plan: one fewer fails. A
    scenario whose fault is the client's (no lab step) pins that fault instead."""
    planned = sum(step.do in DISRUPTIVE for step in found.steps)
    if planned == 0:
        client = [c for c in found.expect if c.metric in CLIENT_FAULTS]
        assert client and all(not c.holds({c.metric: 0}) for c in client), found.name
        return
    applied = [c for c in found.expect if c.metric == "faults_applied"]
    assert applied, f"{found.name} does not pin faults_applied"
    assert all(c.holds({"faults_applied": planned}) for c in applied), found.name
    assert not all(c.holds({"faults_applied": planned - 1}) for c in applied), found.name


@pytest.mark.parametrize("found", builtin(), ids=lambda s: s.name)
def test_no_scenario_rests_on_trivial_conditions(found: Scenario) -> None:
    """`acked > 0` alone proves nothing: some condition on what the run demonstrates must be
    able to fail."""
    bookkeeping = {"acked", "faults_applied"}
    assert any(can_fail(c) for c in found.expect if c.metric not in bookkeeping), found.name
