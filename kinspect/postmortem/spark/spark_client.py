"""Talking to the warm engine (spark_server.py): its status, a post-mortem on it, starting one.

Where it answers: a Unix socket named after KINSPECT_HOME (one engine per home), in the
temp dir because a socket path is limited to ~100 bytes and homes in test dirs are long.
Every function here is safe to call when no engine runs: None or False, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.paths import kinspect_home
from kinspect.postmortem.story.values import Report

ENGINE_LOG = "engine.log"


@dataclass(frozen=True)
class EngineStatus:
    state: str  # starting, ready, busy, failed
    master: str
    pid: int
    jobs: int
    error: str = ""

    @property
    def usable(self) -> bool:
        """Worth sending a job to: ready, busy (it queues) or still starting (it waits)."""
        return self.state in {"starting", "ready", "busy"}


def engine_socket(home: Path | None = None) -> Path:
    home = (home or kinspect_home()).expanduser().resolve()
    digest = hashlib.sha1(str(home).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"kinspect-{os.getuid()}-{digest}-engine.sock"


def _connect(path: Path, timeout_s: float) -> socket.socket | None:
    """A connection to our own engine: a socket in the shared temp dir that another user made
    could hand back any report, so only one of ours is asked."""
    try:
        if path.stat().st_uid != os.getuid():
            return None
    except OSError:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def engine_status(path: Path | None = None, timeout_s: float = 1.0) -> EngineStatus | None:
    """The engine's state, or None when none answers."""
    sock = _connect(path or engine_socket(), timeout_s)
    if sock is None:
        return None
    try:
        with sock, sock.makefile("rwb") as stream:
            stream.write(b'{"op": "status"}\n')
            stream.flush()
            answer = json.loads(stream.readline() or b"{}")
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(answer, dict) or "state" not in answer:
        return None
    return EngineStatus(str(answer["state"]), str(answer.get("master", "")),
                        int(answer.get("pid", 0)), int(answer.get("jobs", 0)),
                        str(answer.get("error", "")))


class EngineGone(KinspectError):
    """No warm engine answers, or it ended mid-job: the job can still run cold."""


def postmortem_if_warm(run_dir: Path, out: Path | None = None, chart: bool = True,
                       say: Callable[[str], None] | None = None,
                       master: str | None = None) -> Report | None:
    """The report from the warm engine when a usable one runs (with `master`, if named); None
    when there is none or it ended before answering: the caller runs the post-mortem cold."""
    say = say or (lambda _line: None)
    engine = engine_status()
    if engine is None or not engine.usable or master not in (None, engine.master):
        return None
    say(f"post-mortem on the warm Spark engine (pid {engine.pid}, {engine.state})")
    try:
        return postmortem_on_engine(run_dir, out, chart, say)
    except EngineGone as exc:
        say(f"{exc}: running it on a Spark session of its own")
        return None


def postmortem_on_engine(run_dir: Path, out: Path | None = None, chart: bool = True,
                         say: Callable[[str], None] | None = None,
                         path: Path | None = None) -> Report:
    """Run the post-mortem on the warm engine; KinspectError as run_postmortem raises it."""
    say = say or (lambda _line: None)
    sock = _connect(path or engine_socket(), 5.0)
    if sock is None:
        raise EngineGone("the warm Spark engine is not running")
    request = {"op": "postmortem", "run_dir": str(run_dir.resolve()),
               "out": str(out.resolve()) if out else None, "chart": chart}
    with sock, sock.makefile("rwb") as stream:
        sock.settimeout(None)  # a big run takes minutes; the engine says how far it got
        stream.write(json.dumps(request).encode() + b"\n")
        stream.flush()
        try:
            for line in stream:
                answer = json.loads(line)
                if "say" in answer:
                    say(str(answer["say"]))
                elif "report" in answer:
                    return Report.from_json(answer["report"])
                elif "error" in answer:
                    raise KinspectError(str(answer["error"]))
        except (OSError, json.JSONDecodeError):
            pass
    raise EngineGone("the warm Spark engine went away during the post-mortem")


def start_engine(parent_pid: int | None = None, home: Path | None = None) -> subprocess.Popen[bytes]:
    """`kinspect postmortem --serve` in the background, its output in KINSPECT_HOME/engine.log;
    with `parent_pid` it ends when that process does."""
    home = home or kinspect_home()
    home.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "kinspect", "postmortem", "--serve"]
    if parent_pid is not None:
        command += ["--parent", str(parent_pid)]
    with open(home / ENGINE_LOG, "ab") as log:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)  # Ctrl-C in the TUI is not its signal
