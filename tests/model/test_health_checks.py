"""The registry of health checks is the one vocabulary: every finding's kind and every unmade
check is a registered one, with the registry's severity and words, and the README's table of
checks is rendered from it. A word added in one place and not the other fails here."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from kinspect.model import (
    BrokerLogDirs,
    ClusterFinding,
    ClusterSnapshot,
    ConfigValue,
    ControllerAnswer,
    Fact,
    LogDir,
    LogDirReplica,
    PartitionStateZ,
    Unknown,
    build_snapshot,
)
from kinspect.model.assessment import SIZES_UNTOLD, assess, unchecked
from kinspect.model.findings import cluster_findings
from kinspect.model.flush import flush_words
from kinspect.model.health_checks import CHECK_OF, CHECKS, HEALTH_CHECKS, KINDS, Area
from kinspect.model.severity import Severity
from tests.helpers.kraft_fixtures import kraft_snapshot, kraft_view, quorum
from tests.helpers.model_fixtures import T0, broker_view, demo_snapshot, zk_view

ROOT = Path(__file__).resolve().parents[2]
# Checks whose unknown is said by another check's Unchecked (the same refused setting).
SAID_BY = {"at_min_isr": "under_min_isr"}


def with_disk(dirs: tuple[LogDir, ...]) -> ClusterSnapshot:
    """test1 healthy on brokers 1-3; broker 2's log dirs are `dirs`, the others one roomy dir."""
    zk = zk_view(states={("test1", 0): PartitionStateZ(3, 2, (3, 1, 2), 3, T0 - 10_000)})
    roomy = (LogDir("/data/a", None, 10_000, 4_000),)
    answers = {b: BrokerLogDirs(b, roomy if b != 2 else dirs, {
        ("test1", 0): LogDirReplica(b, "/data/a", 1_000, 0, False)}) for b in (1, 2, 3)}
    broker = dataclasses.replace(broker_view(zk), log_dirs=answers)
    return build_snapshot(zk, broker, [1, 2, 3], T0)


def test_a_log_dir_nearly_full_is_a_disk_warning_not_a_risky_setting() -> None:
    """Under 10 % of its volume free: a warn finding of the disks' check (log_dir_space),
    said by health, never filed under risky_settings."""
    s = with_disk((LogDir("/data/a", None, 100_000, 9_000),))  # 9 % free
    findings = [f for f in s.findings if f.kind == "log_dir_nearly_full"]
    assert [(f.broker, f.severity) for f in findings] == [(2, Severity.WARN)]
    assert CHECK_OF["log_dir_nearly_full"].key == "log_dir_space"
    assert CHECK_OF["log_dir_nearly_full"].area is Area.DISKS
    report = assess(s)
    assert report.risky_settings == ()
    assert findings[0].message in report.warnings and report.verdict == "warning"
    assert "91% full" in findings[0].message
    roomy = with_disk((LogDir("/data/a", None, 100_000, 10_000),))  # 10 % free: not yet
    assert "log_dir_nearly_full" not in {f.kind for f in roomy.findings}


def test_a_log_dir_whose_sizes_are_not_told_is_an_unmade_space_check() -> None:
    """Before Kafka 3.3 the volume's sizes are not told: log_dir_space is unchecked, with its
    reason, and nothing is found. It is said at info: a cluster that cannot tell it at all is
    not "unknown" (exit 3) for ever."""
    s = with_disk((LogDir("/data/a", None),))
    space = [u for u in unchecked(s) if u.check == "log_dir_space"]
    assert [(u.severity, u.reason, u.subjects) for u in space] == [
        (Severity.INFO, SIZES_UNTOLD.reason, ("broker 2: /data/a",))]
    report = assess(s)
    assert any(u.check == "log_dir_space" for u in report.unchecked)
    assert report.verdict == verdict_without_disks(s)
    assert "log_dir_nearly_full" not in {f.kind for f in s.findings}
    assert "log dirs' free space unknown for 1: broker 2: /data/a" in space[0].text


def verdict_without_disks(s: ClusterSnapshot) -> str:
    """The verdict of the same snapshot with no log dirs told at all."""
    brokers = tuple(dataclasses.replace(b, log_dirs=None) for b in s.brokers)
    return str(assess(dataclasses.replace(s, brokers=brokers)).verdict)


def test_a_critical_finding_of_any_kind_makes_the_verdict_critical() -> None:
    """A finding's severity decides where health files it: a critical kind added to the
    registry pages (it was said on screen and judged healthy)."""
    base = demo_snapshot()
    new = ClusterFinding("a_new_kind", "a new critical thing", severity=Severity.CRITICAL)
    report = assess(dataclasses.replace(base, findings=(*base.findings, new)))
    assert "a new critical thing" in report.critical and report.verdict == "critical"
    warn = ClusterFinding("another_kind", "a new warning", severity=Severity.WARN)
    quiet = dataclasses.replace(base, findings=(warn,))
    assert "a new warning" in assess(quiet).warnings


