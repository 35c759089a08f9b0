"""Progress bars: drawn on stderr only when it is a terminal; the plain lines of before
otherwise (tests and CI parse them); stdout untouched either way (--json stays clean)."""

from __future__ import annotations

import io
import os
import pickle
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from kinspect.cli import progress as pr
from kinspect.cli.load import LOAD_LINE, load_bar, records_bar
from kinspect.lab.dist import Tick
from kinspect.load.counts import ProducerCounts
from kinspect.load.producer_run import format_progress

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import json
from kinspect.cli.progress import Display
from kinspect.lab.dist import Tick
with Display() as d:
    d.line("starting Spark (local[2])…")
    d.line(Tick("  Step 2/5 : RUN apt-get", "building kinspect/kafka:x", 1, 5, "steps"))
    d.line("built kinspect/kafka:x in 1 s")
    d.bar("reading back", 40, 100, "records")
    d.bar("reading back", 100, 100, "records")
    d.finish("reading back")
print(json.dumps({"ok": True}))
"""


def test_plain_lines_without_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with pr.Display(live=False) as display:
        display.line("reading ledger: 10 rows")
        display.line(Tick("  downloaded a.jar", "fetching", 1, unit="files"))
        display.bar("reading back", 5, 10, "records")
        display.finish("reading back")
        display.say("done in 1.0 s")
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "reading ledger: 10 rows\n  downloaded a.jar\ndone in 1.0 s\n"


def test_live_keeps_each_stage_and_bar_as_a_line_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with pr.Display(live=True) as display:
        display.line("fetching Apache Kafka with Maven")
        for n in range(1, 4):
            display.line(Tick(f"  downloaded {n}.jar", "fetching jars", n, unit="files"))
        display.line("fetched 3 jars")
        display.bar("reading back", 100, 100, "records")
        display.finish("reading back")
        display.say("done")
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    assert lines[0].startswith("fetching Apache Kafka with Maven")
    assert lines[1].startswith("✓ fetching jars: 3 files in ")
    assert lines[2] == "fetched 3 jars"
    assert lines[3].startswith("✓ reading back: 100 records in ")
    assert lines[-1] == "done"


def test_a_failure_marks_the_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(RuntimeError), pr.Display(live=True) as display:
        display.line("waiting for the brokers")
        raise RuntimeError
    assert "✗ waiting for the brokers" in err.getvalue()


def test_the_load_bar_reads_the_runners_line(monkeypatch: pytest.MonkeyPatch) -> None:
    line = format_progress(ProducerCounts(rate=9000, sent=12345, acked=12000, failed=45,
                                          failed_by_error={"_MSG_TIMED_OUT": 45}, in_flight=300,
                                          latency_p50_ms=3, latency_p99_ms=40), 12.5)
    found = LOAD_LINE.match(line)
    assert found is not None, line
    assert (found["elapsed"], found["sent"], found["acked"], found["failed"]) == (
        "12.5", "12345", "12000", "45")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with pr.Display(live=True) as display:
        load_bar(display, 100_000, None)(line)
        task = display._progress.tasks[0]
        assert (task.completed, task.total, task.fields["unit"]) == (12045, 100_000, "messages")
        load_bar(display, None, 60.0)(line)  # --duration: seconds of the duration
        assert (task.completed, task.total) == (12.5, 60.0)
        load_bar(display, 10, None)("something else")  # shown as it is, no crash
    assert load_bar(pr.Display(live=False), 10, None) is pr_common_progress_line()


def pr_common_progress_line() -> object:
    from kinspect.cli.common import progress_line

    return progress_line


def test_records_bar_ends_at_the_total(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert records_bar(pr.Display(live=False), "x") is None  # plain lines say it
    with pr.Display(live=True) as display:
        show = records_bar(display, "reading back")
        assert show is not None
        show(10, 100)
        assert "reading back" in display._bars
        show(100, 100)
        assert "reading back" not in display._bars
        show(5, 50)  # the output topic's read: a new bar
        assert display._progress.tasks[-1].total == 50


def test_a_tick_is_the_plain_line_to_everyone_else() -> None:
    tick = Tick("  Step 3/9 : RUN x", "building", 2, 9, "steps")
    assert tick == "  Step 3/9 : RUN x" and isinstance(tick, str)
    again = pickle.loads(pickle.dumps(tick))
    assert (again, again.step, again.done, again.total, again.unit) == (tick, "building", 2, 9,
                                                                        "steps")


def _run(stderr_on_terminal: bool) -> tuple[str, str]:
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120"}
    env.pop("KINSPECT_NO_BARS", None)
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              stderr=slave if stderr_on_terminal else subprocess.PIPE,
                              timeout=60, check=True)
        os.close(slave)
        err = proc.stderr.decode() if proc.stderr is not None else _drain(master)
    finally:
        os.close(master)
    return proc.stdout.decode(), err


def _drain(fd: int) -> str:
    chunks = []
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def test_bars_only_on_a_terminal_and_stdout_stays_clean() -> None:
    out, err = _run(stderr_on_terminal=True)
    assert out == '{"ok": true}\n'
    assert "\x1b[" in err and "━" in err  # drawn
    assert "✓ reading back: 100 records in" in err and "✓ building kinspect/kafka:x" in err
    out, err = _run(stderr_on_terminal=False)
    assert out == '{"ok": true}\n'
    assert "\x1b[" not in err and "━" not in err
    assert err.splitlines() == ["starting Spark (local[2])…", "  Step 2/5 : RUN apt-get",
                                "built kinspect/kafka:x in 1 s"]
