"""Least privilege as a tested matrix: on a TLS lab with Kafka's ACL authorizer, users holding
the grants on-call engineers really get each see a cluster that is critical for the admin
(a topic's ISR down to one replica under min.insync.replicas=2, unclean election on for
another). For each, `health`, `snapshot --json` and the TUI give no verdict better than the
admin's on the same cluster, and name what they could not see. The admin's verdict is the
oracle; every user connects over SASL_SSL with the lab's CA and no ZooKeeper (what an on-call
engineer has)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from kinspect.lab.topics import create_topics
from kinspect.sources.hidden import confirm_hidden
from tests.helpers import kinspect, wait_until

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab,
              pytest.mark.shares_lab("tls")]

ADMIN = "kinspect"  # the lab's super user
# The grants: Kafka ACLs as `lab user add --allow OPERATION:TYPE[:NAME]` takes them.
USERS = {
    "oncall": ("describe:cluster", "describe:topic", "describe:group"),
    "oncall-configs": ("describe:cluster", "describe:topic", "describe:group",
                       "describe_configs:cluster", "describe_configs:topic"),
    "oncall-orders": ("describe:cluster", "describe:topic:orders", "describe:group"),
    "oncall-nogroups": ("describe:cluster", "describe:topic"),
}
RANK = {"healthy": 0, "warning": 1, "critical": 2}
FLAGS = ("offline", "under_replicated", "under_min_isr", "at_min_isr", "unavailable")


def profile(path: Path, status: dict[str, Any], user: str, password_file: str) -> None:
    tls = status["tls"]
    path.write_text(f"""
[clusters.{user}]
bootstrap = "{tls['sasl_ssl_bootstrap']}"
refresh_s = 1

