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
import sys
import time
import tomllib
from pathlib import Path

import docker
from docker.errors import APIError, BuildError, ImageNotFound

from kinspect import __version__
from kinspect.errors import KinspectError
from kinspect.lab.backend import Progress
from kinspect.lab.dist import KafkaDist, Tick, log_configs, resource_path
from kinspect.paths import cache_dir

BASE_IMAGE = "kinspect/debian:bookworm"
KAFKA_REPOSITORY = "kinspect/kafka"
CONTEXT_FILES = ("Dockerfile", "kinspect-node")
KINSPECT_REPOSITORY = "kinspect/kinspect"
KINSPECT_DOCKERFILE = "kinspect.Dockerfile"
# The wheels the kinspect image installs: CPython 3.11 (Debian bookworm's) on x86_64 glibc
# (bookworm has 2.36), whatever this host is (a Mac too).
WHEEL_TARGET = ("--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                *(arg for minor in range(17, 37) for arg in ("--platform",
                                                             f"manylinux_2_{minor}_x86_64")))
# How pip names a project it found no wheel of (alone, or inside a resolution conflict).
NO_WHEEL = re.compile(r"(?:No matching distribution found for |no matching distributions "
                      r"available for your environment:\s+)([A-Za-z0-9_.\-]+)")
STEP = re.compile(r"^Step (\d+)/(\d+) :")


DOCKER_DIR_ENV = "KINSPECT_DOCKER_DIR"  # the relay container's view of the host's docker/


def docker_folder() -> Path:
    """The repository's docker/ folder (Dockerfile, base-image script, compose file)."""
    folder = Path(os.environ.get(DOCKER_DIR_ENV) or Path(__file__).resolve().parents[2] / "docker")
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
        _build(client, context, tag, progress, dockerfile="Dockerfile",
               buildargs={"BASE": BASE_IMAGE, "KAFKA_VERSION": kafka.version})
    finally:
        shutil.rmtree(context, ignore_errors=True)
    progress(f"built {tag} in {time.monotonic() - started:.0f} s")


def _build(client: docker.DockerClient, context: Path, tag: str, progress: Progress,
           dockerfile: str, buildargs: dict[str, str]) -> None:
    """docker build, its steps shown as progress, a failure as one line."""
    try:
        # The build's RUN steps reach Debian's mirror the way this machine does (host network);
        # the lab's own containers never get a route out. A quarter of the default CPU weight:
        # a build beside a running lab (`make test` builds while the process lab's tests run)
        # yields to the lab's JVMs, and on an idle machine it runs as fast as ever.
        stream = client.api.build(path=str(context), dockerfile=dockerfile, tag=tag, rm=True,
                                  forcerm=True, network_mode="host", decode=True,
                                  buildargs=buildargs, container_limits={"cpushares": 256})
        for chunk in stream:
            if "error" in chunk:
                raise BuildError(chunk["error"].strip(), [])
            line = str(chunk.get("stream", "")).strip()
            if step := STEP.match(line):  # "Step 3/12 : RUN ...": steps 1 and 2 are done
                progress(Tick("  " + line, f"building {tag}", int(step[1]) - 1, int(step[2]),
                              "steps"))
    except (BuildError, APIError) as exc:
        raise KinspectError(f"building {tag} failed: {str(exc).strip().splitlines()[-1][:200]}") from None


# ----- the kinspect image (the container relay) ----------------------------------------------

def repository() -> Path:
    """kinspect's source tree (pyproject.toml beside the package): the image's wheel is made
    from it."""
    return docker_folder().parent


