"""The real `kinspect ui` in tmux, read back with capture-pane, as a person would see it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kinspect.lab.topics import create_topics
from kinspect.postmortem.spark.spark_client import engine_socket, engine_status
from tests.helpers import kinspect, partition_state, wait_until

pytestmark = [pytest.mark.lab, pytest.mark.slow]
SOCKET = "kinspect-test"
FILTER_HINT = "filter partitions (topic or topic-N)"  # the empty box's placeholder


def ui_command(*settings: str) -> str:
    """`kinspect ui` as a shell in the pane runs it. Without COLUMNS and LINES: readline,
    loaded under pytest, exports the 80x24 it found, and Textual would believe them over the
    pane's real size."""
    return (f"env -u COLUMNS -u LINES KINSPECT_HOME={os.environ['KINSPECT_HOME']} "
            f"TERM=xterm-256color {' '.join(settings)} {sys.executable} -m kinspect ui")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture
def screen(lab: dict[str, Any]) -> Iterator[None]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (make system-deps installs it)")
    # No warm Spark engine here: its JVM would share the 2 cores with what these tests time
    # (the quit test below runs with it).
    tmux("new-session", "-d", "-s", "ui", "-x", "120", "-y", "36",
         ui_command("KINSPECT_WARM_ENGINE=0"))
    yield
    subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)


def leader_of_test1_on_screen() -> str | None:
    """The leader column of test1's row, as drawn: `│ test1  0  <leader>  <epoch> …`."""
    for line in screen_text().splitlines():
        cells = line.strip("│ ").split()
        if len(cells) > 3 and cells[0] == "test1" and cells[1] == "0":
            return cells[2]
    return None


def screen_text() -> str:
    return tmux("capture-pane", "-p", "-t", "ui")


def filter_to(text: str, expected_leader: str) -> None:
    """Type `/text Enter` once the UI is drawn, and again if the keys arrived too early.

    Keys sent while Python is still importing land in a cooked-mode tty and are lost when
    Textual switches to raw mode, so a person (and this test) looks before typing, and looks
    again at each step: the box open, the text in it, then the filtered rows.
    """
    wait_until(lambda: "controller" in screen_text() and "partitions" in screen_text(), 60,
               "the UI to draw its first snapshot")
    seen: list[str] = []
    for attempt in range(3):
        # One key at a time, looking in between: keys sent in one burst can reach the table
        # before the filter box has focus, and `s`…Enter there would stop a broker.
        tmux("send-keys", "-t", "ui", "/")
        wait_until(lambda: "▔▔▔▔" in screen_text(), 10, "the filter box")
        tmux("send-keys", "-t", "ui", "C-u")
        tmux("send-keys", "-t", "ui", "-l", text)
        try:
            wait_until(lambda: FILTER_HINT not in screen_text() and text in screen_text(), 10,
                       f"{text!r} in the filter box")
        except AssertionError:
            mode = tmux("display-message", "-p", "-t", "ui", "#{pane_in_mode} #{pane_mode}")
            print(f"attempt {attempt + 1}: {text!r} not in the box; tmux pane mode: {mode}")
            seen.append(f"attempt {attempt + 1}: {text!r} never showed in the box (tmux pane "
                        f"in mode: {mode.strip()})\n" + screen_text() + stacks())
            if mode.startswith("1"):  # the pane, not the app, took the keys: leave its mode
                tmux("send-keys", "-t", "ui", "-X", "cancel")
            else:
                tmux("send-keys", "-t", "ui", "Escape")
            continue
        tmux("send-keys", "-t", "ui", "Enter")
        try:
            wait_until(lambda: leader_of_test1_on_screen() == expected_leader, 20,
                       f"leader {expected_leader} on screen")
            return
        except AssertionError:
            seen.append(f"attempt {attempt + 1}: no leader {expected_leader}\n" + screen_text())
    raise AssertionError(f"test1 never showed leader {expected_leader}:\n" + "\n".join(seen))


def stacks() -> str:
    """What else holds the pane's terminal (a process reading it takes the keys), its mode, and
    where the UI's threads are (py-spy, when installed): for a screen that stopped taking keys."""
    pane, tty = tmux("list-panes", "-t", "ui", "-F", "#{pane_pid} #{pane_tty}").split()[:2]
    out = subprocess.run(["ps", "-o", "pid,ppid,stat,args", "-t", tty], capture_output=True,
                         text=True).stdout
    # the terminal's mode: Textual runs it raw (-icanon); back in canonical mode, the tty holds
    # typed keys until a newline, and C-u erases them
    out += subprocess.run(["stty", "-F", tty, "-a"], capture_output=True, text=True).stdout
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if Path(spy).exists():
        out += subprocess.run([spy, "dump", "--pid", pane], capture_output=True, text=True,
                              timeout=60).stdout
    return out


