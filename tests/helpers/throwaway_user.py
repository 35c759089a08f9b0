"""A real unprivileged user for a test, made and removed by the test (it runs as root, as CI
does): no sudo, no groups, a home of its own, kinspect through a Python it may execute."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType

from tests.helpers.unprivileged import run_as, user_python


class ThrowawayUser:
    """`with ThrowawayUser() as user:` a user that exists only inside the block; on leaving,
    every process it still has is killed and it is deleted with its home."""

    def __init__(self) -> None:
        self.name = f"ks{uuid.uuid4().hex[:8]}"
        self.home = Path(tempfile.mkdtemp(prefix="kinspect-user-"))
        self.uid = self.gid = -1
        self.python = Path()

    def __enter__(self) -> ThrowawayUser:
        subprocess.run(["useradd", "-M", "-d", str(self.home), "-s", "/bin/bash", self.name],
                       check=True)
        entry = pwd.getpwnam(self.name)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.home.chmod(0o755)
        self._python()
        self._jars()
        subprocess.run(["chown", "-R", f"{self.uid}:{self.gid}", str(self.home)], check=True)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        subprocess.run(["pkill", "-KILL", "-u", str(self.uid)], capture_output=True)
        deadline = time.monotonic() + 20
        while self.processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        left = self.processes()
        subprocess.run(["userdel", self.name], capture_output=True)
        shutil.rmtree(self.home, ignore_errors=True)
        assert not left, f"processes of {self.name} outlived it: {left}"

    def _python(self) -> None:
        self.python = user_python(self.home)

    def _jars(self) -> None:
        """Kafka's jars, copied: root's cache is not this user's to read."""
        from kinspect.lab import dist

        kafka = dist.ensure()
        shutil.copytree(kafka.home, self.home / "cache" / kafka.home.name, symlinks=True)

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name,
                "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8",
                "KINSPECT_HOME": str(self.home / ".kinspect"),
                "KINSPECT_CACHE": str(self.home / "cache"), "KINSPECT_BACKEND": "process",
                "KINSPECT_WARM_ENGINE": "0", "TMUX_TMPDIR": str(self.home)}

    def run(self, *argv: str, check: bool = True, timeout: float = 300
            ) -> subprocess.CompletedProcess[str]:
        """A command as this user: its uid and gid, no supplementary groups, its own env."""
        proc = run_as(self.uid, self.gid, argv, self.env(), cwd=self.home, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} as {self.name}: exit {proc.returncode}\n"
                                 f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
        return proc

    def kinspect(self, *args: str, check: bool = True, timeout: float = 300
                 ) -> subprocess.CompletedProcess[str]:
        return self.run(str(self.python), "-m", "kinspect", *args, check=check, timeout=timeout)

    def command(self, *args: str) -> str:
        """`kinspect ARGS` as a shell line (for the user's tmux pane)."""
        return " ".join([str(self.python), "-m", "kinspect", *args])

    def tmux(self, *args: str, check: bool = True) -> str:
        return self.run("tmux", "-L", "kinspect-user", *args, check=check).stdout

    def processes(self) -> list[int]:
        out = subprocess.run(["pgrep", "-u", str(self.uid)], capture_output=True, text=True)
        return [int(pid) for pid in out.stdout.split()]

    def lab_processes(self, lab_id: str) -> dict[int, int]:
        """Host pid -> owner uid of every JVM tagged with this lab id (seen from the host)."""
        out = subprocess.run(["pgrep", "-f", f"kinspect.lab={lab_id}"], capture_output=True,
                             text=True).stdout.split()
        owners: dict[int, int] = {}
        for pid in map(int, out):
            try:
                owners[pid] = os.stat(f"/proc/{pid}").st_uid
            except FileNotFoundError:
                continue
        return owners


def host_network_things() -> tuple[frozenset[str], ...]:
    """The host's namespaces, links and firewall rules: a rootless lab must leave them alone."""
    def lines(*cmd: str) -> frozenset[str]:
        out = subprocess.run(list(cmd), capture_output=True, text=True).stdout
        return frozenset(line.split("[")[0] for line in out.splitlines()
                         if line and not line.startswith("#"))

    links = frozenset(line.split(":")[1].strip().split("@")[0] for line in
                      subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                                     text=True).stdout.splitlines())
    return lines("ip", "netns", "list"), links, lines("iptables-save")
