"""The Kafka distribution: jars resolved by Maven from the poms kept in this package.

Maven is the only way jars arrive (the machine may reach Maven Central and nothing else),
and the result is cached outside the repo so later runs work offline.

Two lines, one pom each, because they log differently and run differently:
- 3.9.x (kafka-pom.xml, the default pin): ZooKeeper or KRaft, logging through reload4j
  (log4j 1 .properties files);
- 4.x (kafka4-pom.xml, DEFAULT_KAFKA_4): KRaft only, logging through log4j2 (.xml files).
Any release of either line is fetched from its line's pom with -Dkafka.version=X.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.paths import cache_dir

_POM = "kafka-pom.xml"
_POM_4 = "kafka4-pom.xml"
_READY_MARKER = ".complete"
FETCH_STEP = "fetching Kafka's jars with Maven"

# The 4.x release kinspect is tested with: the newest 4.x that Maven Central had when it was
# pinned. kafka4-pom.xml's kafka.version says the same (a unit test keeps them in step).
DEFAULT_KAFKA_4 = "4.4.0"

_RELEASE = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})")
# Short names for the lines' default releases ("--kafka 4"); None is the 3.x pin in kafka-pom.xml.
_ALIASES: dict[str, str | None] = {"3": None, "3.x": None, "4": DEFAULT_KAFKA_4, "4.x": DEFAULT_KAFKA_4}

# The log settings each line's JVMs use, by role: files in kinspect/lab/resources, staged into
# the docker image's /kinspect/conf under the same names. A KRaft node (controller, or a broker
# of a KRaft lab: "kraft-broker") logs as a broker does, plus the KRaft controller's and Raft's
# loggers into controller.log; 4.x's one broker file has them, 3.x has a file of its own.
_LOG_CONFIGS_3 = {"broker": "broker-log4j.properties", "zookeeper": "zookeeper-log4j.properties",
                  "kraft-broker": "broker-kraft-log4j.properties",
                  "controller": "broker-kraft-log4j.properties", "tools": "tools-log4j.properties"}
_LOG_CONFIGS_4 = {"broker": "broker-log4j2.xml", "kraft-broker": "broker-log4j2.xml",
                  "controller": "broker-log4j2.xml", "tools": "tools-log4j2.xml"}


class Tick(str):
    """A progress line that also says how far its step has got (`done` of `total`; None: not
    known ahead, as Maven's downloads), so a terminal can draw a bar. Everyone else reads it as
    the plain line it is."""

    step: str
    done: int
    total: int | None
    unit: str

    def __new__(cls, line: str, step: str = "", done: int = 0, total: int | None = None,
                unit: str = "") -> Tick:  # defaults: pickle rebuilds it from the line alone
        tick = super().__new__(cls, line)
        tick.step, tick.done, tick.total, tick.unit = step, done, total, unit
        return tick


def kafka_version() -> str:
    """The default Kafka version: the one kafka-pom.xml pins (single source of truth)."""
    return _pinned(_POM)


def _pinned(pom: str) -> str:
    path = resource_path(pom)
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", path.read_text())
    if not match:
        raise KinspectError(f"cannot read kafka.version from {path}")
    return match.group(1)


def parse_version(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a Kafka release kinspect can run, or a one-line error: the
    version names a cache directory and goes to Maven, so anything else stops here."""
    match = _RELEASE.fullmatch(version.strip())
    if not match:
        raise KinspectError(f"not a Kafka release version: {version.strip()[:40]!r} "
                            f"(want major.minor.patch, e.g. {kafka_version()} or {DEFAULT_KAFKA_4})")
    major, minor, patch = (int(part) for part in match.groups())
    if not ((major, minor) == (3, 9) or major == 4):
        raise KinspectError(f"kinspect runs Kafka 3.9.x (ZooKeeper or KRaft) and 4.x (KRaft), "
                            f"not {major}.{minor}.{patch}")
    return major, minor, patch


def resolve_version(version: str | None = None) -> str:
    """The release a request names: None (or '3') is the pom's pin, '4' the tested 4.x release,
    anything else must be a release of a line kinspect runs."""
    if version is None:
        return kafka_version()
    key = version.strip().lower()
    if key in _ALIASES:
        return _ALIASES[key] or kafka_version()
    return ".".join(str(part) for part in parse_version(version))


FEATURE_NAME = re.compile(r"[a-z][a-z0-9_.]*")  # e.g. eligible.leader.replicas.version


def feature_problem(name: str) -> str | None:
    """Why `name` cannot be a Kafka feature for `kafka-storage format --feature` (None: it
    can be; whether this release knows it, the tool itself says)."""
    if FEATURE_NAME.fullmatch(name):
        return None
    return f"{name!r} is not a feature name (e.g. eligible.leader.replicas.version)"


def supports_zookeeper(version: str | None = None) -> bool:
    """Whether this release can run in ZooKeeper mode: Kafka 4.0 removed it (KRaft only)."""
    return parse_version(resolve_version(version))[0] < 4


def uses_log4j2(version: str | None = None) -> bool:
    """Whether this release logs through log4j2 (4.x) rather than reload4j / log4j 1 (3.x)."""
    return parse_version(resolve_version(version))[0] >= 4


def pom_path(version: str | None = None) -> Path:
    """The pom Maven resolves this release from (its line's logging backend included)."""
    return resource_path(_POM_4 if uses_log4j2(version) else _POM)


def resource_path(name: str) -> Path:
    return Path(str(resources.files("kinspect.lab") / "resources" / name))


def log_configs(version: str | None = None) -> dict[str, str]:
    """Role (broker, controller, zookeeper on 3.x, tools) -> the log settings file it uses."""
    return dict(_LOG_CONFIGS_4 if uses_log4j2(version) else _LOG_CONFIGS_3)


@dataclass(frozen=True)
class KafkaDist:
    """A fetched distribution: a directory of jars and the Java that runs them."""

    home: Path
    version: str
    java: str

    @property
    def libs(self) -> Path:
        return self.home / "libs"

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")

    @property
    def zookeeper(self) -> bool:
        """Whether this release can run ZooKeeper mode (3.x); 4.x is KRaft only."""
        return supports_zookeeper(self.version)

    @property
    def log4j2(self) -> bool:
        return uses_log4j2(self.version)

    @property
    def dump_log_segments(self) -> str:
        """DumpLogSegments' class: Scala kafka.tools in 3.x's core jar; 4.x moved it to Java
        (org.apache.kafka.tools, the tools jar) and the old name is gone."""
        return "org.apache.kafka.tools.DumpLogSegments" if self.log4j2 else "kafka.tools.DumpLogSegments"

    def log_config(self, role: str = "broker", config_dir: Path | None = None,
                   kraft: bool = False) -> Path:
        """The log settings file a role's JVM uses (kraft: the node is in a KRaft lab): in
        config_dir (e.g. /kinspect/conf in the docker image) or, by default, in this package's
        resources."""
        name = log_configs(self.version).get("kraft-broker" if kraft and role == "broker" else role)
        if name is None:
            raise KinspectError(f"Kafka {self.version} has no {role} role (4.x is KRaft only)")
        return config_dir / name if config_dir is not None else resource_path(name)

    def _config_flag(self, config: Path) -> str:
        if self.log4j2:
            return f"-Dlog4j2.configurationFile={config}"
        return f"-Dlog4j.configuration=file:{config}"

    def logging_flags(self, logs_dir: Path, config_dir: Path | None = None,
                      role: str = "broker", kraft: bool = False) -> list[str]:
        """The JVM flags that make a node write server.log, controller.log and state-change.log
        (zookeeper.log for role zookeeper) into logs_dir with the post-mortem's pattern, with the
        log settings and logging flag of this release's line. role: broker, controller or
        zookeeper; kraft: a broker of a KRaft lab (combined or not), whose controller.log must
        also get the KRaft controller's and the quorum's lines (only 3.x needs telling)."""
        return [f"-Dkafka.logs.dir={logs_dir}",
                self._config_flag(self.log_config(role, config_dir, kraft))]

    def tool_command(self, main_class: str, *args: str, heap: str = "256m") -> list[str]:
        """A command line running one of Kafka's own tools from the same jars (warnings only)."""
        return [
            self.java,
            f"-Xmx{heap}",
            self._config_flag(self.log_config("tools")),
            "-cp",
            self.classpath,
            main_class,
            *args,
        ]


# Kafka's kafka-consumer-groups tool (moved from kafka.admin to the tools jar in 3.x)
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
# Formats a KRaft node's log dirs (meta.properties) before its first start; in core, 3.9 and 4.x
STORAGE_TOOL = "kafka.tools.StorageTool"


def dist_home(version: str | None = None) -> Path:
    return cache_dir() / f"kafka-{resolve_version(version)}"


def require_java() -> str:
    java = shutil.which("java")
    if not java:
        raise KinspectError("Java is not installed: kinspect needs a Java 17+ runtime ('java')")
    return java


def installed(version: str | None = None) -> KafkaDist | None:
    """The cached distribution of a release (None: the default pin), or None when it has not
    been fetched yet."""
    version = resolve_version(version)
    home = dist_home(version)
    if (home / _READY_MARKER).exists():
        return KafkaDist(home=home, version=version, java=require_java())
    return None


def fetch(progress: Callable[[str], None] | None = None, force: bool = False,
          version: str | None = None) -> KafkaDist:
    """Resolve a release's jars with Maven into the cache; a no-op when they are already there.
    version None is the default pin (kafka-pom.xml); '4' the tested 4.x release."""
    version = resolve_version(version)
    java = require_java()
    existing = installed(version)
    if existing and not force:
        return existing
    mvn = shutil.which("mvn")
    if not mvn:
        raise KinspectError("Maven is not installed: kinspect fetches Kafka's jars with 'mvn'")
    home = dist_home(version)
    staging = home.with_name(home.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    say = progress or (lambda line: print(line, file=sys.stderr))
    what = "and ZooKeeper jars" if supports_zookeeper(version) else "jars (KRaft only)"
    say(f"fetching Apache Kafka {version} {what} with Maven into {home}")
    cmd = [
        mvn,
        "-B",
        "-f",
        str(pom_path(version)),
        "dependency:copy-dependencies",
        f"-Dkafka.version={version}",
        f"-DoutputDirectory={staging / 'libs'}",
    ]
    tail: list[str] = []
    downloads = 0
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip()
            tail = [*tail[-20:], line]
            if "Downloaded from" in line:
                artifact = line.split(" (")[0].rsplit("/", 1)[-1]
                downloads += 1
                say(Tick(f"  downloaded {artifact}", FETCH_STEP, downloads, unit="files"))
        rc = proc.wait()
    jars = list((staging / "libs").glob("*.jar"))
    core = staging / "libs" / f"kafka_2.13-{version}.jar"
    if rc != 0 or not core.exists():
        shutil.rmtree(staging, ignore_errors=True)
        raise KinspectError(_failure(version, tail, rc))
    (staging / _READY_MARKER).write_text(version + "\n")
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)
    say(f"fetched {len(jars)} jars for Kafka {version}")
    return KafkaDist(home=home, version=version, java=java)


def _failure(version: str, tail: list[str], rc: int) -> str:
    """One line for a failed fetch: a release Maven cannot find is named as such (a typo or a
    version not yet on Central), anything else gets Maven's first error."""
    errors = [e for e in (t.replace("[ERROR]", "").strip() for t in tail if "ERROR" in t) if e]
    text = " ".join(errors)
    if re.search(r"[Cc]ould not find artifact org\.apache\.kafka:|"
                 r"org\.apache\.kafka:[\w.-]+:\w+:[\d.]+ (\(absent\)|was not found)", text):
        return (f"Maven cannot resolve Apache Kafka {version}: org.apache.kafka:kafka_2.13:{version} "
                "is not in the repositories this machine's Maven reaches (is it a released version?)")
    reason = f"exit code {rc}"
    if errors:
        reason = errors[0]
    elif tail:
        reason = tail[-1]
    return f"fetching Kafka {version} with Maven failed: {reason[:300]}"


def ensure(progress: Callable[[str], None] | None = None,
           version: str | None = None) -> KafkaDist:
    """The cached release (None: the default pin), fetched first when it is missing."""
    return installed(version) or fetch(progress, version=version)
