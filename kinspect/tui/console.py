"""The console behind the keys: what they do to the lab, or why they may not.

`LabConsole` hands each fault to the lab (the same `LabBackend.apply` as `kinspect lab …`, so
the journal, the state file and the CLI all agree about what the TUI did) and starts loads and
scenarios as processes of their own. `ReadOnlyConsole` stands in on a cluster kinspect did not
start: every act is refused with its reason, so the app never asks which one it holds.
Methods block: call them from a thread worker.
"""

from __future__ import annotations

from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.lab import LabBackend, open_backend
from kinspect.lab.backend import LabChanged
from kinspect.lab.faults import Fault
from kinspect.load import load_process as loads
from kinspect.load.consumers import group_process as consumers
from kinspect.load.consumers.group_process import ConsumerRequest
from kinspect.load.load_process import LoadRequest
from kinspect.scenarios import scenario_process as scenarios
from kinspect.scenarios.scenario_process import ScenarioProcess


class Refused(KinspectError):
    """An act refused on a read-only cluster."""


class Console:
    """Acts on a cluster; the base refuses everything (read-only)."""

    def __init__(self, read_only_reason: str | None) -> None:
        self.read_only_reason = read_only_reason

    def _refuse(self) -> KinspectError:
        return Refused(f"refused — {self.read_only_reason}")

    def apply(self, fault: Fault) -> str:
        raise self._refuse()

    def start_load(self, request: LoadRequest) -> Path:
        raise self._refuse()

    def stop_load(self, run_dir: Path) -> str:
        raise self._refuse()

    def start_scenario(self, name: str, mode: str | None = None, kafka: str | None = None
                       ) -> ScenarioProcess:
        raise self._refuse()

    def start_consumers(self, request: ConsumerRequest, run_dir: Path) -> str:
        raise self._refuse()

    def stop_consumers(self, run_dir: Path) -> str:
        raise self._refuse()


class ReadOnlyConsole(Console):
    """A cluster kinspect did not start: look, never touch."""

    def __init__(self, reason: str = "this cluster was not started by kinspect") -> None:
        super().__init__(reason)


class LabConsole(Console):
    """The lab kinspect started: one backend handle, opened on first use."""

    def __init__(self) -> None:
        super().__init__(None)
        self._lab: LabBackend | None = None

    def apply(self, fault: Fault) -> str:
        if self._lab is None:
            self._lab = open_backend()
        try:
            return self._lab.apply(fault)
        except LabChanged:  # taken down and brought up on the other backend meanwhile
            self._lab = open_backend()
            return self._lab.apply(fault)

    def start_load(self, request: LoadRequest) -> Path:
        return loads.start_load(request)

    def stop_load(self, run_dir: Path) -> str:
        return "stopping the load" if loads.stop_load(run_dir) else "no load was running"

    def start_scenario(self, name: str, mode: str | None = None, kafka: str | None = None
                       ) -> ScenarioProcess:
        return scenarios.start_scenario(name, mode, kafka)

    def start_consumers(self, request: ConsumerRequest, run_dir: Path) -> str:
        return consumers.start_consumers(request, run_dir)

    def stop_consumers(self, run_dir: Path) -> str:
        return consumers.stop_consumers(run_dir)
