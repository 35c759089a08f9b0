"""Run a kinspect command in kinspect's own container when this host cannot reach the lab.

Docker Desktop (macOS, Windows) runs the lab's containers in a VM this host has no route to.
Then the command runs in a container of the kinspect image on the lab's network, with the
Docker socket (as Pumba's and blockade's users run them), the user's folders at the same paths
and the user's uid: the same screen in the same terminal, run dirs and reports in the user's
folders. A command that makes a lab (demo, lab up, lab reset, a scenario) is relayed whole: in
the container, the lab's network is joined as soon as it is made (reach.join_lab_network), so
the readiness waits, the topics and the TUI all run where the brokers are.
"""

from __future__ import annotations

import argparse
import importlib.util
import ipaddress
import os
import platform
import shutil
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from kinspect.cli.placement import MAKES_A_LAB, command_key, stays_on_host
from kinspect.errors import KinspectError
from kinspect.lab import reach
from kinspect.lab.reach import RelayChoice
from kinspect.lab.state import LabState, load_state
from kinspect.paths import cache_dir, kinspect_home

SOCKET = "/var/run/docker.sock"  # where the engine's socket is, seen by the engine's containers
PASSED_ENV = ("TERM", "COLORTERM", "NO_COLOR", "TZ")  # the size comes with docker run -t


@dataclass(frozen=True)
class Relay:
    """Where the relayed command runs: the lab's network (None: the engine's default bridge,
    left for the lab's network once the command has made it), and why it is relayed."""

    network: str | None
    state: LabState | None
    why: str


def relay_if_unreachable(args: argparse.Namespace, argv: list[str]) -> int | None:
    """The exit code of `kinspect ARGV` run in kinspect's container when this host cannot
    reach the docker lab it talks to; None when the command runs here as usual."""
    if reach.in_container() or importlib.util.find_spec("docker") is None:
        return None  # already relayed; or a light install, which has no docker backend
    relay = plan(args)
    if relay is None:
        return None
    return run_in_container(argv, relay)


def plan(args: argparse.Namespace) -> Relay | None:
    """Whether (and onto which network) this command is relayed."""
    choice = RelayChoice.from_env()
    if choice is RelayChoice.NEVER:
        return None
    command = command_key(args)
    if stays_on_host(command):
        return None
    state = load_state()
    if state is not None:
        return _for_lab(args, state, choice)
    if command in MAKES_A_LAB:
        return _for_new_lab(args, choice)
    return None


def _for_lab(args: argparse.Namespace, state: LabState, choice: RelayChoice) -> Relay | None:
    """A lab is on disk: relay when it is a docker lab this host does not reach, and the
    command talks to it (not to a cluster of its own --bootstrap or --profile)."""
    if state.backend != "docker" or not _aims_at_lab(args, state):
        return None
    verdict = reach.host_reaches_lab(state)
    if not verdict.relay and choice is RelayChoice.AUTO:
        return None
    network = state.extra.get("docker_network")
    if not network:
        return Relay(None, state, verdict.why)
    return Relay(str(network), state, verdict.why)


def _aims_at_lab(args: argparse.Namespace, state: LabState) -> bool:
    """Without --bootstrap or --profile a command talks to the lab; with them, only when the
    brokers they name are on the lab's network."""
    bootstrap = getattr(args, "bootstrap", None)
    profile = getattr(args, "profile", None)
    if profile and not bootstrap:
        from kinspect.profiles import load_profile

        bootstrap = load_profile(profile, getattr(args, "config", None)).bootstrap
    if not bootstrap:
        return True
    subnet = reach.lab_subnet(state)
    for server in str(bootstrap).split(","):
        host = server.strip().rsplit(":", 1)[0]
        try:
            if ipaddress.ip_address(host) in subnet:
                return True
        except ValueError:
            continue
    return False


def _for_new_lab(args: argparse.Namespace, choice: RelayChoice) -> Relay | None:
    """No lab yet, and this command makes one: relay when it will be a docker lab and the
    engine's networks are out of this host's reach."""
    backend = getattr(args, "backend", None) or "auto"
    if backend == "process":
        return None
    from kinspect.lab import choose_backend, docker_engine

    if backend == "auto" and choose_backend() != "docker":
        return None
    verdict = reach.host_reaches_engine(docker_engine.connect(timeout=10))
    if not verdict.relay and choice is RelayChoice.AUTO:
        return None
    return Relay(None, None, verdict.why)


# ----- running it --------------------------------------------------------------------------

def run_in_container(argv: list[str], relay: Relay) -> int:
    """`docker run` of the kinspect image with this command; its exit code."""
    docker_cli = shutil.which("docker")
    if docker_cli is None:
        raise KinspectError(f"{relay.why}; running kinspect in its container needs the docker "
                            "command (Docker Desktop installs it)")
    image = _image()
    name = f"ks-relay-{uuid.uuid4().hex[:10]}"
    command = [docker_cli, "run", "--rm", "-i", *_terminal(),
               "--name", name, "--label", f"{reach.RELAY_LABEL}=1", "--pid", "host",
               *_network(relay), *_engine_access(), *_mounts(argv), "-w", str(Path.cwd()),
               *_environment(name), image, *argv]
    print(f"kinspect: {relay.why}; running this command in kinspect's container "
          f"({image})", file=sys.stderr, flush=True)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the container's
    try:
        return subprocess.call(command)
    finally:
        signal.signal(signal.SIGINT, previous)


