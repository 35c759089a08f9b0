"""The load panel: what the producers were told, what the cluster still holds, and the trend.

`acked` is what the producers were told. The line under it is what the demo is about:
acknowledgements the current leader's log does not hold (kinspect/load/liveloss.py), written
by a leader that is no longer the leader and truncated when it rejoins. The sparklines show
acked/s and failed/s per second with a mark where a fault was applied, so the stall, the
zombie's acknowledgements and the recovery can be pointed at while they happen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.widget import Widget

from kinspect.load.liveloss import LiveLoss
from kinspect.load.load_process import LoadStatus
from kinspect.load.trend import RateSample
from kinspect.tui.render import sep

BARS = "▁▂▃▄▅▆▇█"
FAULT_MARK = "✕"


def sparkline(values: list[float], top: float) -> str:
    if top <= 0:
        return BARS[0] * len(values)
    return "".join(BARS[min(len(BARS) - 1, int(v / top * (len(BARS) - 1) + 0.5))] for v in values)


def trend_text(trend: tuple[RateSample, ...], width: int) -> Text:
    """Two sparklines sharing one scale, faults marked on the failed line."""
    samples = list(trend)[-max(4, width - 9):]
    text = Text()
    if len(samples) < 2:
        return text.append("acked/s  (a second more…)", "dim")
    top = max(max(s.acked_per_s, s.failed_per_s) for s in samples)
    text.append("acked/s  ", "dim").append(sparkline([s.acked_per_s for s in samples], top),
                                           "green")
    text.append("\nfailed/s ", "dim")
    for sample, bar in zip(samples, sparkline([s.failed_per_s for s in samples], top),
                           strict=True):
        if sample.fault:
            text.append(FAULT_MARK, "bold yellow")
        else:
            text.append(bar, "red" if sample.failed_per_s else "dim")
    return text


def doomed_text(live: LiveLoss | None) -> Text:
    """The acknowledgements the current leaders' logs do not hold, and whose they are."""
    if live is None:
        return Text("acked by a former leader: …", "dim")
    if live.doomed_total == 0:
        note = f" ({live.pending:,} waiting for the leader's answer)" if live.pending else ""
        return Text(f"acked by a former leader: 0{note}", "dim")
    text = Text.assemble(("⚠ acked by a former leader: ", "bold red"),
                         (f"{live.doomed_total:,}", "bold red"))
    writers = live.writers()
    who = ("broker " + ",".join(map(str, writers)) + " holds them; ") if writers else ""
    return text.append(f"\n  {who}lost unless it leads again", "red")


def load_panel_text(stats: Mapping[str, Any] | None, settings: Mapping[str, Any] | None,
                    running: bool, consumers: Mapping[str, Any] | None = None,
                    live: LiveLoss | None = None, trend: tuple[RateSample, ...] = (),
                    width: int = 42, read_only: bool = False) -> Text:
    if not settings:
        if read_only:
            return Text("no load running (read-only: kinspect loads only labs it started)",
                        "dim")
        return Text("no load running — press l to start one", "dim")
    text = Text.assemble(("load ", "bold"), (f"{settings.get('topic')} ", "bold cyan"),
                         f"acks={settings.get('acks')} ")
    text.append("running\n" if running else "finished\n", "green" if running else "dim")
    if not stats:
        return text.append("starting…", "dim")
    failed = stats.get("failed", 0)
    text.append(f"acked {stats.get('acked', 0):,}")
    sep(text, "·").append(f"failed {failed:,}", "bold red" if failed else "dim")
    sep(text, "·").append(f"{stats.get('rate', 0):,.0f}/s\n")
    if str(settings.get("acks")) == "0":  # no broker answered: no offset to judge
        text.append("acks=0: no broker acknowledged anything", "dim")
    else:
        text.append_text(doomed_text(live))
    text.append("\n")
    text.append_text(trend_text(trend, width))
    text.append("\n")
    by_error = stats.get("failed_by_error") or {}
    if consumers:
        bad = consumers.get("failed", 0) + consumers.get("aborted", 0)
        text.append(f"processed {consumers.get('processed', 0):,} of "
                    f"{consumers.get('received', 0):,}")
        if bad:
            text.append(f" failed {bad:,}", "bold red")
        if consumers.get("crashes"):
            text.append(f" crashed {consumers['crashes']}", "bold red")
    elif by_error:
        top = sorted(by_error.items(), key=lambda kv: -kv[1])[:1]
        text.append(", ".join(f"{k} {v:,}" for k, v in top), "red")
    else:
        text.append(f"in flight {stats.get('in_flight', 0):,} · p50 "
                    f"{stats.get('latency_p50_ms', 0):.0f} ms · p99 "
                    f"{stats.get('latency_p99_ms', 0):.0f} ms", "dim")
    return text


class LoadPanel(Widget):
    """Renders the load at its own width when shown or resized: the sparklines fill the panel
    and a screenshot does not depend on when the first size was known."""

    def __init__(self, *, id: str | None = None, read_only: bool = False) -> None:
        super().__init__(id=id)
        self.load: LoadStatus | None = None
        self.read_only = read_only

    def show(self, load: LoadStatus | None) -> None:
        if load is None and self.load is None:  # no load: nothing to repaint each poll
            return
        self.load = load
        self.refresh()

    def render(self) -> Text:
        load = self.load
        if load is None:
            return load_panel_text(None, None, False, read_only=self.read_only)
        return load_panel_text(load.stats, load.settings, load.running, load.consumers,
                               load.live, load.trend, width=max(20, self.content_size.width))
