"""The Kafka distribution: jars resolved by Maven from the pom kept in this package.

Maven is the only way jars arrive (the machine may reach Maven Central and nothing else),
and the result is cached outside the repo so later runs work offline.
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
_READY_MARKER = ".complete"
FETCH_STEP = "fetching Kafka's jars with Maven"


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
    """The Kafka version the pom pins (single source of truth)."""
    text = pom_path().read_text()
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", text)
    if not match:
        raise KinspectError(f"cannot read kafka.version from {pom_path()}")
    return match.group(1)


def pom_path() -> Path:
    return Path(str(resources.files("kinspect.lab") / "resources" / _POM))


def resource_path(name: str) -> Path:
    return Path(str(resources.files("kinspect.lab") / "resources" / name))


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

    def tool_command(self, main_class: str, *args: str, heap: str = "256m") -> list[str]:
        """A command line running one of Kafka's own tools from the same jars."""
        return [
            self.java,
            f"-Xmx{heap}",
            f"-Dlog4j.configuration=file:{resource_path('tools-log4j.properties')}",
            "-cp",
            self.classpath,
            main_class,
            *args,
        ]


# Kafka's kafka-consumer-groups tool (moved from kafka.admin to the tools jar in 3.x)
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def dist_home(version: str | None = None) -> Path:
    return cache_dir() / f"kafka-{version or kafka_version()}"


def require_java() -> str:
    java = shutil.which("java")
    if not java:
        raise KinspectError("Java is not installed: kinspect needs a Java 17+ runtime ('java')")
    return java


def installed() -> KafkaDist | None:
    """The cached distribution, or None when it has not been fetched yet."""
    home = dist_home()
    if (home / _READY_MARKER).exists():
        return KafkaDist(home=home, version=kafka_version(), java=require_java())
    return None


def fetch(progress: Callable[[str], None] | None = None, force: bool = False) -> KafkaDist:
    """Resolve the jars with Maven into the cache; a no-op when they are already there."""
    java = require_java()
    existing = installed()
    if existing and not force:
        return existing
    mvn = shutil.which("mvn")
    if not mvn:
        raise KinspectError("Maven is not installed: kinspect fetches Kafka's jars with 'mvn'")
    version = kafka_version()
    home = dist_home(version)
    staging = home.with_name(home.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    say = progress or (lambda line: print(line, file=sys.stderr))
    say(f"fetching Apache Kafka {version} and ZooKeeper jars with Maven into {home}")
    cmd = [
        mvn,
        "-B",
        "-f",
        str(pom_path()),
        "dependency:copy-dependencies",
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
    if rc != 0 or not jars:
        errors = [t for t in tail if "ERROR" in t] or tail[-1:]
        reason = errors[0].replace("[ERROR]", "").strip() if errors else f"exit code {rc}"
        raise KinspectError(f"fetching Kafka {version} with Maven failed: {reason[:300]}")
    (staging / _READY_MARKER).write_text(version + "\n")
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)
    say(f"fetched {len(jars)} jars for Kafka {version}")
    return KafkaDist(home=home, version=version, java=java)


def ensure(progress: Callable[[str], None] | None = None) -> KafkaDist:
    return installed() or fetch(progress)
