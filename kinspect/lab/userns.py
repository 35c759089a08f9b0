"""A rootless lab: the process lab inside a user namespace kinspect holds.

Without root, Linux still lets a user own a user namespace and, in it, network and mount
namespaces of their own: the lab's bridge, veths, iptables rules and qdiscs are made there
exactly as root makes them on the host. One holder process (PID 1 of a fresh PID namespace)
keeps the namespaces alive; when it dies the kernel kills every process in them, so no JVM
outlives it. kinspect's commands that talk to the lab re-run themselves inside with nsenter.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kinspect.errors import KinspectError

# Ubuntu 23.10+ restricts unprivileged user namespaces through AppArmor.
APPARMOR_SYSCTL = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
MAX_USERNS = Path("/proc/sys/user/max_user_namespaces")
DEBIAN_CLONE = Path("/proc/sys/kernel/unprivileged_userns_clone")
UNSHARE_FLAGS = ("--user", "--map-root-user", "--net", "--mount", "--pid", "--fork",
                 "--mount-proc")
ROOT_FIX = ("sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor "
            "profile allowing userns for unshare)")


def _sysctl(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def blocked_by_settings() -> str | None:
    """The kernel setting that forbids unprivileged user namespaces, with its root fix."""
    if _sysctl(MAX_USERNS) == "0":
        return ("user namespaces are disabled (user.max_user_namespaces = 0); one root step "
                "enables them: sudo sysctl -w user.max_user_namespaces=15000")
    if _sysctl(DEBIAN_CLONE) == "0":
        return ("unprivileged user namespaces are disabled; one root step enables them: "
                "sudo sysctl -w kernel.unprivileged_userns_clone=1")
    if _sysctl(APPARMOR_SYSCTL) == "1":
        return f"AppArmor restricts unprivileged user namespaces; one root step: {ROOT_FIX}"
    return None


def userns_support() -> str | None:
    """None when this user can hold a rootless lab here, else one line: why not, and the fix.

    Tried for real (a throwaway namespace making a bridge and an iptables rule), because
    settings alone do not tell: Ubuntu 25.04 also confines /usr/bin/unshare itself."""
    for tool in ("unshare", "nsenter", "ip", "iptables", "tc"):
        if not shutil.which(tool):
            return (f"a rootless lab needs '{tool}' "
                    "(apt install util-linux iproute2 iptables)")
    setting = blocked_by_settings()
    if setting:
        return setting
    probe = ("ip link add ks-probe type bridge && iptables -w -A INPUT -i ks-probe -j DROP "
             "&& mount -t tmpfs tmpfs /run")
    try:
        proc = subprocess.run(["unshare", *UNSHARE_FLAGS, "sh", "-c", probe],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"could not try a user namespace: {exc}"
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        why = detail[-1] if detail else f"exit code {proc.returncode}"
        return (f"this user cannot make a user namespace with its own network ({why}); "
                f"one root step may enable it: {ROOT_FIX}")
    return None


def is_root() -> bool:
    return os.geteuid() == 0


HOLDER_ENV = "KINSPECT_USERNS_HOLDER"  # set inside: the holder's pid as the host sees it
HOLDER_FILE = "userns.json"
READY_S = 20.0


@dataclass(frozen=True)
class Holder:
    """The process keeping a rootless lab's namespaces: `pid` is PID 1 inside (as the host
    numbers it), `unshare_pid` its parent outside; either dying ends the lab."""

    pid: int
    unshare_pid: int
    uid: int

    def alive(self) -> bool:
        """Alive and still the namespace we made (a reused pid is not ours)."""
        try:
            theirs = os.readlink(f"/proc/{self.pid}/ns/user")
            return theirs != os.readlink("/proc/self/ns/user") and \
                os.stat(f"/proc/{self.pid}").st_uid == self.uid
        except OSError:
            return False


def inside() -> int | None:
    """The holder's pid when this process runs inside a rootless lab's namespace."""
    value = os.environ.get(HOLDER_ENV)
    return int(value) if value and value.isdigit() else None


def read_holder(lab_root: Path) -> Holder | None:
    try:
        return Holder(**json.loads((lab_root / HOLDER_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def start_holder(lab_root: Path) -> Holder:
    """A user namespace with its own network, mounts (a private /run for `ip netns`) and PIDs,
    held by this module's `hold()` as its PID 1; back when it is ready."""
    lab_root.mkdir(parents=True, exist_ok=True)
    with open(lab_root / "userns-holder.log", "ab") as log:  # the holder keeps its own copy
        proc = subprocess.Popen(
            ["unshare", *UNSHARE_FLAGS, "--kill-child", *this_kinspect(), "kinspect.lab.userns"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            env=this_kinspect_env())
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        child = _only_child(proc.pid)
        if child and _run_is_private(child):
            holder = Holder(pid=child, unshare_pid=proc.pid, uid=os.getuid())
            (lab_root / HOLDER_FILE).write_text(json.dumps(asdict(holder)))
            return holder
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    tail = (lab_root / "userns-holder.log").read_text(errors="replace").strip().splitlines()
    raise KinspectError("could not start the rootless lab's user namespace"
                        + (f": {tail[-1]}" if tail else ""))


def _only_child(pid: int) -> int | None:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def _run_is_private(pid: int) -> bool:
    """The holder has mounted its own /run (where `ip netns` keeps its namespaces)."""
    try:
        mounts = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    except OSError:
        return False
    return any(line.split()[4] == "/run" and " - tmpfs " in line for line in mounts)


def stop_holder(lab_root: Path, holder: Holder) -> None:
    """End the namespace: the kernel kills every process left in it (no JVM outlives it)."""
    for pid in (holder.unshare_pid, holder.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while holder.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    (lab_root / HOLDER_FILE).unlink(missing_ok=True)


def enter_command(holder: Holder, argv: list[str]) -> list[str]:
    """`kinspect ARGV` run inside the holder's namespaces, as this same user."""
    return ["nsenter", "--preserve-credentials", f"--target={holder.pid}", "--user", "--net",
            "--mount", "--pid", f"--wd={os.getcwd()}", "--", *this_kinspect(), "kinspect", *argv]


def this_kinspect() -> list[str]:
    """`python -m` of this very kinspect: -P keeps the working directory off the path (a
    folder named kinspect there, such as KINSPECT_HOME, would shadow the package)."""
    return [sys.executable, "-P", "-m"]


def this_kinspect_env() -> dict[str, str]:
    """The environment, with the folder this kinspect was imported from first on the path."""
    here = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{here}{os.pathsep}{path}" if path else here}


def run_inside(holder: Holder, argv: list[str]) -> int:
    """Run the command inside and return its exit code; the terminal is passed through."""
    env = {**this_kinspect_env(), HOLDER_ENV: str(holder.pid)}
    try:
        return subprocess.run(enter_command(holder, argv), env=env, check=False).returncode
    except KeyboardInterrupt:
        return 130


def hold() -> None:
    """PID 1 of the lab's namespaces: a private /run, loopback up, then reap orphans forever
    (JVMs whose starter exited are re-parented here)."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/run"], check=True)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            time.sleep(1.0)


if __name__ == "__main__":
    hold()
