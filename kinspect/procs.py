"""A process as /proc shows it, read across an exec.

While a process execs (Popen's child becoming `ip`, `ip netns exec` becoming java) the kernel
has swapped in the new memory but not yet laid out the arguments: for that moment the command
line reads empty. Under load the moment stretches; a starting lab node read there looked dead
("kafka3 exited while starting", nothing in its log). Every "is this pid still ours" check
reads through here."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

EXEC_WAIT_S = 2.0  # how long a process may show no arguments before we stop waiting
PF_KTHREAD = 0x00200000  # /proc/PID/stat flags: a kernel thread (no arguments, ever)


@dataclass(frozen=True)
class Process:
    """What /proc says of a pid: its state letter (R, S, T, Z…) and its arguments."""

    state: str
    args: tuple[bytes, ...]

    @property
    def exited(self) -> bool:
        """Dead but not yet reaped (a zombie), or on its way out."""
        return self.state in {"Z", "X"}

    @property
    def stopped(self) -> bool:
        return self.state in {"T", "t"}


def read_process(pid: int) -> Process | None:
    """The process `pid`, its arguments waited for while it is mid-exec; None when there is no
    such pid or it is a kernel thread."""
    deadline = time.monotonic() + EXEC_WAIT_S
    while True:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[6]) & PF_KTHREAD:
            return None
        if cmdline or fields[0] in {"Z", "X"} or time.monotonic() > deadline:
            return Process(fields[0], tuple(cmdline.split(b"\0")[:-1]))
        time.sleep(0.005)
