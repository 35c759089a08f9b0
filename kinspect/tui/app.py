"""The kinspect TUI: renders the observer's model and dispatches keys to the console.

This module lays the screen out, takes in what the feed and the workers post, and handles the
view keys; the keys that act are in acting.py. Everything that waits on a network, ZooKeeper
or a subprocess runs in a thread worker that calls a service below the TUI and answers with
messages; only the handlers change the app's state.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Key, Resize
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input, Static
from textual.worker import Worker, WorkerState

from kinspect.errors import KinspectError, error_line
from kinspect.lab.journal import JournalEntry
from kinspect.lab.state import LabState
from kinspect.load.load_process import LoadStatus
from kinspect.model import ClusterSnapshot, Event, HealthReport, Severity
from kinspect.model.lag import LagTrend
from kinspect.profiles import load_profile, profile_names, redact
from kinspect.target import ClusterTarget, lab_target, profile_target, read_only_reason
from kinspect.tui.acting import ActingApp
from kinspect.tui.actions import ACTIONS, UiAction, bindings, by_name
from kinspect.tui.broker_screen import BrokerScreen
from kinspect.tui.collector import SWITCH_S, QuietCollector
from kinspect.tui.console import Console, LabConsole, ReadOnlyConsole
from kinspect.tui.feed import Feed
from kinspect.tui.graveyard import Graveyard
from kinspect.tui.load_panel import LoadPanel
from kinspect.tui.messages import (
    Arrival,
    ClusterChoices,
    ClusterSwitched,
    EngineChanged,
    FeedFailed,
    LabArrived,
    LoadStarted,
    ProblemsChanged,
    ReportReady,
    Said,
    SnapshotArrived,
    TaskStep,
)
from kinspect.tui.modals import LAB_CHOICE, ClusterPicker, HelpScreen
from kinspect.tui.partition_rows import Prepared
from kinspect.tui.partition_view import PartitionPanel, PartitionView
from kinspect.tui.render import (
    event_line,
    fault_line,
    groups_text,
    header_text,
    warnings_text,
)
from kinspect.tui.report_screen import ReportScreen
from kinspect.tui.spark_keeper import EngineKeeper
from kinspect.tui.warnings_screen import WarningsScreen
from kinspect.tui.widgets import BrokerTable, EventLog, TextBox

FAULT_KEYS = {a.key: a for a in ACTIONS if a.fault}


class KinspectApp(ActingApp):
    """The screen: brokers, partitions, events, the load and warnings, live."""

    CSS_PATH = Path(__file__).parent / "app.tcss"
    TITLE = "kinspect"
    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        *bindings(),
        *[Binding(str(n), f"select_broker({n})", show=False) for n in range(1, 10)],
        Binding("escape", "close_filter", show=False),
    ]
    PARTITION_VIEW: ClassVar[type[Widget]] = PartitionView  # bench/ swaps in the old table

    def __init__(self, feed: Feed, console: Console | None = None, no_confirm: bool = False,
                 clock: Callable[[], float] = time.time, engine: EngineKeeper | None = None,
                 ) -> None:
        super().__init__()
        self.feed, self.no_confirm, self.clock = feed, no_confirm, clock
        self.engine, self.engine_state = engine, ""  # the warm Spark engine, for m
        self.lab_console = console or ReadOnlyConsole()
        self.snapshot: ClusterSnapshot | None = None
        self.lab: LabState | None = None
        self.load: LoadStatus | None = None
        self.load_dir: Path | None = None  # the run started here (l), for m
        self.problems: tuple[str, ...] = ()
        self.health: HealthReport | None = None  # the newest snapshot's, made in the feed's thread
        self.stopped: tuple[str, ...] = ()  # the feed or engine worker that died: its line
        self.lag_trend = LagTrend()
        self._told: set[str] = set()  # problems already toasted: each distinct one once
        self._next_draw = 0.0
        self.last_render_ms = 0.0
        self._header_lines = 0
        self.collector = QuietCollector()
        self.graveyard = Graveyard()
        self._drawn: Arrival | None = None  # the arrival on screen: buried when replaced
        self._switch_s = sys.getswitchinterval()  # Python's, given back at unmount


    # ----- layout ----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TextBox(id="header")
        with Horizontal(id="top"):
            with Vertical(id="left"):
                yield BrokerTable(id="brokers")
                yield LoadPanel(id="load", read_only=bool(self.read_only_reason))
            with Vertical(id="side"):
                yield TextBox(id="warnings")
        yield self.PARTITION_VIEW(id="partitions")
        yield TextBox(id="consumer-groups")
        yield EventLog(id="events")
        yield Input(placeholder="filter partitions (topic or topic-N); Enter keeps, Esc clears",
                    id="filter")
        yield Static(id="progress")
        yield Footer()

    def on_mount(self) -> None:
        self.collector.start()
        sys.setswitchinterval(SWITCH_S)
        self.main.query_one("#brokers").border_title = "brokers"
        self.main.query_one("#partitions").border_title = "partitions"
        self.main.query_one("#events").border_title = "events"
        self.main.query_one("#load").border_title = "load"
        self.main.query_one("#warnings").border_title = "warnings"
        self.main.query_one("#warnings").border_subtitle = "W: in full"
        self.main.query_one("#consumer-groups").border_title = (
            "consumer groups (lag = high watermark - committed)")
        self._render_header()
        self._render_side()
        self.main.query_one("#partitions").focus()
        self.set_interval(1.0, self._tick)
        self.start_feed()
        if self.engine is not None:
            self.keep_engine()

    def on_resize(self, event: Resize) -> None:
        """Small terminals favour partitions; tall ones give the event log more lines."""
        events, groups, load = _panel_heights(event.size.height)
        self.main.query_one(EventLog).styles.height = events
        self.main.query_one("#consumer-groups").styles.max_height = groups
        self.main.query_one(LoadPanel).styles.height = load

    @property
    def partitions(self) -> PartitionPanel:
        return cast(PartitionPanel, self.main.query_one("#partitions"))

    def load_topics(self) -> tuple[str, ...]:
        """The topic the load runs on (l, or any load whose run dir is watched): shown first."""
        if not self.load:
            return ()
        topic = self.load.topic()
        if not topic:
            return ()
        return (str(topic),)

    @work(thread=True, exclusive=True, group="feed", exit_on_error=False)
    def start_feed(self) -> None:
        """Run the feed; what it posts after the cluster switcher replaced it is dropped (its
        thread finishes its last poll after stop)."""
        feed = self.feed
        feed.start(lambda message: self.post_message(message) if self.feed is feed else False)

    @work(thread=True, exclusive=True, group="engine", exit_on_error=False)
    def keep_engine(self) -> None:
        if self.engine is not None:
            self.engine.run(self.post_message)

    def on_unmount(self) -> None:
        sys.setswitchinterval(self._switch_s)
        self.feed.stop()
        if self.engine is not None:
            self.engine.stop()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised (each runs with exit_on_error=False): its name and reason in a
        toast, and the app and its keys go on. The feed and the engine keeper last as long as
        the screen, so their end also stays in the header: nothing else would say it."""
        if event.state != WorkerState.ERROR:
            return
        line = worker_failure(event.worker)
        self.notify(line, title="a worker failed", severity="error", timeout=30, markup=False)
        if event.worker.group in LASTING_WORKERS:
            self.stopped = (*self.stopped, line)
            self._render_header()

    @on(EngineChanged)
    def engine_changed(self, message: EngineChanged) -> None:
        self.engine_state = message.state
        if message.state == "failed":
            self.notify(f"the warm Spark engine did not start ({message.detail}); m starts Spark "
                        "itself", severity="warning", timeout=10)
        self._render_header()

    # ----- data in ---------------------------------------------------------------------

    @on(SnapshotArrived)
    def snapshot_arrived(self, message: SnapshotArrived) -> None:
        """Draw now, or after a gap when the last draw just happened.

        The feed's mailbox keeps collecting meanwhile (newest snapshot, every event) and posts
        nothing new until this one is taken, so a storm of ZooKeeper notifications is a few
        draws with an idle loop between them, and keys keep answering.
        """
        wait = self._next_draw - time.monotonic()
        if wait > 0:
            self.set_timer(wait, lambda: self._draw(message))
        else:
            self._draw(message)

    def _draw(self, message: SnapshotArrived) -> None:
        if not self.screen_stack:  # shutting down: messages still in flight from the feed
            return
        latest = message.latest()
        if latest is None:
            return
        snapshot, events = latest.snapshot, latest.events
        started = time.perf_counter()
        self.graveyard.bury(self._drawn)  # freed off the loop once the panels let go of it
        self._drawn = latest
        self.snapshot, self.health = snapshot, latest.health  # assessed off the loop
        self.lag_trend.observe(snapshot)
        moved = 0
        if isinstance(self.screen, BrokerScreen):  # the main panels wait until it closes
            self.screen.show(snapshot)
        else:
            moved = self._draw_panels(snapshot, latest.prepared)
        log = self.main.query_one(EventLog)
        if len(events) > EVENT_BURST:  # a failover of thousands of partitions: the gist
            log.write(f"… {len(events) - EVENT_BURST:,} more events (all of them: kinspect watch)")
            events = events[-EVENT_BURST:]
        for event in events:
            log.write(event_line(event))
        if events or moved:  # the cluster is moving: not the moment for a full collection
            self.collector.busy()
        self.saw_events(events)
        self._render_header()
        self._render_side()
        self.last_render_ms = (time.perf_counter() - started) * 1000
        self._next_draw = time.monotonic() + max(MIN_DRAW_GAP_S, 2 * self.last_render_ms / 1000)

    def _draw_panels(self, snapshot: ClusterSnapshot | None,
                     prepared: Prepared | None = None) -> int:
        """The partitions, the groups and the brokers, from one snapshot (and what the feed's
        thread prepared of it); how many partitions changed since the last one drawn."""
        if snapshot is None:
            return 0
        moved = self.partitions.show(snapshot, prepared=prepared)
        groups = self.main.query_one("#consumer-groups", TextBox)
        # the panel appears with the first group (one listed but refused to this user too)
        groups.display = bool(snapshot.groups or snapshot.groups_unknown)
        if groups.display:
            groups.show(groups_text(snapshot, self.lag_trend, self.size.width))
        self.main.query_one(BrokerTable).show(snapshot, self.lab,
                                              prepared.counts if prepared else None)
        return moved

    @on(LabArrived)
    def lab_arrived(self, message: LabArrived) -> None:
        if not self.screen_stack or not self.main.query(BrokerTable):  # shutting down
            return
        self.lab, self.load = message.lab, message.load
        pinned = self.load_topics()
        if self.feed.preparer is not None:
            self.feed.preparer.pinned = pinned
        self.partitions.pin(pinned)
        self.main.query_one(BrokerTable).show(self.snapshot, self.lab)
        log = self.main.query_one(EventLog)
        for entry in message.faults:
            log.write(fault_line(entry))
        self.saw_lab(message.faults, message.load)
        self._render_side()

    @on(FeedFailed)
    def feed_failed(self, message: FeedFailed) -> None:
        self.notify(message.reason, title="cannot observe the cluster", severity="error",
                    timeout=30)

    @on(ProblemsChanged)
    def problems_changed(self, message: ProblemsChanged) -> None:
        """In the header while they last; a toast the first time each one appears."""
        self.problems = message.problems
        for problem in message.problems:
            if problem not in self._told:
                self._told.add(problem)
                self.notify(problem, title="failing", severity="error", timeout=15)
        self._render_header()

    @on(Said)
    def said(self, message: Said) -> None:
        self.notify(message.text, title=message.title, severity=TOAST_LEVEL[message.severity],
                    timeout=message.timeout, markup=False)  # plain text: "kinspect[lab]" stays

    @on(TaskStep)
    def progress(self, message: TaskStep) -> None:
        """The progress line: the newest step in place; gone a moment after the task ends."""
        if not self.screen_stack:
            return
        line = self.main.query_one("#progress", Static)
        if message.done:
            self.set_timer(PROGRESS_LINGER_S, lambda: line.remove_class("visible"))
            return
        line.update(Text.assemble((f"{message.title}: ", "bold"), message.line))
        line.add_class("visible")
        self.progressed(message)

    # ----- hooks: what a screen built on this one (lessons) follows --------------------------

    def saw_events(self, events: Sequence[Event]) -> None:
        """The events just drawn (a lesson's narration follows them)."""

    def saw_lab(self, faults: Sequence[JournalEntry], load: LoadStatus | None) -> None:
        """The lab's new journal entries and the load's counters, just drawn."""

    def progressed(self, message: TaskStep) -> None:
        """A long task's newest step, just shown."""

    @on(LoadStarted)
    def load_started(self, message: LoadStarted) -> None:
        self.load_dir = message.run_dir
        self.feed.watch_load(message.run_dir)
        self.notify(f"load started; ledger in {message.run_dir}")

    @on(ReportReady)
    def report_ready(self, message: ReportReady) -> None:
        self.push_screen(ReportScreen(message.report, message.report_dir))

    def _tick(self) -> None:
        """Every second: the header's clock, and the cycle collector when all is quiet."""
        self._render_header()
        self.collector.maybe_collect()

    def _render_header(self) -> None:
        if not self.screen_stack or not self.main.query("#header"):  # shutting down
            return
        title = self.feed.title
        if self.read_only_reason:
            title += "  read-only"
        verdict = None
        if self.health:
            verdict = self.health.verdict
        header = self.main.query_one("#header", TextBox)
        text = header_text(self.snapshot, int(self.clock() * 1000), title,
                           self.problems + self.stopped, self.engine_state, verdict)
        width = header.content_region.width
        lines = 0
        if width > 0:
            lines = min(HEADER_LINES, len(text.wrap(self.console, width)))
        header.show(text, layout=lines != self._header_lines)  # the clock ticks every second
        if lines and lines != self._header_lines:  # laid out: the lines the text wraps to
            header.styles.height = self._header_lines = lines

    def _render_side(self) -> None:
        self.main.query_one(LoadPanel).show(self.load)
        self.main.query_one("#warnings", TextBox).show(warnings_text(self.snapshot, self.health))

    # ----- the registry: footer visibility, refusal, palette -------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        registered = by_name(action)
        # Fault actions are hidden from the footer on other clusters; on_key refuses the key.
        return not (registered and registered.fault and self.read_only_reason)

    def on_key(self, event: Key) -> None:
        self.collector.busy()
        action = FAULT_KEYS.get(event.key)
        if action and self.read_only_reason and self.screen is self.screen_stack[0]:
            event.stop()
            self.notify(f"{action.label}: refused — {self.read_only_reason}",
                        severity="warning")

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for action in ACTIONS:
            if action.name == "command_palette" or (action.fault and self.read_only_reason):
                continue
            yield SystemCommand(f"{action.label} [{action.key}]", action.help,
                                self._runner(action))
        yield from super().get_system_commands(screen)

    def _runner(self, action: UiAction) -> Callable[[], Any]:
        return lambda: self.run_action(action.name)

    # ----- view keys -------------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.read_only_reason))

    def action_filter(self) -> None:
        box = self.main.query_one("#filter", Input)
        box.add_class("visible")
        box.focus()

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        table = self.partitions
        table.filter_text = event.value.strip()
        table.refilter()

    @on(Input.Submitted, "#filter")
    def filter_done(self, _event: Input.Submitted) -> None:
        self.main.query_one("#filter", Input).remove_class("visible")
        self.main.query_one("#partitions").focus()

    def action_close_filter(self) -> None:
        box = self.main.query_one("#filter", Input)
        if box.has_class("visible"):
            box.value = ""
            box.remove_class("visible")
            self.main.query_one("#partitions").focus()

    def action_unhealthy(self) -> None:
        table = self.partitions
        table.unhealthy_only = not table.unhealthy_only
        self.main.query_one("#partitions").border_title = (
            "partitions (unhealthy only)" if table.unhealthy_only else "partitions")
        table.refilter()

    def action_warnings(self) -> None:
        self.push_screen(WarningsScreen(warnings_text(self.snapshot, self.health)))

    # ----- another cluster ----------------------------------------------------------------

    @work(thread=True, group="switch", exit_on_error=False)
    def action_switch(self) -> None:
        """What to offer (the profiles file and the lab's state are read off the loop)."""
        from kinspect.lab import running_lab

        def choices() -> list[Message]:
            try:
                names, problem = tuple(profile_names()), None
            except KinspectError as exc:
                names, problem = (), error_line(exc)
            return [ClusterChoices(names, running_lab() is not None, problem)]
        self._answer(choices)

    @on(ClusterChoices)
    def choose_cluster(self, message: ClusterChoices) -> None:
        if not message.names and not message.lab:
            self.notify(message.problem or "no profiles and no lab to switch to",
                        severity="warning")
            return
        self.push_screen(ClusterPicker(message.names, message.lab, message.problem),
                         self._chosen)

    def _chosen(self, choice: str | None) -> None:
        if choice is not None:
            self._switch_to(choice)

    @work(thread=True, group="switch", exit_on_error=False)
    def _switch_to(self, choice: str) -> None:
        """Resolve the chosen cluster (is it our lab? asked of its ZooKeeper or brokers)."""
        from kinspect.lab import running_lab

        def resolved() -> list[Message]:
            lab = running_lab()
            if choice == LAB_CHOICE:
                if lab is None:
                    raise KinspectError("the lab is no longer running")
                return [ClusterSwitched(lab_target(lab))]
            return [ClusterSwitched(profile_target(load_profile(choice), lab))]
        self._answer(resolved, failed=f"cannot switch to {choice}: ")

    @on(ClusterSwitched)
    def cluster_switched(self, message: ClusterSwitched) -> None:
        """A new feed and console; the old feed stops, the screen starts over."""
        self.feed.stop()
        self.feed, self.lab_console = live_feed(message.target), console_for(message.target)
        self.snapshot, self.health, self.lab, self.load = None, None, None, None
        self.lag_trend = LagTrend()
        self.start_feed()
        self.refresh_bindings()
        self._render_header()
        looking = f"now looking at {self.feed.title}"
        if self.read_only_reason:
            looking += " (read-only)"
        self.notify(looking)

    def action_broker(self) -> None:
        broker = self.main.query_one(BrokerTable).selected_broker
        if broker is None:
            self.notify("no broker to open", severity="warning")
            return
        # Its rows are all a snapshot redraws while it is open (at 10,000 partitions the main
        # panels cost more than it does); they catch up with the newest when it closes.
        self.push_screen(BrokerScreen(broker, self.snapshot), self._catch_up)

    def _catch_up(self, _closed: object) -> None:
        """The broker screen closed: the main panels show the newest snapshot."""
        self._draw_panels(self.snapshot)

    def action_select_broker(self, broker_id: int) -> None:
        if not self.main.query_one(BrokerTable).select_broker(broker_id):
            self.notify(f"no broker {broker_id}", severity="warning")