[clusters.{user}.kafka]
"security.protocol" = "SASL_SSL"
"sasl.mechanism" = "SCRAM-SHA-256"
"sasl.username" = "{user}"
"sasl.password" = "${{file:{password_file}}}"
"ssl.ca.location" = "{tls['ca']}"
""")


@pytest.fixture(scope="module",
                params=["zookeeper", pytest.param("kraft", marks=pytest.mark.extended)])
def secured(lab_session: Any, tmp_path_factory: pytest.TempPathFactory,
            request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """The lab with TLS and the authorizer (ZooKeeper mode in CI; KRaft's StandardAuthorizer
    in `make matrix`), its users, topics and a group; then the admin's cluster in trouble:
    kafka2 and kafka3 stopped (orders' ISR down to one). Made once for the module's tests,
    which only read it (a reset and two restarts each cost ~48 s), on the TLS lab the tests
    marked shares_lab("tls") share."""
    tmp_path = tmp_path_factory.mktemp("secured")
    status = lab_session.ensure_secure("process", request.param)
    plain = status["bootstrap"]
    create_topics(plain, {"orders": 3})
    create_topics(plain, {"audit": 1}, 3, {"unclean.leader.election.enable": "true"})
    commit_group(plain, "billing", "orders")
    profiles: dict[str, Path] = {}
    listed = json.loads(kinspect("lab", "user", "list", "--json").stdout)["users"]
    files = {u["name"]: u["password_file"] for u in listed}
    files[ADMIN] = status["sasl"]["password_file"]
    for user, grants in USERS.items():
        if user not in files:
            kinspect("lab", "user", "add", user, *(a for g in grants for a in ("--allow", g)))
            listed = json.loads(kinspect("lab", "user", "list", "--json").stdout)["users"]
            files = {**files, **{u["name"]: u["password_file"] for u in listed}}
    for user in (ADMIN, *USERS):
        profiles[user] = tmp_path / f"{user}.toml"
        profile(profiles[user], status, user, files[user])
    kinspect("lab", "stop", "kafka2")
    kinspect("lab", "stop", "kafka3")
    yield {"status": status, "profiles": profiles}
    for node in ("kafka2", "kafka3"):
        kinspect("lab", "start", node, check=False, timeout=200)


def user_config(status: dict[str, Any], user: str) -> dict[str, str]:
    """A client config for one of the lab's users over SASL_SSL."""
    listed = json.loads(kinspect("lab", "user", "list", "--json").stdout)["users"]
    password = Path(next(u for u in listed if u["name"] == user)["password_file"])
    return {"bootstrap.servers": status["tls"]["sasl_ssl_bootstrap"],
            "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user, "sasl.password": password.read_text().strip(),
            "ssl.ca.location": status["tls"]["ca"]}


def commit_group(bootstrap: str, group: str, topic: str) -> None:
    """A group with committed offsets (retried while __consumer_offsets is still being made:
    NOT_COORDINATOR right after a new cluster's first group request)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    offsets = [TopicPartition(topic, p, 0) for p in range(3)]
    try:
        wait_until(lambda: _committed(consumer, offsets), 60, f"group {group} committed")
    finally:
        consumer.close()


def _committed(consumer: Consumer, offsets: list[TopicPartition]) -> bool:
    try:
        consumer.commit(offsets=offsets, asynchronous=False)
    except KafkaException:
        return False
    return True


def run(user: str, profiles: dict[str, Path], *args: str) -> tuple[int, dict[str, Any]]:
    proc = kinspect(*args, "--profile", user, "--json",
                    env={"KINSPECT_CONFIG": str(profiles[user])}, check=False, timeout=120)
    return proc.returncode, json.loads(proc.stdout)


def admin_critical(profiles: dict[str, Path]) -> dict[str, Any] | None:
    code, report = run(ADMIN, profiles, "health", "--timeout", "10")
    wanted = {f"orders-{p}" for p in range(3)}
    return report if code == 2 and wanted <= set(report["under_min_isr"]) else None


def flags_of(snapshot: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(f"{t['name']}-{p['partition']}", flag): p[flag]
            for t in snapshot["topics"] for p in t["partitions"] for flag in FLAGS}


def test_no_user_gets_a_better_verdict_than_the_admin(secured: dict[str, Any]) -> None:
    profiles = secured["profiles"]
    admin = wait_until(lambda: admin_critical(profiles), 90, "the admin's CRITICAL verdict")
    assert isinstance(admin, dict)
    assert any("unclean leader election is on" in p for p in admin["problems"]), admin
    assert not [u for u in admin["unchecked"] if u["severity"] == "critical"], admin["unchecked"]
    _, admin_snapshot = run(ADMIN, profiles, "snapshot")
    admin_flags = flags_of(admin_snapshot)
    verdicts = {ADMIN: admin["verdict"]}
    matrix = [f"{ADMIN}: {admin['verdict']} (exit 2)"]
    for user in USERS:
        code, report = run(user, profiles, "health", "--timeout", "10")
        verdicts[user] = report["verdict"]
        matrix.append(f"{user}: {report['verdict']} (exit {code}, seen {report.get('seen')}); "
                      + "; ".join(u["text"] for u in report["unchecked"]))
        assert report["verdict"] in ("critical", "unknown"), (user, report)
        assert code == {"critical": 2, "unknown": 3}[report["verdict"]], (user, code)
        if report["verdict"] == "unknown":
            assert RANK[report["seen"]] <= RANK["critical"] and report["unchecked"], (user, report)
        _, snapshot = run(user, profiles, "snapshot")
        hidden = set(snapshot["hidden_topics"]) if isinstance(snapshot["hidden_topics"], list) \
            else None
        seen = flags_of(snapshot)
        for (name, flag), value in admin_flags.items():
            topic = name.rsplit("-", 1)[0]
            if (name, flag) not in seen:  # a topic this user may not describe: named as hidden
                assert hidden is not None and topic in hidden, (user, name, snapshot["unchecked"])
                continue
            if value is True:  # never false where the admin saw true: true or unknown
                assert seen[(name, flag)] is True or "unknown" in seen[(name, flag)], \
                    (user, name, flag, seen[(name, flag)])
    by_check = {u: {c["check"]: c for c in run(u, profiles, "health")[1]["unchecked"]}
                for u in USERS}
    assert "DescribeConfigs" in by_check["oncall"]["under_min_isr"]["reason"]
    assert verdicts["oncall-configs"] == "critical" and "under_min_isr" not in by_check[
        "oncall-configs"]
    assert "audit" in by_check["oncall-orders"]["hidden_topics"]["subjects"]
    # hidden is what the brokers refuse when named (any name, made or not, for a user without
    # Describe on it: Kafka does not say which exist); for a user who may describe every
    # topic, one in passing (not in the metadata yet) is no blind spot; naming it makes nothing
    orders_only = AdminClient(user_config(secured["status"], "oncall-orders"))
    assert confirm_hidden(orders_only, {"audit", "not-made"}, 10) == {"audit", "not-made"}
    every_topic = AdminClient(user_config(secured["status"], "oncall"))
    assert confirm_hidden(every_topic, {"audit", "not-made"}, 10) == frozenset()
    assert "not-made" not in {t["name"] for t in run(ADMIN, profiles, "snapshot")[1]["topics"]}
    groups = {u: [g["group"] for g in run(u, profiles, "health")[1]["groups"]]
              for u in (ADMIN, "oncall-nogroups")}
    assert groups == {ADMIN: ["billing"], "oncall-nogroups": []}, groups
    # listed (Describe on the cluster) but refused: said, with the reason, never left out
    _, lagged = run("oncall-nogroups", profiles, "health", "--max-lag", "0")
    lag_check = next(u for u in lagged["unchecked"] if u["check"] == "group_lag")
    assert lag_check["subjects"] == ["billing"] and "Describe" in lag_check["reason"], lag_check
    _, nogroups = run("oncall-nogroups", profiles, "snapshot")
    assert "billing" in nogroups["groups_unknown"], nogroups["groups_unknown"]
    print("\n" + "\n".join(matrix))


def test_the_tui_shows_question_marks_with_the_reason(secured: dict[str, Any]) -> None:
    """The on-call user's screen: `?` where the admin's shows the flag, the reason in the
    warnings panel, never "0 under min-ISR" for orders, and no offer of load."""
    from kinspect.tui.app import KinspectApp
    from kinspect.tui.console import ReadOnlyConsole
    from kinspect.tui.feed import LiveFeed
    from kinspect.tui.load_panel import LoadPanel
    from kinspect.tui.partition_view import PartitionView

    status = secured["status"]
    listed = json.loads(kinspect("lab", "user", "list", "--json").stdout)["users"]
    users = {u["name"]: u for u in listed}
    password = Path(users["oncall"]["password_file"])
    config = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
              "sasl.username": "oncall", "sasl.password": password.read_text().strip(),
              "ssl.ca.location": status["tls"]["ca"]}

    async def scenario() -> None:
        feed = LiveFeed(status["tls"]["sasl_ssl_bootstrap"], None, lab_backed=False,
                        title="oncall", admin_config=config, record=False)
        app = KinspectApp(feed, ReadOnlyConsole("not a kinspect lab (test)"))
        async with app.run_test(size=(160, 45)) as pilot:
            deadline = time.monotonic() + 60
            text = ""
            while time.monotonic() < deadline:
                text = str(app.query_one("#warnings").render())
                if "under min ISR unknown" in text:
                    break
                await pilot.pause(0.5)
            assert "? under min ISR unknown" in text and "DescribeConfigs" in text, text
            view = app.query_one(PartitionView)
            rows = ["".join(s.text for s in view.render_line(y)) for y in range(view.size.height)]
            orders = next(r for r in rows if "orders" in r and "partitions" in r)
            assert "0+3? under min-ISR" in orders, rows
            assert "press l" not in str(app.query_one(LoadPanel).render())

    asyncio.run(scenario())
