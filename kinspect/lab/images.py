"""Our two Docker images, made here because this project never pulls a Kafka image by name.

- kinspect/debian:bookworm, the base: docker/make-base-image.sh pulls debian:bookworm-slim where
  a registry answers and makes the same Debian with debootstrap + `docker import` where none does.
- kinspect/kafka:<version>-<digest>, every lab node: docker/Dockerfile on that base, with the
  jars Maven fetched and the log settings of that version's line (log4j 1 .properties for 3.x,
  log4j2 .xml for 4.x; kinspect-node picks whichever the image holds). The tag carries a digest
  of everything that went in, so a changed Dockerfile, script, log setting or Kafka version
  builds a new image and an unchanged one is reused. Any fetched version builds its own image:
  ensure(client, dist.ensure(version="4.4.0"), progress).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import docker
from docker.errors import APIError, BuildError, ImageNotFound

from kinspect.errors import KinspectError
from kinspect.lab.backend import Progress
from kinspect.lab.dist import KafkaDist, Tick, log_configs, resource_path
from kinspect.paths import cache_dir

BASE_IMAGE = "kinspect/debian:bookworm"
KAFKA_REPOSITORY = "kinspect/kafka"
CONTEXT_FILES = ("Dockerfile", "kinspect-node")
STEP = re.compile(r"^Step (\d+)/(\d+) :")


def docker_folder() -> Path:
    """The repository's docker/ folder (Dockerfile, base-image script, compose file)."""
    folder = Path(__file__).resolve().parents[2] / "docker"
    if not (folder / "Dockerfile").exists():
        raise KinspectError(f"the docker backend builds its image from docker/ in kinspect's "
                            f"repository, and {folder} has no Dockerfile (run from a clone)")
    return folder


def log_files(kafka: KafkaDist) -> list[str]:
    """The log settings the image's nodes and tools use (/kinspect/conf): its line's files."""
    return sorted(set(log_configs(kafka.version).values()))


def kafka_tag(kafka: KafkaDist) -> str:
    """kinspect/kafka:<version>-<digest of the build inputs>."""
    digest = hashlib.sha256()
    folder = docker_folder()
    for path in [*(folder / n for n in CONTEXT_FILES), *(resource_path(n) for n in log_files(kafka))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for jar in sorted(kafka.libs.glob("*.jar")):
        digest.update(jar.name.encode() + b"\0")
    return f"{KAFKA_REPOSITORY}:{kafka.version}-{digest.hexdigest()[:10]}"


def have(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
    except ImageNotFound:
        return False
    return True


def ensure(client: docker.DockerClient, kafka: KafkaDist, progress: Progress,
           rebuild: bool = False) -> str:
    """The Kafka image's tag, building the base and the image first when they are missing."""
    tag = kafka_tag(kafka)
    if have(client, tag) and not rebuild:
        return tag
    if rebuild or not have(client, BASE_IMAGE):
        make_base(progress, force=rebuild)
    build_kafka(client, kafka, tag, progress)
    return tag


def tag_latest(client: docker.DockerClient, tag: str) -> None:
    """kinspect/kafka:latest, the name docker/docker-compose.yml uses."""
    client.images.get(tag).tag(KAFKA_REPOSITORY, "latest")


def make_base(progress: Progress, force: bool = False) -> None:
    script = docker_folder() / "make-base-image.sh"
    started = time.monotonic()
    proc = subprocess.Popen(["bash", str(script), *(["--force"] if force else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    last = ""
    for line in proc.stdout:
        last = line.strip() or last
        progress(line.rstrip())
    if proc.wait() != 0:
        raise KinspectError(f"making the base image failed: {last.removeprefix('error: ')}")
    progress(f"base image ready in {time.monotonic() - started:.0f} s")


def _stage(kafka: KafkaDist) -> Path:
    """The build context: Dockerfile, kinspect-node, log4j settings and the jars (hard links)."""
    context = cache_dir() / "docker-context"
    shutil.rmtree(context, ignore_errors=True)
    (context / "libs").mkdir(parents=True)
    (context / "conf").mkdir()
    for name in CONTEXT_FILES:
        shutil.copy2(docker_folder() / name, context / name)
    for name in log_files(kafka):
        shutil.copy2(resource_path(name), context / "conf" / name)
    for jar in kafka.libs.glob("*.jar"):
        try:
            os.link(jar, context / "libs" / jar.name)
        except OSError:
            shutil.copy2(jar, context / "libs" / jar.name)
    return context


def build_kafka(client: docker.DockerClient, kafka: KafkaDist, tag: str, progress: Progress) -> None:
    progress(f"building {tag} from docker/Dockerfile (JRE 17 from Debian, Kafka {kafka.version} "
             "jars from the Maven cache)")
    started = time.monotonic()
    context = _stage(kafka)
    try:
        # The build's RUN steps reach Debian's mirror the way this machine does (host network);
        # the lab's own containers never get a route out.
        stream = client.api.build(path=str(context), tag=tag, rm=True, forcerm=True,
                                  network_mode="host", decode=True,
                                  buildargs={"BASE": BASE_IMAGE, "KAFKA_VERSION": kafka.version})
        for chunk in stream:
            if "error" in chunk:
                raise BuildError(chunk["error"].strip(), [])
            line = str(chunk.get("stream", "")).strip()
            if step := STEP.match(line):  # "Step 3/12 : RUN ...": steps 1 and 2 are done
                progress(Tick("  " + line, f"building {tag}", int(step[1]) - 1, int(step[2]),
                              "steps"))
    except (BuildError, APIError) as exc:
        raise KinspectError(f"building {tag} failed: {str(exc).strip().splitlines()[-1][:200]}") from None
    finally:
        shutil.rmtree(context, ignore_errors=True)
    progress(f"built {tag} in {time.monotonic() - started:.0f} s")
