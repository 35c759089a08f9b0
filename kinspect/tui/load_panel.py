"""The load panel: what the producers were told, what the cluster still holds, and the trend.

`acked` is what the producers were told. The line under it is what the demo is about:
acknowledgements the current leader's log does not hold (kinspect/load/liveloss.py), written
by a leader that is no longer the leader and truncated when it rejoins. The sparklines show
acked/s and failed/s per second with a mark where a fault was applied, so the stall, the
zombie's acknowledgements and the recovery can be pointed at while they happen.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from kinspect.load.counts import ConsumerCounts, ProducerCounts
from kinspect.load.liveloss import LiveLoss
from kinspect.load.load_process import OUTPUT_FILE, LoadStatus
from kinspect.load.runsettings import LoadSettings
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


def load_panel_text(stats: ProducerCounts | None, settings: LoadSettings | None,
                    running: bool, consumers: ConsumerCounts | None = None,
                    live: LiveLoss | None = None, trend: tuple[RateSample, ...] = (),
                    width: int = 42, read_only: bool = False) -> Text:
    if settings is None:
        if read_only:
            return Text("no load running (read-only: kinspect loads only labs it started)",
                        "dim")
        return Text("no load running — press l to start one", "dim")
    text = _run_line(settings, running)
    if stats is None:  # no producer published its counts (yet, or ever: it failed first)
        if running:
            return text.append("starting…", "dim")
        return text.append("no counts published", "dim")
    text.append_text(_counts_line(stats))
    if str(settings.acks) == "0":  # no broker answered: no offset to judge
        text.append("acks=0: no broker acknowledged anything", "dim")
    else:
        text.append_text(doomed_text(live))
    text.append("\n")
    text.append_text(trend_text(trend, width))
    text.append("\n")
    return text.append_text(_last_line(stats, consumers))


def _run_line(settings: LoadSettings, running: bool) -> Text:
    """What the run writes where, and whether it still runs."""
    text = Text.assemble(("load ", "bold"), (f"{settings.topic} ", "bold cyan"),
                         f"acks={settings.acks} ")
    if running:
        return text.append("running\n", "green")
    return text.append("finished\n", "dim")


def _counts_line(stats: ProducerCounts) -> Text:
    """What the producers were told: acked, failed, and the rate."""
    text = Text(f"acked {stats.acked:,}")
    failed_style = "dim"
    if stats.failed:
        failed_style = "bold red"
    sep(text, "·").append(f"failed {stats.failed:,}", failed_style)
    return sep(text, "·").append(f"{stats.rate:,.0f}/s\n")


def _last_line(stats: ProducerCounts, consumers: ConsumerCounts | None) -> Text:
    """The consumer group's counts when one reads along; else the commonest error when sends
    failed; else what is in flight and how long acknowledgements take."""
    if consumers is not None:
        return _consumers_line(consumers)
    if stats.failed_by_error:
        top = sorted(stats.failed_by_error.items(), key=lambda kv: -kv[1])[:1]
        return Text(", ".join(f"{k} {v:,}" for k, v in top), "red")
    latency = "no acknowledgement yet"  # the producers publish 0 ms for none measured
    if stats.acked:
        latency = f"p50 {stats.latency_p50_ms:.0f} ms · p99 {stats.latency_p99_ms:.0f} ms"
    return Text(f"in flight {stats.in_flight:,} · {latency}", "dim")


def _consumers_line(consumers: ConsumerCounts) -> Text:
    text = Text(f"processed {consumers.processed:,} of {consumers.received:,}")
    bad = consumers.bad()
    if bad:
        text.append(f" failed {bad:,}", "bold red")
    if consumers.crashes:
        text.append(f" crashed {consumers.crashes}", "bold red")
    return text


def unwritten_text(load: LoadStatus) -> Text:
    """A run dir whose settings.json is not there yet: its load is starting (it checks the
    topic first), or it failed before it wrote them. Not "no load running": l would start
    another."""
    return Text(f"load {load.run_dir.name}: no settings.json yet (starting; if it stays so, "
                f"its {OUTPUT_FILE} says why)", "dim")


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
        if load.settings is None:
            return unwritten_text(load)
        return load_panel_text(load.stats, load.settings, load.running, load.consumers,
                               load.live, load.trend, width=max(20, self.content_size.width))
