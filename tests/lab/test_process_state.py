"""Whether a lab node's process lives, read from /proc, against real processes.

A node starts as `ip netns exec … java …`: two execs. While a process execs, the kernel shows
it with no arguments for a moment; read there, a starting broker looked dead and `lab up`
failed with "kafka3 exited while starting" (CI, Kafka 4.4.0, nothing in the node's log)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kinspect.lab.alive import process_state

TAG = "test-lab-id"

EXEC_CHAIN = """
n=$1; shift
[ "$n" -le 0 ] && exec /bin/sh -c 'sleep 0.5; :' sh "$@"
exec /bin/sh "$0" $((n-1)) "$@"
"""


def test_a_process_that_execs_over_and_over_is_never_read_as_dead(tmp_path: Path) -> None:
    """The old reading (no wait across an exec) said "dead" about 1,700 times in this run."""
    script = tmp_path / "chain.sh"
    script.write_text(EXEC_CHAIN)
    proc = subprocess.Popen(["/bin/sh", str(script), "1500", f"-Dkinspect.lab={TAG}"])
    reads, dead_while_alive = 0, 0
    while proc.poll() is None:
        state = process_state(proc.pid, TAG)
        reads += 1
        if state == "dead" and proc.poll() is None:
            dead_while_alive += 1
    assert reads > 100, "the chain ended before it was read"
    assert dead_while_alive == 0
    assert process_state(proc.pid, TAG) == "dead"  # reaped: gone


def test_a_process_without_the_lab_tag_or_a_zombie_is_dead(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "5"])
    try:
        assert process_state(other.pid, TAG) == "dead"
    finally:
        other.kill()
        other.wait()
    zombie = subprocess.Popen([sys.executable, "-c", "pass", f"-Dkinspect.lab={TAG}"])
    while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        pass  # exited, not yet reaped
    assert process_state(zombie.pid, TAG) == "dead"
    zombie.wait()


def test_a_stopped_process_of_the_lab_is_paused_and_a_kernel_thread_is_not_ours() -> None:
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 5; :", "sh", f"-Dkinspect.lab={TAG}"])
    try:
        assert process_state(proc.pid, TAG) == "running"
        proc.send_signal(19)  # SIGSTOP
        while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            pass
        assert process_state(proc.pid, TAG) == "paused"
    finally:
        proc.kill()
        proc.wait()
    assert process_state(2, TAG) == "dead"  # kthreadd: no arguments, ever
