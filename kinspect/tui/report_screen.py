"""The post-mortem report inside the TUI: numbers, the explanation, the timeline, a chart."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Sparkline, Static

from kinspect.tui.render import clock_text

NUMBERS = (("sent", "sent"), ("acked", "acknowledged"), ("failed", "failed"),
           ("unknown", "unknown"), ("in_log", "in the final log"),
           ("acked_lost", "ACKNOWLEDGED BUT LOST"), ("unacked_present", "unacked but present"),
           ("duplicates", "duplicates"), ("reordered", "reordered"),
           ("other_runs_records", "other runs' records"))


def numbers_text(report: Mapping[str, Any]) -> Text:
    text = Text()
    for key, label in NUMBERS:
        value = report.get(key)
        style = "bold red" if key == "acked_lost" and value else ""
        text.append(f"{label:>22}  ", "dim").append(f"{value:,}\n" if isinstance(value, int)
                                                    else f"{value}\n", style)
    for key, label in (("unavailable_ms", "longest unavailability"),
                       ("first_ack_after_fault_ms", "first ack after fault")):
        value = report.get(key)
        text.append(f"{label:>22}  ", "dim").append("—\n" if value is None else f"{value:,} ms\n")
    return text


class ReportScreen(ModalScreen[None]):
    """Read-only view of report.json; the files themselves stay in the run dir."""

    BINDINGS = [Binding("escape,q", "dismiss(None)", "close")]
    # Enter on a timeline entry: the run's replay at that moment (kinspect/tui/replay.py).

    def __init__(self, report: Mapping[str, Any], out_dir: Path) -> None:
        super().__init__()
        self.report, self.out_dir = report, out_dir

    def compose(self) -> ComposeResult:
        report = self.report
        with VerticalScroll(classes="dialog wide report"):
            yield Label(Text(f"Post-mortem of run {report.get('run_id') or '(no id)'}: "
                             f"{report.get('topic', '')}, acks={report.get('acks')}"
                             f"  ({report.get('engine', '')})", "bold"))
            yield Static(numbers_text(report))
            yield Static(Text(str(report.get("explanation", "")), "italic"))
            series = report.get("per_second") or []
            if series:
                yield Label(Text("acknowledged per second", "green"))
                yield Sparkline([float(r.get("acked", 0)) for r in series], classes="acked")
                yield Label(Text("failed per second", "red"))
                yield Sparkline([float(r.get("failed", 0)) for r in series], classes="failed")
            table: DataTable[str] = DataTable(classes="timeline", cursor_type="row")
            table.add_columns("time", "Δ fault", "kind", "partition", "detail", "seen by")
            for i, entry in enumerate(report.get("timeline", [])[:200]):
                delta = entry.get("delta_ms")
                table.add_row(clock_text(int(entry.get("ts", 0))),
                              "" if delta is None else f"{delta / 1000:+.1f} s",
                              str(entry.get("kind", "")), str(entry.get("partition") or ""),
                              str(entry.get("detail", ""))[:80],
                              ", ".join(entry.get("sources") or [str(entry.get("source", ""))]),
                              key=f"{i}:{int(entry.get('ts', 0))}")
            yield table
            yield Static(Text(f"report.md, report.json, timeline.png in {self.out_dir}; Enter on "
                              "an entry replays the run from there", "dim"))

    @on(DataTable.RowSelected, ".timeline")
    def replay_entry(self, event: DataTable.RowSelected) -> None:
        from kinspect.tui.replay import open_replay

        run_dir = Path(str(self.report.get("run_dir") or self.out_dir.parent))
        open_replay(self.app, run_dir, int(str(event.row_key.value).split(":")[1]))