NEVER = str(2**63 - 1)  # Long.MAX_VALUE, Kafka's default for every flush setting
BROKER_DEFAULTS = {"log.flush.interval.messages": ConfigValue(NEVER, "default"),
                   "log.flush.scheduler.interval.ms": ConfigValue(NEVER, "default")}


def with_flush(messages: dict[str, str] | None = None,
               brokers: dict[int, Fact[dict[str, ConfigValue]]] | None = None
               ) -> ClusterSnapshot:
    """test1 and orders at Kafka's flush defaults (flush.messages of `messages` as given),
    every broker at its defaults (log.flush.interval.ms null) unless `brokers` says."""
    zk = zk_view(replicas={"test1": {0: (3, 1, 2)}, "orders": {0: (1, 2, 3)}})
    view = broker_view(zk)
    configs = {t: {**c, "flush.messages": ConfigValue((messages or {}).get(t, NEVER), "default"),
                   "flush.ms": ConfigValue(NEVER, "default")} for t, c in view.configs.items()}
    answered: dict[int, Fact[dict[str, ConfigValue]]] = {b: dict(BROKER_DEFAULTS)
                                                         for b in (1, 2, 3)}
    answered.update(brokers or {})
    view = dataclasses.replace(view, configs=configs, broker_configs=answered)
    return build_snapshot(zk, view, [1, 2, 3], T0)


def test_kafkas_flush_defaults_are_advice_that_a_power_loss_loses_acked_writes() -> None:
    """By default nothing fsyncs: one info finding of the flush check names the topics, a risky
    setting said, never a verdict (it is the default of nearly every cluster)."""
    s = with_flush()
    findings = [f for f in s.findings if f.kind == "no_fsync"]
    assert [(f.severity, f.message.split(":")[0]) for f in findings] == [
        (Severity.INFO, "orders, test1")]
    assert findings[0].message.endswith(
        "a power loss of all replicas at once loses acknowledged writes (no broker fsyncs: "
        "log.flush.interval.messages and flush.messages are never)")
    report = assess(s)
    assert findings[0].message in report.risky_settings and report.verdict == "healthy"
    assert [u for u in report.unchecked if u.check == "flush"] == []


def test_a_topic_that_fsyncs_every_message_is_not_found() -> None:
    s = with_flush(messages={"test1": "1"})
    assert [f.message.split(":")[0] for f in s.findings if f.kind == "no_fsync"] == ["orders"]
    topic = next(t for t in s.topics if t.name == "test1")
    assert not isinstance(topic.flush, Unknown)
    assert flush_words(topic.flush.messages, "messages") == "every message"
    assert flush_words(topic.flush.ms, "ms") == "never"


def test_a_broker_that_fsyncs_leaves_no_finding() -> None:
    syncs = {**BROKER_DEFAULTS, "log.flush.interval.ms": ConfigValue("1000", "static_broker")}
    assert [f for f in with_flush(brokers={2: syncs}).findings if f.kind == "no_fsync"] == []


def test_refused_flush_settings_are_an_unmade_check_with_the_refusal_not_a_pass() -> None:
    """A topic's describe refused, or a broker's: no finding said of it, and the flush check is
    unchecked with the refusal as its reason, at its registry's severity (info): said, and no
    verdict of its own."""
    refused = Unknown("no DescribeConfigs permission on the topic")
    s = with_flush()
    view_topics = tuple(dataclasses.replace(t, config=refused) if t.name == "test1" else t
                        for t in s.topics)
    s = dataclasses.replace(s, topics=view_topics)
    assert ("flush", Severity.INFO, refused.reason, ("test1",)) in [
        (u.check, u.severity, u.reason, u.subjects) for u in unchecked(s)]
    assert not any(f.message.startswith("test1") for f in cluster_findings(s))
    cluster = Unknown("no DescribeConfigs permission on the cluster")
    b = with_flush(brokers={2: cluster})
    assert [f for f in b.findings if f.kind == "no_fsync"] == []
    flush = [u for u in unchecked(b) if u.check == "flush"]
    assert [(u.severity, u.reason, u.subjects) for u in flush] == [
        (Severity.INFO, cluster.reason, ("broker 2",))]
    assert "fsync settings unknown for 1: broker 2" in flush[0].text
    assert assess(b).verdict == "healthy"