@pytest.mark.extended  # the UI stops taking keys after the whole process-lab sequence
def test_kill_from_outside_shows_new_leader(lab: dict[str, Any], zk: KazooClient,
                                            screen: None) -> None:
    create_topics(lab["bootstrap"], {"test1": 1})
    wait_until(lambda: zk.exists("/brokers/topics/test1/partitions/0/state"), 30, "test1")
    old = str(partition_state(zk, "test1", 0)["leader"])
    filter_to("test1", old)  # other tests' topics may fill the screen
    try:
        kinspect("lab", "kill", f"kafka{old}")
        started = time.monotonic()
        new = wait_until(lambda: (leader := leader_of_test1_on_screen()) not in (None, old, "none")
                         and leader, 45, "a new leader on screen")
        assert new == str(partition_state(zk, "test1", 0)["leader"])
        print(f"new leader {new} on screen {time.monotonic() - started:.1f} s after kill -9")
    finally:
        kinspect("lab", "start", f"kafka{old}", check=False)


def test_quit_names_the_loads_that_keep_running(lab: dict[str, Any], tmp_path: Path) -> None:
    """A load keeps running when the TUI quits (the lab does too); the TUI says so, and how to
    stop it, so no producer hammers the lab unnoticed."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (make system-deps installs it)")
    create_topics(lab["bootstrap"], {"quit-load": 1})
    runner = subprocess.Popen([sys.executable, "-m", "kinspect", "load", "run", "--topic",
                               "quit-load", "--duration", "600", "--rate", "500", "--run-dir",
                               str(tmp_path), "--json", "--no-timeline"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    command = ui_command() + "; sleep 120"
    try:
        wait_until((tmp_path / "workers.json").exists, 30, "the load under way")
        tmux("new-session", "-d", "-s", "ui", "-x", "250", "-y", "30", command)
        wait_until(lambda: "controller" in screen_text() and "partitions" in screen_text(), 60,
                   "the UI to draw its first snapshot")
        # The warm Spark engine for m starts with the screen, and its state is in the header.
        wait_until(lambda: "spark " in screen_text(), 30, "the engine's state in the header")
        wait_until(lambda: engine_status() is not None, 60, "the engine answering")
        tmux("send-keys", "-t", "ui", "q")
        said = wait_until(lambda: "keeps running" in screen_text() and screen_text(), 20,
                          "the quit message")
        assert (f"the load on quit-load keeps running (pid {runner.pid}); stop it with: "
                f"kinspect load stop --run-dir {tmp_path}") in said
        assert runner.poll() is None  # quitting the screen is not stopping the load
        # ...but the engine it started ends with it (its socket gone with it)
        wait_until(lambda: not engine_socket().exists(), 60, "the engine to end with the TUI")
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
        kinspect("load", "stop", "--run-dir", str(tmp_path), check=False)
        runner.wait(timeout=30)


def lag_of(group: str) -> int | None:
    """The lag the consumer groups panel shows for `group` (`… lag  12,345 …`)."""
    for line in screen_text().splitlines():
        if group in line and " lag " in line:
            after = line.split(" lag ", 1)[1].split()
            if after and after[0].replace(",", "").isdigit():
                return int(after[0].replace(",", ""))
    return None


def test_the_groups_panel_shows_a_lagging_group_live(lab: dict[str, Any], screen: None,
                                                    tmp_path: Path) -> None:
    """A producer at 2,000/s and a group that processes at most ~500/s: the panel appears,
    names the group, and its lag grows on screen while the group falls behind."""
    create_topics(lab["bootstrap"], {"lagging": 1})
    load = subprocess.Popen([sys.executable, "-m", "kinspect", "load", "run", "--topic",
                             "lagging", "--duration", "120", "--rate", "2000", "--run-dir",
                             str(tmp_path), "--json", "--no-timeline"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    group = subprocess.Popen([sys.executable, "-m", "kinspect", "consume", "run", "--topic",
                              "lagging", "--group", "g-lagging", "--process-ms", "2", "--batch",
                              "50", "--run-dir", str(tmp_path), "--duration", "120", "--json"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        first = wait_until(lambda: lag_of("g-lagging"), 60, "the group's lag on screen")
        assert "consumer groups" in screen_text()
        later = wait_until(lambda: (lag := lag_of("g-lagging")) and lag > first + 1000 and lag,
                           30, "the lag to grow on screen")
        assert later > first
        wait_until(lambda: any("g-lagging" in line and "↑" in line
                               for line in screen_text().splitlines()), 30,
                   "the lag's trend on screen: growing (↑ …/s)")
    finally:
        kinspect("consume", "stop", "--run-dir", str(tmp_path), check=False)
        kinspect("load", "stop", "--run-dir", str(tmp_path), check=False)
        group.wait(timeout=60)
        load.wait(timeout=60)