def _sources() -> list[Path]:
    """What a wheel of kinspect is made of, in a stable order."""
    root = repository()
    package = [path for path in (root / "kinspect").rglob("*")
               if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"]
    return [root / "pyproject.toml", root / "README.md", root / "constraints.txt",
            docker_folder() / KINSPECT_DOCKERFILE, *sorted(package)]


def kinspect_tag(base: str) -> str:
    """kinspect/kinspect:<version>-<digest of its base, Dockerfile, pins and sources>."""
    digest = hashlib.sha256(base.encode() + b"\0")
    root = repository()
    for path in _sources():
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return f"{KINSPECT_REPOSITORY}:{__version__}-{digest.hexdigest()[:10]}"


def ensure_kinspect(client: docker.DockerClient, kafka: KafkaDist, progress: Progress,
                    rebuild: bool = False) -> str:
    """The kinspect image's tag, building it (and the Kafka image under it) when missing;
    rebuild: this image again (`lab images --rebuild` remakes the Kafka image itself)."""
    base = ensure(client, kafka, progress)
    tag = kinspect_tag(base)
    if have(client, tag) and not rebuild:
        return tag
    started = time.monotonic()
    context = _stage_kinspect(progress)
    try:
        progress(f"building {tag} from docker/{KINSPECT_DOCKERFILE} on {base}")
        _build(client, context, tag, progress, dockerfile=KINSPECT_DOCKERFILE,
               buildargs={"BASE": base, "KINSPECT_VERSION": __version__})
    finally:
        shutil.rmtree(context, ignore_errors=True)
    progress(f"built {tag} in {time.monotonic() - started:.0f} s")
    _remove_older(client, tag)
    return tag


def _remove_older(client: docker.DockerClient, tag: str) -> None:
    """kinspect images of earlier sources are of no further use (one in use stays)."""
    for image in client.images.list(KINSPECT_REPOSITORY):
        for old in image.tags:
            if old != tag:
                try:
                    client.images.remove(old)
                except APIError:
                    continue


def _stage_kinspect(progress: Progress) -> Path:
    """The build context: the Dockerfile, deps/ (dependency wheels) and app/ (kinspect's)."""
    context = cache_dir() / "kinspect-context"
    shutil.rmtree(context, ignore_errors=True)
    (context / "app").mkdir(parents=True)
    shutil.copy2(docker_folder() / KINSPECT_DOCKERFILE, context / KINSPECT_DOCKERFILE)
    wheel = _kinspect_wheel(context / "app", progress)
    deps = _dependency_wheels(wheel, progress)
    (context / "deps").mkdir()
    for path in deps.glob("*.whl"):
        _link(path, context / "deps" / path.name)
    return context


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _pip(args: list[str]) -> subprocess.CompletedProcess[str]:
    """pip of the Python running kinspect, configured as this machine configures it (the index
    comes from pip's own settings, never from this repository)."""
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, check=False)


def _pip_failed(proc: subprocess.CompletedProcess[str], what: str) -> KinspectError:
    lines = [line for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
    return KinspectError(f"{what} failed: {lines[-1][:200] if lines else f'exit {proc.returncode}'}")


def _kinspect_wheel(target: Path, progress: Progress) -> Path:
    """A wheel of kinspect, made from a copy of the sources (no build/ left in the repo)."""
    root = repository()
    source = target.parent / "source"
    for path in _sources():
        relative = path.relative_to(root)
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, source / relative)
    progress("making a wheel of kinspect")
    proc = _pip(["wheel", "-q", "--no-deps", "-w", str(target), str(source)])
    shutil.rmtree(source, ignore_errors=True)
    if proc.returncode != 0:
        raise _pip_failed(proc, "making kinspect's wheel")
    return next(target.glob("kinspect-*.whl"))


def _requirement(wheel: Path) -> str:
    """kinspect's wheel with every extra: `[all]` when pyproject.toml has it."""
    with (repository() / "pyproject.toml").open("rb") as handle:
        extras = tomllib.load(handle)["project"].get("optional-dependencies", {})
    return f"{wheel}[all]" if "all" in extras else str(wheel)


def _dependency_wheels(wheel: Path, progress: Progress) -> Path:
    """Every dependency as a wheel for the image, at constraints.txt's versions; kept in the
    cache (keyed by the pins and the dependencies), so a rebuild downloads nothing."""
    pins = repository() / "constraints.txt"
    key = hashlib.sha256(pins.read_bytes() + (repository() / "pyproject.toml").read_bytes())
    folder = cache_dir() / "kinspect-wheels" / key.hexdigest()[:10]
    if (folder / ".complete").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    progress(f"downloading the dependencies' wheels for the image into {folder}")
    built: set[str] = set()
    while True:
        proc = _pip(["download", "-d", str(folder), "--find-links", str(folder),
                     "--find-links", str(wheel.parent), "-c", str(pins), *WHEEL_TARGET,
                     _requirement(wheel)])
        missing = NO_WHEEL.search(proc.stdout + proc.stderr)
        if proc.returncode == 0:
            break
        if missing is None or missing[1] in built:
            raise _pip_failed(proc, "downloading the image's wheels")
        built.add(missing[1])
        _pure_wheel(missing[1], folder, pins, progress)
    for stale in folder.glob("kinspect-*.whl"):
        stale.unlink()
    (folder / ".complete").touch()
    return folder


def _pure_wheel(name: str, folder: Path, pins: Path, progress: Progress) -> None:
    """A project published only as sources (pyspark): build its wheel here, which is fine for
    the image only when it is pure Python (py3-none-any)."""
    progress(f"{name} has no wheel on the index: building one from its sources")
    proc = _pip(["wheel", "-q", "--no-deps", "-w", str(folder), "-c", str(pins), name])
    if proc.returncode != 0:
        raise _pip_failed(proc, f"building {name}'s wheel")
    stem = name.lower().replace("-", "_").replace(".", "_")
    for path in folder.glob("*.whl"):
        if path.name.lower().startswith(stem + "-") and not path.name.endswith("-none-any.whl"):
            path.unlink()
            raise KinspectError(f"{name} has no wheel for Linux x86_64 and is not pure Python: "
                                "the kinspect image cannot be built from this host")
