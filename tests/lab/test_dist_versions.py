"""Kafka versions in the distribution layer: which releases kinspect accepts, which pom (and so
which logging backend) Maven resolves them from, and the JVM flags each line logs with. The
post-mortem reads server.log, controller.log and state-change.log whichever line wrote them,
so the log4j2 settings must say what the log4j 1 ones say."""

from __future__ import annotations

import os
import re
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.lab import dist, images
from kinspect.lab.dist import DEFAULT_KAFKA_4, KafkaDist, resource_path

POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
PATTERN_3 = "[%d] %p %m (%c)%n"


def kafka(version: str, home: Path = Path("/k")) -> KafkaDist:
    return KafkaDist(home=home, version=version, java="java")


def pom_artifacts(path: Path) -> set[str]:
    root = ET.parse(path).getroot()
    return {str(a.text) for a in root.findall("m:dependencies/m:dependency/m:artifactId", POM_NS)}


def pom_property(path: Path, name: str) -> str:
    found = ET.parse(path).getroot().find(f"m:properties/m:{name}", POM_NS)
    assert found is not None and found.text
    return found.text


# --- versions ---------------------------------------------------------------------------------

def test_no_version_is_the_pin_of_the_default_pom() -> None:
    assert dist.resolve_version(None) == dist.kafka_version() == "3.9.2"
    assert dist.resolve_version("3") == dist.resolve_version("3.x") == dist.kafka_version()


def test_the_tested_4x_release_is_what_its_pom_pins() -> None:
    assert re.fullmatch(r"4\.\d+\.\d+", DEFAULT_KAFKA_4)
    assert pom_property(resource_path("kafka4-pom.xml"), "kafka.version") == DEFAULT_KAFKA_4
    assert dist.resolve_version("4") == dist.resolve_version(" 4.X ") == DEFAULT_KAFKA_4


@pytest.mark.parametrize("text, expected", [("4.1.2", "4.1.2"), (" 4.0.0\n", "4.0.0"),
                                            ("3.9.1", "3.9.1"), ("04.01.0", "4.1.0")])
def test_releases_of_both_lines_are_accepted(text: str, expected: str) -> None:
    assert dist.resolve_version(text) == expected


@pytest.mark.parametrize("text", ["", "four", "4.1", "4.1.0-rc1", "4.1.0.1", "../4.1.0",
                                  "4.1.0/..", "4.1.0 --help", "-Dx=4.1.0"])
def test_nonsense_is_one_line_naming_the_form(text: str) -> None:
    with pytest.raises(KinspectError, match="not a Kafka release version") as caught:
        dist.resolve_version(text)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text", ["2.8.2", "3.8.1", "3.0.0", "5.0.0", "0.11.0"])
def test_releases_outside_both_lines_are_refused(text: str) -> None:
    with pytest.raises(KinspectError, match=rf"3\.9\.x .* 4\.x .*not {re.escape(text)}"):
        dist.resolve_version(text)


def test_zookeeper_mode_ends_with_4_0() -> None:
    assert dist.supports_zookeeper() and dist.supports_zookeeper("3.9.2")
    assert not dist.supports_zookeeper("4.0.0") and not dist.supports_zookeeper(DEFAULT_KAFKA_4)
    assert kafka("3.9.2").zookeeper and not kafka("4.1.0").zookeeper


