"""The TUI's engine keeper, with a stand-in for the engine's answers and for starting one (no
Spark): an engine it only used is replaced when it ends; one it started is not restarted."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kinspect.postmortem.spark.spark_client import EngineStatus
from kinspect.tui import spark_keeper
from kinspect.tui.messages import EngineChanged
from kinspect.tui.spark_keeper import EngineKeeper


class StandInProcess:
    """What start_engine returns, as far as the keeper looks: poll() is None while it runs."""

    def __init__(self, running: bool) -> None:
        self.running = running

    def poll(self) -> int | None:
        return None if self.running else 1

    def terminate(self) -> None:
        self.running = False


def keep(monkeypatch: pytest.MonkeyPatch, answers: list[EngineStatus | None],
         started_running: bool) -> tuple[list[str], list[StandInProcess]]:
    """Run the keeper over `answers` (one per poll; the last repeats) until they are used."""
    answers = list(answers)
    started: list[StandInProcess] = []
    states: list[str] = []
    done = threading.Event()

    def status(*_: Any, **__: Any) -> EngineStatus | None:
        if len(answers) == 1:
            done.set()
        return answers.pop(0) if len(answers) > 1 else answers[0]

    def start(**_: Any) -> StandInProcess:
        started.append(StandInProcess(started_running))
        return started[-1]

    monkeypatch.setattr(spark_keeper, "engine_status", status)
    monkeypatch.setattr(spark_keeper, "start_engine", start)
    monkeypatch.setattr(spark_keeper, "POLL_S", 0.01)
    keeper = EngineKeeper()
    thread = threading.Thread(target=keeper.run, args=(
        lambda m: states.append(m.state) if isinstance(m, EngineChanged) else None,))
    thread.start()
    assert done.wait(5)
    keeper.stop()
    thread.join(5)
    return states, started


def ready() -> EngineStatus:
    return EngineStatus("ready", "local[2]", 1234, 0)


def test_an_engine_it_only_used_is_replaced_when_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    states, started = keep(monkeypatch, [ready(), ready(), None, None, None], True)
    assert len(started) == 1  # once, when the used one stopped answering
    assert states[:2] == ["ready", "starting"]


def test_an_engine_it_started_is_not_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    states, started = keep(monkeypatch, [None, None, None, None], False)
    assert len(started) == 1  # at the start; it died: off, not a restart loop
    assert states[-1] == "off"
