"""The warm engine: one Spark session kept running, so a post-mortem starts at once.

Starting Spark and compiling the first query cost ~16 s on a laptop: dead air after every
experiment on stage. `kinspect postmortem --serve` (started in the background by the TUI)
starts a session, runs the whole post-mortem once on a small made-up run dir (postmortem/warm.py), and
once more on the newest demo-sized run of its KINSPECT_HOME (report thrown away), and then
answers on a Unix socket: one JSON line in, progress lines and the report out. It serves
one job at a time; status questions are answered meanwhile. The protocol is in spark_client.
"""

from __future__ import annotations

import json
import os
import signal
import socketserver
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.load.rundir import pid_alive
from kinspect.model.events import JsonObject

if TYPE_CHECKING:
    from kinspect.postmortem import Report

STARTING, READY, BUSY, FAILED = "starting", "ready", "busy", "failed"


class WarmEngine:
    """A Spark session, warmed once, that runs post-mortems one after another."""

    def __init__(self, master: str = "local[2]", memory: str = "2g") -> None:
        self.master, self.memory = master, memory
        self.state, self.error = STARTING, ""
        self.jobs = 0
        self.started_at = time.time()
        self._spark: Any = None
        self._ready = threading.Event()
        self._one_job = threading.Lock()

    def boot(self) -> None:
        """Start the session and warm it; the state says how it went."""
        from kinspect.postmortem.spark import job
        from kinspect.postmortem.warm import warm_on_latest_run, warm_up

        try:
            self._spark = job.start_spark(self.master, memory=self.memory)
            warm_up(self._spark)
            warm_on_latest_run(self._spark)
            self.state = READY
        except Exception as exc:  # the engine is optional: say why, and let callers go cold
            self.state, self.error = FAILED, str(exc).strip().splitlines()[0][:300] if str(exc) \
                else type(exc).__name__
        finally:
            self._ready.set()

    def status(self) -> JsonObject:
        return {"state": self.state, "error": self.error, "master": self.master,
                "pid": os.getpid(), "jobs": self.jobs, "since": self.started_at}

    def postmortem(self, run_dir: Path, out: Path | None, chart: bool,
                   say: Any) -> Report:
        """The same run_postmortem the CLI runs, on the warm session."""
        from kinspect.postmortem import run_postmortem

        if not self._ready.is_set():
            say("waiting for the warm Spark engine to finish starting…")
            self._ready.wait()
        if self.state == FAILED:
            raise KinspectError(f"the warm Spark engine did not start: {self.error}")
        with self._one_job:
            self.state = BUSY
            try:
                return run_postmortem(run_dir, out=out, progress=say, spark=self._spark,
                                      chart=chart)
            finally:
                self.jobs += 1
                self.state = READY

    def stop(self) -> None:
        if self._spark is not None:
            self._spark.stop()


class _Handler(socketserver.StreamRequestHandler):
    """One request line; answers are JSON lines (say…, then report or error)."""

    server: _Server

    def handle(self) -> None:
        try:
            request = json.loads(self.rfile.readline() or b"{}")
        except json.JSONDecodeError:
            request = {}
        engine = self.server.engine
        if request.get("op") == "status":
            self._send(engine.status())
            return
        if request.get("op") != "postmortem" or not isinstance(request.get("run_dir"), str):
            self._send({"error": "unknown request"})
            return
        out = request.get("out")
        try:
            report = engine.postmortem(Path(request["run_dir"]), Path(out) if out else None,
                                       bool(request.get("chart", True)),
                                       lambda line: self._send({"say": line}))
        except KinspectError as exc:
            self._send({"error": str(exc)})
            return
        except Exception as exc:  # one line back; the engine keeps serving
            self._send({"error": f"the warm engine failed: {exc}"})
            return
        self._send({"report": report.to_json()})

    def _send(self, message: JsonObject) -> None:
        try:
            self.wfile.write(json.dumps(message).encode() + b"\n")
            self.wfile.flush()
        except OSError:  # the asker left; the report still lands in the run dir
            pass


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    engine: WarmEngine


def serve(socket_path: Path, master: str = "local[2]", memory: str = "2g",
          parent_pid: int | None = None, say: Any = None) -> int:
    """Answer on `socket_path` until SIGTERM/SIGINT, or until `parent_pid` is gone."""
    say = say or (lambda _line: None)
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    if socket_path.exists():
        socket_path.unlink()
    engine = WarmEngine(master, memory)
    server = _Server(str(socket_path), _Handler)
    socket_path.chmod(0o600)  # a job names paths to read and write: ours alone to ask
    server.engine = engine
    stop = threading.Event()

    def quit_(*_args: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, quit_)
    signal.signal(signal.SIGINT, quit_)
    threading.Thread(target=server.serve_forever, daemon=True, name="engine-socket").start()
    say(f"warm Spark engine ({master}) starting; answering on {socket_path}")
    booting = threading.Thread(target=engine.boot, daemon=True, name="engine-boot")
    booting.start()
    told = False
    try:
        while not stop.wait(1.0):
            if engine.state != STARTING and not told:
                say(f"engine {engine.state}" + (f": {engine.error}" if engine.error else ""))
                told = True
            if parent_pid is not None and not pid_alive(parent_pid):
                break
    finally:
        server.shutdown()
        server.server_close()
        socket_path.unlink(missing_ok=True)
        engine.stop()
    return 0