def _image() -> str:
    """The kinspect image, built first when missing (it is made of this checkout)."""
    from kinspect.cli.progress import Display
    from kinspect.lab import dist, docker_engine, images

    with Display() as display:
        client = docker_engine.shared_client()
        return images.ensure_kinspect(client, dist.ensure(display.line), display.line)


def _terminal() -> list[str]:
    """A terminal for the container (-t) when this command has one on both ends."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return ["-t"]
    return []


def _network(relay: Relay) -> list[str]:
    """On the lab's network at a relay address, or (a lab still to be made) the default
    bridge, left for the lab's network when the command makes it."""
    if relay.network is None or relay.state is None:
        return []
    from docker.errors import NotFound

    from kinspect.lab import docker_engine

    try:
        network = docker_engine.shared_client().networks.get(relay.network)
    except NotFound:  # the lab's network is gone: `lab down` or `lab up` will say so
        return []
    return ["--network", relay.network, "--ip", reach.free_relay_address(network, relay.state)]


def _desktop() -> bool:
    """Docker Desktop: its VM shares the user's folders as the user's, and its socket is
    /var/run/docker.sock inside the VM whatever DOCKER_HOST says here."""
    from kinspect.lab import docker_engine

    info = docker_engine.shared_client().info()
    return "desktop" in str(info.get("OperatingSystem", "")).lower()


def _engine_access() -> list[str]:
    """The engine's socket, and the user's uid (with the socket's group) on a Linux engine,
    so what the command writes belongs to the user."""
    from kinspect.lab.docker_engine import engine_address

    address = engine_address()
    desktop = _desktop()
    if not address.startswith("unix://") and not desktop:
        return ["-e", f"DOCKER_HOST={address}"]
    socket_path = SOCKET  # Docker Desktop's, inside its VM
    if not desktop:
        socket_path = address.removeprefix("unix://")
    options = ["-v", f"{socket_path}:{SOCKET}"]
    if platform.system() == "Linux" and not desktop and os.geteuid() != 0:
        options += ["--user", f"{os.geteuid()}:{os.getegid()}",
                    "--group-add", str(os.stat(socket_path).st_gid)]
    return options


def _mounts(argv: list[str]) -> list[str]:
    """KINSPECT_HOME, the cache (Kafka's jars), the current folder, the profiles file and the
    folders of absolute paths on the command line, each at its own path."""
    home, cache = kinspect_home().resolve(), cache_dir().resolve()
    for folder in (home, cache):
        folder.mkdir(parents=True, exist_ok=True)  # made by the user, not by the engine as root
    wanted = [home, cache, Path.cwd().resolve(), *_argument_folders(argv)]
    config = _config(Path.home() / ".config" / "kinspect")
    if config.exists():
        folder = config.resolve()
        if config.is_file():
            folder = folder.parent
        wanted.append(folder)
    from kinspect.lab.images import docker_folder

    docker_dir = docker_folder()  # the Kafka image's tag is computed from it in there too
    return [*(option for folder in _outermost(wanted) for option in ("-v", f"{folder}:{folder}")),
            "-v", f"{docker_dir}:{docker_dir}:ro"]


def _argument_folders(argv: list[str]) -> list[Path]:
    folders = []
    for word in argv:
        value = word.split("=", 1)[-1]
        if value.startswith("/") and Path(value).parent.is_dir():
            path = Path(value).resolve()
            if not path.is_dir():
                path = path.parent
            folders.append(path)
    return folders


def _config(default: Path) -> Path:
    """The profiles file or folder: $KINSPECT_CONFIG, `default` when it is unset or empty."""
    given = os.environ.get("KINSPECT_CONFIG")
    if not given:
        return default
    return Path(given)


def _outermost(folders: list[Path]) -> list[Path]:
    """Each folder once, none inside another (a mount point may be given once)."""
    unique = sorted(set(folders), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for folder in unique:
        if folder != Path("/") and not any(folder.is_relative_to(k) for k in kept):
            kept.append(folder)
    return kept


def _environment(name: str) -> list[str]:
    """KINSPECT_* as here (KINSPECT_HOME and the cache resolved), the terminal's settings, and
    the container's own name (it joins a lab network it makes)."""
    from kinspect.lab.images import DOCKER_DIR_ENV, docker_folder

    env = {key: value for key, value in os.environ.items()
           if key.startswith("KINSPECT_") or key in PASSED_ENV}
    env.update({"KINSPECT_HOME": str(kinspect_home().resolve()),
                "KINSPECT_CACHE": str(cache_dir().resolve()), DOCKER_DIR_ENV: str(docker_folder()),
                reach.RELAY_CONTAINER_ENV: name, reach.IN_CONTAINER_ENV: "1"})
    config = _config(Path.home() / ".config" / "kinspect" / "config.toml")
    if config.is_file():
        env["KINSPECT_CONFIG"] = str(config.resolve())
    return [option for key, value in sorted(env.items()) for option in ("-e", f"{key}={value}")]