TOAST_LEVEL: dict[Severity, SeverityLevel] = {
    Severity.INFO: "information", Severity.WARN: "warning", Severity.ERROR: "error",
    Severity.CRITICAL: "error"}
LASTING_WORKERS = frozenset({"feed", "engine"})  # run as long as the screen: not one-off actions


def _panel_heights(tall: int) -> tuple[int, int, int]:
    """The event log's height, the groups panel's most and the load panel's height for a
    screen `tall` lines high. Partitions first: on a short screen (an 80x24 terminal) the event
    log and the groups panel shrink so that rows of the partition table stay in view; the load's
    sparklines show only from 40 lines (below, its counts and the live figure)."""
    if tall >= 40:
        return max(7, tall // 4), 8, 8
    if tall >= 30:
        return max(7, tall // 4), 5, 5
    return 4, 3, 5


def worker_failure(worker: Worker[Any]) -> str:
    """`start_feed stopped: RuntimeError: …`: which worker, and why in one line."""
    if worker.error is None:
        return f"{worker.name} stopped: no reason given"
    return f"{worker.name} stopped: {error_line(worker.error)}"


HEADER_LINES = 3  # the header's most lines; the verdict is on the last one when it wraps
PROGRESS_LINGER_S = 4.0  # the last step stays readable this long after the task ended
EVENT_BURST = 20  # the panel shows a dozen lines at most; each line written costs ~0.6 ms
MIN_DRAW_GAP_S = 0.2


def say_running_loads(bootstrap: str) -> None:
    """On quit: the loads started here (or anywhere) keep running; say which, and how to stop
    them, so none hammers the lab unnoticed."""
    from kinspect.load.active import running_loads

    for load in running_loads():
        if load.aims_at(bootstrap.split(",")):
            print(f"{load.what()} keeps running (pid {load.pid}); stop it with: "
                  f"{load.stop_command()}")


def live_feed(cluster: ClusterTarget) -> Feed:
    """The live feed of a cluster, titled with its (redacted) name."""
    from kinspect.tui.feed import LiveFeed

    return LiveFeed(cluster.bootstrap, cluster.zookeeper, lab_backed=cluster.lab is not None,
                    expected=cluster.expected_brokers, title=redact(cluster.label),
                    admin_config=cluster.kafka, zk_auth=list(cluster.zk_auth) or None,
                    controllers=cluster.controllers)


def console_for(cluster: ClusterTarget) -> Console:
    """Fault keys on the lab kinspect started, read-only anywhere else."""
    reason = read_only_reason(cluster, redact(cluster.label))
    return LabConsole() if reason is None else ReadOnlyConsole(reason)


def run_app(cluster: ClusterTarget, no_confirm: bool = False) -> int:
    """Open the TUI: fault keys on the lab kinspect started, read-only anywhere else."""
    if cluster.lab is not None:
        # KINSPECT_WARM_ENGINE=0: no Spark beside the screen (m then starts its own)
        warm = os.environ.get("KINSPECT_WARM_ENGINE", "1") != "0"
        KinspectApp(live_feed(cluster), LabConsole(), no_confirm=no_confirm,
                    engine=EngineKeeper() if warm else None).run()
        say_running_loads(cluster.bootstrap)
        return 0
    KinspectApp(live_feed(cluster), console_for(cluster), no_confirm=no_confirm).run()
    return 0
