"""Where a scenario runs: a mode and a Kafka release, and what each platform cannot show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinspect.cli.scenario import write_tables
from kinspect.errors import KinspectError
from kinspect.lab.dist import DEFAULT_KAFKA_4, kafka_version
from kinspect.model.views import PartitionStateZ
from kinspect.scenarios.catalog import builtin
from kinspect.scenarios.plan import resolve
from kinspect.scenarios.platform import Platform, platforms
from kinspect.scenarios.scenario_run import lab_options
from kinspect.scenarios.spec import parse
from tests.helpers import kinspect
from tests.helpers.scenario_runs import minimal

PINNED = kafka_version()



def test_modes_times_releases_leave_out_zookeeper_on_4x() -> None:
    chosen, dropped = platforms(("zookeeper", "kraft"), (PINNED, "4.x"))
    assert [p.label for p in chosen] == [f"ZooKeeper {PINNED}", f"KRaft {PINNED}",
                                        f"KRaft {DEFAULT_KAFKA_4}"]
    assert dropped == [f"ZooKeeper {DEFAULT_KAFKA_4}: no ZooKeeper mode in 4.x, left out"]
    # no --modes: each release in its own default mode; an alias and its release are one
    assert platforms(None, (PINNED, "4", DEFAULT_KAFKA_4))[0] == [
        Platform("zookeeper", PINNED), Platform("kraft", DEFAULT_KAFKA_4)]


@pytest.mark.parametrize(("needs", "features", "platform", "why"), [
    ((), False, Platform("zookeeper", PINNED), None),
    (("kraft",), False, Platform("zookeeper", PINNED), "needs a KRaft lab"),
    (("kraft",), False, Platform("kraft", PINNED), None),
    (("elr",), False, Platform("kraft", PINNED), "needs Kafka 4.x"),
    (("elr",), False, Platform("zookeeper", PINNED), "needs a KRaft lab"),
    ((), True, Platform("kraft", PINNED), "needs Kafka 4.x"),
    (("elr",), True, Platform("kraft", DEFAULT_KAFKA_4), None),
    ((), False, Platform("zookeeper", DEFAULT_KAFKA_4), "no ZooKeeper mode"),
])
def test_a_platform_says_why_it_cannot_show_a_scenario(
        needs: tuple[str, ...], features: bool, platform: Platform, why: str | None) -> None:
    said = platform.refuses(needs, features)
    assert (said is None) if why is None else (said is not None and why in said)


def test_the_lab_a_scenario_asks_for_on_each_platform() -> None:
    elr = next(s for s in builtin() if s.name == "elr-off-last-replica-returns")
    options = lab_options(elr, Platform("kraft", DEFAULT_KAFKA_4))
    assert options.features == {"eligible.leader.replicas.version": 0}
    assert (options.mode, options.kafka) == ("kraft", DEFAULT_KAFKA_4)
    options.validate()
    quorum = next(s for s in builtin() if s.name == "kraft-quorum-lost")
    assert lab_options(quorum, Platform("kraft", PINNED)).controllers == 3
    plain = next(s for s in builtin() if s.name == "acks1-kill-leader")
    zk = lab_options(plain, Platform("zookeeper", PINNED))
    assert (zk.controllers, zk.features, zk.kafka) == (None, {}, PINNED)


def test_new_scenarios_pin_what_they_show() -> None:
    """ELR on and off differ in what their expectations pin; KRaft's own failure modes need a
    quorum, and those that break it have three voters."""
    scenarios = {s.name: s for s in builtin()}
    on, off = scenarios["elr-last-replica-returns"], scenarios["elr-off-last-replica-returns"]
    assert "elr_elections >= 1" in on.expectation_text()
    assert "elr_elections == 0" in off.expectation_text()
    assert on.steps == off.steps and on.needs == off.needs == ("elr",)
    kraft = [s for s in scenarios.values() if s.name.startswith("kraft-")]
    assert len(kraft) == 4 and all(s.needs == ("kraft",) for s in kraft)
    assert scenarios["kraft-quorum-lost"].controllers == 3


@pytest.mark.parametrize(("lab", "needs", "message"), [
    ({"controllers": 3}, [], r"\[lab\] controllers is for KRaft"),
    ({"controllers": 9}, ["kraft"], "controllers must be"),
    ({"features": {"eligible.leader.replicas.version": 0}}, ["kraft"], "need Kafka 4.x"),
    ({"features": {"Bad Name": 1}}, ["elr"], "not a feature name"),
    ({"features": {"eligible.leader.replicas.version": "on"}}, ["elr"], "whole number"),
])
def test_bad_lab_platform_keys_are_one_line(lab: dict[str, object], needs: list[str],
                                            message: str) -> None:
    with pytest.raises(KinspectError, match=message):
        parse(minimal(lab=lab, needs=needs), Path("bad.toml"))


def test_controller_targets_must_be_the_scenarios_own() -> None:
    steps = [{"do": "kill", "at": 0.1, "target": "ctl3"}]
    assert parse(minimal(lab={"controllers": 3}, needs=["kraft"], fault=steps),
                 Path("ok.toml")).steps[0].target == "ctl3"
    with pytest.raises(KinspectError, match="not one of the scenario's dedicated controllers"):
        parse(minimal(lab={"controllers": 2}, needs=["kraft"], fault=steps), Path("bad.toml"))
    with pytest.raises(KinspectError, match="needs may only list"):
        parse(minimal(needs=["zookeeper"]), Path("bad.toml"))


def test_cli_refuses_zookeeper_on_4x_and_bad_releases() -> None:
    refused = kinspect("scenario", "run", "acks1-kill-leader", "--kafka", "4.x",
                       "--mode", "zookeeper", check=False)
    assert refused.returncode == 2 and "no ZooKeeper mode" in refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    bad = kinspect("scenario", "matrix", "--kafka", "3.9.2,2.8.0", check=False)
    assert bad.returncode == 2 and "3.9.x" in bad.stderr and "Traceback" not in bad.stderr


class FakeDecisions:
    """A fake of the controller's decisions (the Decisions protocol), named as one: test1-0
    led by broker 1 on replicas 1, 2, 3 with the ISR given."""

    def __init__(self, isr: tuple[int, ...]) -> None:
        self.isr = isr

    def partition(self, topic: str, partition: int) -> PartitionStateZ | None:
        return PartitionStateZ(leader=1, leader_epoch=0, isr=self.isr, controller_epoch=0)

    def leaders(self, topic: str) -> dict[int, int | None]:
        return {0: 1}

    def replicas(self, topic: str) -> dict[int, tuple[int, ...]]:
        return {0: (1, 2, 3)}

    def controller(self) -> int | None:
        return 101


def test_a_second_follower_step_hits_the_follower_still_in_sync() -> None:
    """The ELR lessons stop one follower, then "the follower": the other one, not the first
    again (it left the ISR when it stopped)."""
    assert resolve("follower", FakeDecisions((1, 2, 3)), "test1", {}, []) == ["kafka2"]
    assert resolve("follower", FakeDecisions((1, 3)), "test1", {}, []) == ["kafka3"]
    assert resolve("follower", FakeDecisions((1,)), "test1", {}, []) == ["kafka2"]
    assert resolve("followers", FakeDecisions((1,)), "test1", {}, []) == ["kafka2", "kafka3"]
    assert resolve("controller", FakeDecisions((1,)), "test1", {}, []) == ["ctl1"]


def _row(name: str, mode: str, kafka: str, lost: int, **extra: object) -> dict[str, Any]:
    return {"scenario": name, "status": "ran", "mode": mode, "kafka": kafka, "acked_lost": lost,
            "failover_ms": 5000, "unavailable_ms": 1000, "expectation_met": True, **extra}


def test_a_table_from_recorded_results_puts_the_platforms_side_by_side(tmp_path: Path) -> None:
    """`scenario table` builds the README's platform block from runs recorded earlier, the
    platforms side by side; recorded rows may be a partial set, so the block of the full
    table (scenario-matrix) is left alone, as only a matrix that ran every row rewrites it;
    a skipped run says why in its cell, and the last run of a scenario on a platform counts."""
    first = tmp_path / "a.jsonl"
    rows: list[dict[str, Any]] = [
        _row("acks1-kill-leader", "zookeeper", PINNED, 7),
        _row("acks1-kill-leader", "kraft", DEFAULT_KAFKA_4, 99),
        {"scenario": "elr-last-replica-returns", "status": "skipped", "mode": "kraft",
         "kafka": PINNED, "reason": "needs Kafka 4.x (eligible leader replicas); this run is"
                                   " on 3.9.2", "expectation_met": None}]
    first.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    second = tmp_path / "scenario.json"
    second.write_text(json.dumps(_row("acks1-kill-leader", "kraft", DEFAULT_KAFKA_4, 3)))
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- scenario-matrix -->\nold\n<!-- /scenario-matrix -->\nb\n"
                      "<!-- platform-matrix -->\nold\n<!-- /platform-matrix -->\nc\n")
    out = kinspect("scenario", "table", str(first), str(second), "--markdown", "--out",
                   str(readme)).stdout.splitlines()
    assert out[0].startswith(f"| scenario | ZooKeeper {PINNED}: acked lost |")
    assert f"KRaft {PINNED}: expected?" in out[0] and f"KRaft {DEFAULT_KAFKA_4}: acked lost" in out[0]
    assert out[2].startswith("| acks1-kill-leader | 7 | 5.0 s |") and "| 3 | 5.0 s |" in out[2]
    assert "skipped: needs Kafka 4.x (eligible leader replicas) |" in out[3]
    text = readme.read_text()
    assert "\n".join(out) in text.split("<!-- platform-matrix -->")[1]
    full = text.split("<!-- scenario-matrix -->")[1].split("<!-- /scenario-matrix -->")[0]
    assert full == "\nold\n"
    # a matrix (every row run) writes the first platform's rows in full too
    write_tables(readme, rows, [Platform("zookeeper", PINNED), Platform("kraft", DEFAULT_KAFKA_4)],
                 markdown=True, first_in_full=True)
    full = readme.read_text().split("<!-- scenario-matrix -->")[1]
    assert "| acks1-kill-leader | - | - | 7 |" in full.split("<!-- /scenario-matrix -->")[0]
    assert "99" not in full.split("<!-- /scenario-matrix -->")[0]
    torn = tmp_path / "torn.jsonl"
    torn.write_text('{"scenario": "x"}\n{"scen')
    bad = kinspect("scenario", "table", str(torn), check=False)
    assert bad.returncode == 2 and f"{torn}:2: not JSON" in bad.stderr


def test_the_screen_says_a_scenario_was_not_run_and_why() -> None:
    """`e` on a ZooKeeper lab for a KRaft scenario: the verdict toast says why it did not run,
    not that its expectation "did NOT hold"."""
    from kinspect.scenarios.scenario_process import ScenarioOutcome

    skipped = ScenarioOutcome("kraft-quorum-lost", None, {
        "scenario": "kraft-quorum-lost", "status": "skipped", "expectation_met": None,
        "reason": "needs a KRaft lab (a controller quorum); this run is in ZooKeeper mode"})
    assert skipped.verdict() == ("kraft-quorum-lost: not run: needs a KRaft lab (a controller "
                                 "quorum); this run is in ZooKeeper mode")
    held = ScenarioOutcome("x", None, {"expectation": "acked_lost == 0", "expectation_met": True})
    assert held.verdict() == "x: expected acked_lost == 0: held"


def test_an_expectation_may_say_what_todays_kafka_really_does() -> None:
    """[expect.kraft] and [expect.kafka4] replace a base condition of the same metric on that
    platform (min-isr-two-down: 4.4 holds the writes instead of refusing them)."""
    s = parse(minimal(expect={"failed": "> 0", "acked_lost": "== 0",
                              "kraft": {"unclean_elections": ">= 1"},
                              "kafka4": {"failed": "== 0", "unavailable_ms": ">= 10000"}}),
              Path("mine.toml"))
    assert s.expectation_text() == "failed > 0 and acked_lost == 0"
    assert s.expectation_text(Platform("kraft", PINNED)) == \
        "failed > 0 and acked_lost == 0 and unclean_elections >= 1"
    assert s.expectation_text(Platform("kraft", DEFAULT_KAFKA_4)) == ("failed == 0 and acked_lost == 0 and "
                                                       "unclean_elections >= 1 and "
                                                       "unavailable_ms >= 10000")
    with pytest.raises(KinspectError, match="names no condition"):
        parse(minimal(expect={"kafka4": {"failed": "== 0"}}), Path("bad.toml"))
    with pytest.raises(KinspectError, match="unknown metric"):
        parse(minimal(expect={"acked_lost": "== 0", "kafka4": {"joy": "> 1"}}), Path("bad.toml"))


def test_the_controllers_word_is_unknown_without_its_log_not_zero() -> None:
    """elr_elections and unclean_elections come from the controller's own log only: a KRaft
    run without it kept says unknown, and why; ZooKeeper mode never reads them."""
    from kinspect.postmortem.story.values import Report
    from kinspect.scenarios.plan import PlanLog
    from kinspect.scenarios.scenario_run import UNREAD_CONTROLLER, result_row

    elr = next(s for s in builtin() if s.name == "elr-last-replica-returns")
    elected = Report(timeline=[{"ts": 1, "kind": "log_leader_and_isr", "election": "elr"},
                               {"ts": 2, "kind": "log_leader_start", "election": "last-leader"}])
    kraft4 = Platform("kraft", DEFAULT_KAFKA_4)
    read = result_row(elr, elected, {}, PlanLog(), {}, None, kraft4, controller_log=True)
    assert (read["elr_elections"], read["unclean_elections"]) == (1, 1)
    assert UNREAD_CONTROLLER not in read["notes"]
    unread = result_row(elr, elected, {}, PlanLog(), {}, None, kraft4, controller_log=False)
    assert (unread["elr_elections"], unread["unclean_elections"]) == (None, None)
    assert UNREAD_CONTROLLER in unread["notes"]
    assert "elr_elections >= 1" in unread["expectation_failed"]
    zk = result_row(elr, elected, {}, PlanLog(), {}, None, Platform("zookeeper", PINNED))
    assert zk["elr_elections"] is None and UNREAD_CONTROLLER not in zk["notes"]
    assert Platform.of(None, "4.x") == kraft4 and Platform.of(None) == Platform("zookeeper", PINNED)
