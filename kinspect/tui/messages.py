"""What the app's workers answer with: they post these, and only the handlers touch the app."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from textual.message import Message

Severity = Literal["information", "warning", "error"]


class Said(Message):
    """A line for the user (a toast): a fault done, a progress step, an error."""

    def __init__(self, text: str, title: str = "", severity: Severity = "information",
                 timeout: float = 5.0) -> None:
        super().__init__()
        self.text, self.title, self.severity, self.timeout = text, title, severity, timeout


class LoadStarted(Message):
    """A load started from this screen: follow its counters from now on."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir


class ReportReady(Message):
    """A post-mortem's report to show."""

    def __init__(self, report: dict[str, Any], report_dir: Path) -> None:
        super().__init__()
        self.report, self.report_dir = report, report_dir


class CatalogReady(Message):
    """The scenario catalog, read: (name, title, expectation) per scenario, to pick from."""

    def __init__(self, choices: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.choices = choices