def test_dist_home_is_per_release_and_validated(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINSPECT_CACHE", str(tmp_path))
    assert dist.dist_home() == tmp_path / "kafka-3.9.2"
    assert dist.dist_home("4") == tmp_path / f"kafka-{DEFAULT_KAFKA_4}"
    with pytest.raises(KinspectError):
        dist.dist_home("../../etc")


def test_installed_needs_the_release_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINSPECT_CACHE", str(tmp_path))
    monkeypatch.setattr(dist, "require_java", lambda: "java")
    (tmp_path / "kafka-4.1.0").mkdir()
    assert dist.installed("4.1.0") is None
    (tmp_path / "kafka-4.1.0" / ".complete").write_text("4.1.0\n")
    found = dist.installed("4.1.0")
    assert found == KafkaDist(home=tmp_path / "kafka-4.1.0", version="4.1.0", java="java")
    assert dist.installed() is None  # the default release is another directory


# --- poms -------------------------------------------------------------------------------------

def test_each_line_has_its_pom() -> None:
    assert dist.pom_path().name == dist.pom_path("3.9.1").name == "kafka-pom.xml"
    assert dist.pom_path("4.0.0").name == dist.pom_path("4").name == "kafka4-pom.xml"


def test_the_4x_pom_logs_through_log4j2_and_the_3x_pom_through_reload4j() -> None:
    three, four = pom_artifacts(dist.pom_path("3.9.2")), pom_artifacts(dist.pom_path("4"))
    assert {"kafka_2.13", "kafka-tools"} <= three & four
    assert {"reload4j", "slf4j-reload4j"} <= three
    assert {"log4j-api", "log4j-core", "log4j-slf4j-impl"} <= four
    assert not four & {"reload4j", "slf4j-reload4j", "log4j"}


def test_both_poms_let_the_command_line_choose_the_release() -> None:
    for pom in (dist.pom_path("3.9.2"), dist.pom_path("4")):
        root = ET.parse(pom).getroot()
        versions = {str(v.text) for v in root.findall("m:dependencies/m:dependency/m:version",
                                                      POM_NS)}
        assert "${kafka.version}" in versions


# --- fetching (a stand-in mvn) ----------------------------------------------------------------

FAKE_MVN = """#!/bin/sh
echo "$@" > "$MVN_ARGS"
for arg in "$@"; do
  case "$arg" in
    -Dkafka.version=*) version="${arg#-Dkafka.version=}" ;;
    -DoutputDirectory=*) out="${arg#-DoutputDirectory=}" ;;
  esac
done
if [ "$version" = 4.9.9 ]; then
  echo "[ERROR] Failed to execute goal on project kinspect-kafka4-dist: Could not resolve \
dependencies for project dev.kinspect:kinspect-kafka4-dist:pom:1: The following artifacts could \
not be resolved: org.apache.kafka:kafka_2.13:jar:4.9.9, org.apache.kafka:kafka-tools:jar:4.9.9: \
org.apache.kafka:kafka_2.13:jar:4.9.9 was not found in the repository during a previous attempt."
  exit 1
fi
mkdir -p "$out"
: > "$out/kafka_2.13-$version.jar"
: > "$out/kafka-tools-$version.jar"
echo "Downloaded from central: x/kafka_2.13-$version.jar (1 kB)"
"""


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(FAKE_MVN)
    mvn.chmod(mvn.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MVN_ARGS", str(tmp_path / "mvn-args"))
    monkeypatch.setenv("KINSPECT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(dist, "require_java", lambda: "java")
    return tmp_path / "mvn-args"


def test_fetch_gives_maven_the_line_pom_and_the_release(fake_mvn: Path, tmp_path: Path) -> None:
    said: list[str] = []
    got = dist.fetch(said.append, version="4.1.0")
    args = fake_mvn.read_text().split()
    assert args[args.index("-f") + 1] == str(dist.pom_path("4"))
    assert "-Dkafka.version=4.1.0" in args
    assert got.version == "4.1.0" and got.home == tmp_path / "cache" / "kafka-4.1.0"
    assert (got.libs / "kafka_2.13-4.1.0.jar").exists() and dist.installed("4.1.0") == got
    assert "KRaft only" in said[0]
    assert dist.ensure(version="4.1.0") == got  # cached: Maven is not asked again
    fake_mvn.unlink()
    dist.ensure(version="4.1.0")
    assert not fake_mvn.exists()


def test_fetch_without_a_version_is_the_default_pin(fake_mvn: Path) -> None:
    said: list[str] = []
    got = dist.fetch(said.append)
    args = fake_mvn.read_text().split()
    assert args[args.index("-f") + 1] == str(dist.pom_path())
    assert got.version == dist.kafka_version()
    assert said[0].startswith(f"fetching Apache Kafka {dist.kafka_version()} and ZooKeeper jars")


def test_a_release_maven_cannot_find_is_one_line_naming_it(fake_mvn: Path, tmp_path: Path) -> None:
    with pytest.raises(KinspectError) as caught:
        dist.fetch(lambda line: None, version="4.9.9")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("Maven cannot resolve Apache Kafka 4.9.9")
    assert not list((tmp_path / "cache").glob("kafka-4.9.9*"))  # no half-fetched leftovers


def test_other_maven_failures_say_what_maven_said() -> None:
    tail = ["[INFO] Scanning", "[ERROR] Failed to execute goal: Cannot access central in "
            "offline mode and the artifact org.apache.kafka:kafka_2.13:jar:4.3.0 has not been "
            "downloaded from it before.", "[ERROR] "]
    message = dist._failure("4.3.0", tail, 1)
    assert message.startswith("fetching Kafka 4.3.0 with Maven failed: Failed to execute goal")
    assert dist._failure("4.3.0", [], 3) == "fetching Kafka 4.3.0 with Maven failed: exit code 3"


# --- logging ----------------------------------------------------------------------------------

def test_3x_logging_flags_are_the_ones_nodes_always_had() -> None:
    logs = Path("/lab/nodes/kafka1/logs")
    assert kafka("3.9.2").logging_flags(logs) == [
        f"-Dkafka.logs.dir={logs}",
        f"-Dlog4j.configuration=file:{resource_path('broker-log4j.properties')}"]
    assert kafka("3.9.2").logging_flags(logs, role="zookeeper")[1] == (
        f"-Dlog4j.configuration=file:{resource_path('zookeeper-log4j.properties')}")
    assert kafka("3.9.2").logging_flags(logs, kraft=False) == kafka("3.9.2").logging_flags(logs)


def test_3x_kraft_nodes_log_with_the_kraft_settings() -> None:
    logs = Path("/logs")
    kraft = f"-Dlog4j.configuration=file:{resource_path('broker-kraft-log4j.properties')}"
    assert kafka("3.9.2").logging_flags(logs, role="controller")[1] == kraft
    assert kafka("3.9.2").logging_flags(logs, kraft=True)[1] == kraft
    assert kafka("3.9.2").logging_flags(logs, role="zookeeper", kraft=True)[1].endswith(
        "zookeeper-log4j.properties")


def settings(name: str) -> list[str]:
    return [line for line in resource_path(name).read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_3x_kraft_settings_are_the_broker_settings_plus_kraft_loggers() -> None:
    broker, kraft = settings("broker-log4j.properties"), settings("broker-kraft-log4j.properties")
    assert set(broker) <= set(kraft)
    added = {line.split("=")[0] for line in set(kraft) - set(broker)}
    assert {"log4j.logger.org.apache.kafka.controller", "log4j.logger.org.apache.kafka.raft",
            "log4j.logger.org.apache.kafka.controller.ReplicationControlManager"} <= added
    assert "log4j.logger.org.apache.kafka.controller=INFO, controllerAppender" in kraft
    assert "log4j.logger.org.apache.kafka.raft=INFO, controllerAppender" in kraft


def test_4x_logging_flags_name_the_log4j2_settings() -> None:
    logs = Path("/lab/nodes/ctl1/logs")
    for role, kraft in (("broker", False), ("broker", True), ("controller", False)):
        assert kafka("4.1.0").logging_flags(logs, role=role, kraft=kraft) == [
            f"-Dkafka.logs.dir={logs}",
            f"-Dlog4j2.configurationFile={resource_path('broker-log4j2.xml')}"]
    in_image = kafka("4.1.0").logging_flags(Path("/kinspect/logs"), Path("/kinspect/conf"))
    assert in_image == ["-Dkafka.logs.dir=/kinspect/logs",
                        "-Dlog4j2.configurationFile=/kinspect/conf/broker-log4j2.xml"]
    with pytest.raises(KinspectError, match="no zookeeper role"):
        kafka("4.1.0").logging_flags(logs, role="zookeeper")


def test_tools_run_quietly_on_either_line() -> None:
    three = kafka("3.9.2").tool_command("org.apache.kafka.tools.TopicCommand", "--list")
    four = kafka("4.1.0").tool_command("org.apache.kafka.tools.TopicCommand", "--list")
    assert three[2] == f"-Dlog4j.configuration=file:{resource_path('tools-log4j.properties')}"
    assert four[2] == f"-Dlog4j2.configurationFile={resource_path('tools-log4j2.xml')}"
    assert four[-2:] == ["org.apache.kafka.tools.TopicCommand", "--list"]


def test_dump_log_segments_moved_in_4x() -> None:
    assert kafka("3.9.2").dump_log_segments == "kafka.tools.DumpLogSegments"
    assert kafka("4.0.0").dump_log_segments == "org.apache.kafka.tools.DumpLogSegments"


def test_every_log_setting_a_line_names_exists() -> None:
    for version in ("3.9.2", DEFAULT_KAFKA_4):
        for name in dist.log_configs(version).values():
            assert resource_path(name).is_file(), name


def log4j2(name: str) -> ET.Element:
    return ET.parse(resource_path(name)).getroot()


def test_log4j2_broker_settings_write_the_three_files_the_post_mortem_reads() -> None:
    root = log4j2("broker-log4j2.xml")
    assert root.get("shutdownHook") == "disable"  # the controlled shutdown's lines are kept
    props = {p.get("name"): p.text for p in root.iter("Property")}
    assert props["logsDir"] == "${sys:kafka.logs.dir}"
    # the 3.x pattern, with the stamp spelled out (log4j 1's %d) and pinned to UTC
    assert props["pattern"] == PATTERN_3.replace("%d", "%d{yyyy-MM-dd HH:mm:ss,SSS}{UTC}")
    files = {f.get("name"): f.get("fileName") for f in root.iter("File")}
    assert files == {"server": "${logsDir}/server.log", "stateChange": "${logsDir}/state-change.log",
                     "controller": "${logsDir}/controller.log"}
    for layout in root.iter("PatternLayout"):
        assert layout.get("pattern") == "${pattern}"
    console = next(root.iter("Console"))
    threshold = console.find("ThresholdFilter")
    assert threshold is not None and threshold.get("level") == "WARN"


def test_log4j2_routes_controller_decisions_and_state_changes() -> None:
    loggers = {lg.get("name"): lg for lg in next(log4j2("broker-log4j2.xml").iter("Loggers"))}

    def routed(name: str) -> tuple[str | None, str | None, list[str | None]]:
        logger = loggers[name]
        return (logger.get("level"), logger.get("additivity"),
                [ref.get("ref") for ref in logger.iter("AppenderRef")])

    assert routed("org.apache.kafka.controller") == ("INFO", "false", ["controller"])
    assert routed("org.apache.kafka.raft") == ("INFO", "false", ["controller"])
    assert routed("kafka.controller") == ("TRACE", "false", ["controller"])
    assert routed("state.change.logger") == ("INFO", "false", ["stateChange"])
    # partition leader / ISR changes are DEBUG in KRaft; they reach controller.log through
    # org.apache.kafka.controller, without the periodic stale-broker check
    replication = loggers["org.apache.kafka.controller.ReplicationControlManager"]
    assert replication.get("level") == "DEBUG" and replication.get("additivity") is None
    quiet = replication.find("StringMatchFilter")
    assert quiet is not None and quiet.get("onMatch") == "DENY"
    root = log4j2("broker-log4j2.xml").find("Loggers/Root")
    assert root is not None and root.get("level") == "INFO"
    assert {r.get("ref") for r in root.iter("AppenderRef")} == {"stdout", "server"}


def test_log4j2_tools_settings_warn_on_stderr() -> None:
    root = log4j2("tools-log4j2.xml")
    console = next(root.iter("Console"))
    assert console.get("target") == "SYSTEM_ERR"
    top = root.find("Loggers/Root")
    assert top is not None and top.get("level") == "WARN"


# --- the image --------------------------------------------------------------------------------

def test_each_image_holds_its_line_log_settings() -> None:
    assert images.log_files(kafka("3.9.2")) == ["broker-kraft-log4j.properties",
                                                "broker-log4j.properties",
                                                "tools-log4j.properties",
                                                "zookeeper-log4j.properties"]
    assert images.log_files(kafka("4.1.0")) == ["broker-log4j2.xml", "tools-log4j2.xml"]


def test_image_tags_differ_per_release(tmp_path: Path) -> None:
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka_2.13.jar").write_bytes(b"")
    three = images.kafka_tag(kafka("3.9.2", tmp_path))
    four = images.kafka_tag(kafka(DEFAULT_KAFKA_4, tmp_path))
    assert three.startswith("kinspect/kafka:3.9.2-") and four.startswith(f"kinspect/kafka:{DEFAULT_KAFKA_4}-")
    assert three.split("-")[-1] != four.split("-")[-1]  # different log settings went in