def every_kind() -> list[ClusterSnapshot]:
    """Snapshots that between them make every registered kind of finding."""
    unclean = dataclasses.replace(broker_view(zk_view()), configs={"test1": {
        "min.insync.replicas": ConfigValue("2", "default"),
        "unclean.leader.election.enable": ConfigValue("true", "dynamic_topic")}})
    stale = (ControllerAnswer(101, "198.18.1.101:9093", "leader", 6),
             ControllerAnswer(102, "198.18.1.102:9093", "leader", 7))
    return [
        demo_snapshot(), demo_snapshot(isolated_leader=True),
        build_snapshot(zk_view(controller=None), broker_view(zk_view()), [1, 2, 3], T0),
        build_snapshot(zk_view(), broker_view(zk_view(), min_isr="3"), [1, 2, 3], T0),
        build_snapshot(zk_view(), broker_view(zk_view(), min_isr="1"), [1, 2, 3], T0),
        build_snapshot(zk_view(), unclean, [1, 2, 3], T0),
        kraft_snapshot(kraft_view(error="no answer")), kraft_snapshot(kraft_view(listed=(1, 2))),
        kraft_snapshot(kraft_view(answer=quorum(102, 7), controllers=stale)),
        with_disk((LogDir("/data/a", None, 100_000, 1_000), LogDir("/data/b", "KafkaStorageError"))),
        with_flush(),
    ]


def test_every_finding_is_a_registered_kind_with_the_registrys_severity() -> None:
    made = set()
    for s in every_kind():
        assert s.findings == cluster_findings(s)
        for f in s.findings:
            assert f.kind in KINDS, f"{f.kind}: declare it in health_checks.HEALTH_CHECKS"
            assert f.severity is KINDS[f.kind].severity, f.kind
            made.add(f.kind)
    assert made == set(KINDS), f"registered, never found: {set(KINDS) - made}"


def calls(name: str) -> list[tuple[Path, ast.Call]]:
    """Every call of a function or class of this name in kinspect/."""
    out = []
    for path in sorted((ROOT / "kinspect").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called == name:
                out.append((path, node))
    return out


def literal_firsts(name: str) -> set[str]:
    return {c.args[0].value for _, c in calls(name)
            if c.args and isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str)}


def test_every_kind_found_in_the_code_is_registered_and_every_registered_kind_is_found() -> None:
    """`found("kind", …)` is the one way a finding is made: its kind is a key of KINDS (which
    gives it its severity), and each registered kind has a `found` somewhere."""
    literal = literal_firsts("found")
    assert literal <= set(KINDS), f"found but not registered: {literal - set(KINDS)}"
    assert set(KINDS) <= literal, f"registered, never found: {set(KINDS) - literal}"
    made_by_hand = [(p.name, c.lineno) for p, c in calls("ClusterFinding")
                    if p.name not in ("findings.py", "serialize.py", "recording.py")]
    assert made_by_hand == [], "a ClusterFinding made outside found() and the decoders"


def test_every_unmade_check_is_registered_and_every_unknown_is_said() -> None:
    """`unmade("check", …)` (directly or through _by_reason) takes its severity from CHECKS;
    an `Unchecked` is built nowhere else; and each check that says when it cannot be made
    has an unmade somewhere (or is said by the check named in SAID_BY)."""
    literal = literal_firsts("unmade") | literal_firsts("_by_reason")
    assert literal <= set(CHECKS), f"unmade but not registered: {literal - set(CHECKS)}"
    built = [(p.name, c.lineno) for p, c in calls("Unchecked")]
    assert [where for where, _ in built] == ["assessment.py"], built  # only in unmade()
    can_be_unmade = {c.key for c in HEALTH_CHECKS if not c.unknown_when.startswith("never")}
    missing = can_be_unmade - literal - set(SAID_BY)
    assert not missing, f"say where these could not be checked (assessment.unchecked): {missing}"
    assert set(SAID_BY.values()) <= literal


def test_every_check_has_its_words() -> None:
    """Each check its key, what it looks at, its finding, its unknown's name and when it
    cannot be made; each kind's severity no worse than its check's."""
    assert len(CHECKS) == len(HEALTH_CHECKS), "two checks with one key"
    assert len(KINDS) == sum(len(c.kinds) for c in HEALTH_CHECKS), "two kinds with one key"
    for c in HEALTH_CHECKS:
        words = (c.key, c.looks_at, c.finding, c.unknown, c.unknown_when)
        assert all(w.strip() for w in words), c.key
        assert re.fullmatch(r"[a-z_0-9]+", c.key), c.key
        assert "|" not in "".join(words), f"{c.key}: a | breaks the reference page's table"
        for k in c.kinds:
            assert k.severity.rank <= c.severity.rank, k.key
