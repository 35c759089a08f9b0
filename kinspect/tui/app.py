"""The kinspect TUI: renders the observer's model and dispatches keys to the console.

Keys become `Fault`s (or a load, a scenario, a post-mortem) handed to the console, which is the
lab's or a read-only stand-in. Everything that waits on a network, ZooKeeper or a subprocess
runs in a thread worker that calls a service below the TUI and answers with messages; handlers
here only render, and only they change the app's state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Key, Resize
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from kinspect.errors import error_line
from kinspect.lab.faults import Fault, FaultKind, Scope
from kinspect.lab.state import LabState, NodeState
from kinspect.load.background import LoadRequest, LoadStatus
from kinspect.model import ClusterSnapshot
from kinspect.profiles import redact
from kinspect.target import ClusterTarget
from kinspect.tui.actions import ACTIONS, UiAction, bindings, by_name
from kinspect.tui.console import Console, LabConsole, ReadOnlyConsole
from kinspect.tui.feed import Feed, FeedFailed, LabArrived, ProblemsChanged, SnapshotArrived
from kinspect.tui.messages import CatalogReady, LoadStarted, ReportReady, Said, Severity
from kinspect.tui.modals import (
    ConfirmScreen,
    HelpScreen,
    IsolateScreen,
    LoadForm,
    PartitionEditor,
    ScenarioPicker,
)
from kinspect.tui.render import event_line, fault_line, header_text, load_text, warnings_text
from kinspect.tui.report_screen import ReportScreen
from kinspect.tui.widgets import BrokerTable, EventLog, PartitionTable

FAULT_KEYS = {a.key: a for a in ACTIONS if a.fault}


class KinspectApp(App[None]):
    CSS_PATH = Path(__file__).parent / "app.tcss"
    TITLE = "kinspect"
    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        *bindings(),
        *[Binding(str(n), f"select_broker({n})", show=False) for n in range(1, 10)],
        Binding("escape", "close_filter", show=False),
    ]

    def __init__(self, feed: Feed, console: Console | None = None, no_confirm: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.feed, self.no_confirm, self.clock = feed, no_confirm, clock
        self.lab_console = console or ReadOnlyConsole()
        self.snapshot: ClusterSnapshot | None = None
        self.lab: LabState | None = None
        self.load: LoadStatus | None = None
        self.load_dir: Path | None = None  # the run started here (l), for m
        self.problems: tuple[str, ...] = ()
        self._told: set[str] = set()  # problems already toasted: each distinct one once
        self._next_draw = 0.0
        self.last_render_ms = 0.0

    @property
    def read_only_reason(self) -> str | None:
        return self.lab_console.read_only_reason

    # ----- layout ----------------------------------------------------------------------

    @property
    def main(self) -> Screen[Any]:
        """The main screen: data keeps arriving while a modal is on top of it."""
        return self.screen_stack[0]

    def compose(self) -> ComposeResult:
        yield Static(id="header")
        with Horizontal(id="top"):
            yield BrokerTable(id="brokers")
            with Vertical(id="side"):
                yield Static(id="load")
                yield Static(id="warnings")
        yield PartitionTable(id="partitions")
        yield EventLog(id="events")
        yield Input(placeholder="filter partitions (topic or topic-N); Enter keeps, Esc clears",
                    id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.main.query_one("#brokers").border_title = "brokers"
        self.main.query_one("#partitions").border_title = "partitions"
        self.main.query_one("#events").border_title = "events"
        self.main.query_one("#load").border_title = "load"
        self.main.query_one("#warnings").border_title = "warnings"
        self._render_header()
        self._render_side()
        self.main.query_one(PartitionTable).focus()
        self.set_interval(1.0, self._render_header)
        self.start_feed()

    def on_resize(self, event: Resize) -> None:
        """Small terminals favour partitions; tall ones give the event log more lines."""
        self.main.query_one(EventLog).styles.height = max(7, event.size.height // 4)

    @work(thread=True, exclusive=True, group="feed")
    def start_feed(self) -> None:
        self.feed.start(self.post_message)

    def on_unmount(self) -> None:
        self.feed.stop()

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
        snapshot, events = latest
        started = time.perf_counter()
        self.snapshot = snapshot
        self.main.query_one(PartitionTable).show(snapshot)
        self.main.query_one(BrokerTable).show(snapshot, self.lab)
        log = self.main.query_one(EventLog)
        if len(events) > EVENT_BURST:  # a failover of thousands of partitions: the gist
            log.write(f"… {len(events) - EVENT_BURST:,} more events (all of them: kinspect watch)")
            events = events[-EVENT_BURST:]
        for event in events:
            log.write(event_line(event))
        self._render_header()
        self._render_side()
        self.last_render_ms = (time.perf_counter() - started) * 1000
        self._next_draw = time.monotonic() + max(MIN_DRAW_GAP_S, 2 * self.last_render_ms / 1000)

    @on(LabArrived)
    def lab_arrived(self, message: LabArrived) -> None:
        if not self.screen_stack:
            return
        self.lab, self.load = message.lab, message.load
        self.main.query_one(BrokerTable).show(self.snapshot, self.lab)
        log = self.main.query_one(EventLog)
        for entry in message.faults:
            log.write(fault_line(entry))
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
        self.notify(message.text, title=message.title, severity=message.severity,
                    timeout=message.timeout)

    @on(LoadStarted)
    def load_started(self, message: LoadStarted) -> None:
        self.load_dir = message.run_dir
        self.feed.watch_load(message.run_dir)
        self.notify(f"load started; ledger in {message.run_dir}")

    @on(ReportReady)
    def report_ready(self, message: ReportReady) -> None:
        self.push_screen(ReportScreen(message.report, message.report_dir))

    def _render_header(self) -> None:
        if not self.screen_stack:
            return
        title = self.feed.title + ("  read-only" if self.read_only_reason else "")
        self.main.query_one("#header", Static).update(
            header_text(self.snapshot, int(self.clock() * 1000), title, self.problems))

    def _render_side(self) -> None:
        load = self.load
        self.main.query_one("#load", Static).update(load_text(
            load.stats if load else None, load.settings if load else None,
            bool(load and load.running)))
        self.main.query_one("#warnings", Static).update(warnings_text(self.snapshot))

    # ----- the registry: footer visibility, refusal, palette -------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        registered = by_name(action)
        # Fault actions are hidden from the footer on other clusters; on_key refuses the key.
        return not (registered and registered.fault and self.read_only_reason)

    def on_key(self, event: Key) -> None:
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
        table = self.main.query_one(PartitionTable)
        table.filter_text = event.value.strip()
        table.refilter()

    @on(Input.Submitted, "#filter")
    def filter_done(self, _event: Input.Submitted) -> None:
        self.main.query_one("#filter", Input).remove_class("visible")
        self.main.query_one(PartitionTable).focus()

    def action_close_filter(self) -> None:
        box = self.main.query_one("#filter", Input)
        if box.has_class("visible"):
            box.value = ""
            box.remove_class("visible")
            self.main.query_one(PartitionTable).focus()

    def action_unhealthy(self) -> None:
        table = self.main.query_one(PartitionTable)
        table.unhealthy_only = not table.unhealthy_only
        table.border_title = "partitions (unhealthy only)" if table.unhealthy_only else "partitions"
        table.refilter()

    def action_select_broker(self, broker_id: int) -> None:
        if not self.main.query_one(BrokerTable).select_broker(broker_id):
            self.notify(f"no broker {broker_id}", severity="warning")

    # ----- fault keys ------------------------------------------------------------------

    def _target(self) -> tuple[int, str] | None:
        broker_id = self.main.query_one(BrokerTable).selected_broker
        node = None
        if broker_id is not None and self.lab is not None:
            node = next((n.name for n in self.lab.brokers if n.broker_id == broker_id), None)
        if broker_id is None or node is None:
            self.notify("select a lab broker first (arrows in the brokers panel, or 1-9)",
                        severity="warning")
            return None
        return broker_id, node

    def _refused(self) -> bool:
        if self.read_only_reason:
            self.notify(f"refused — {self.read_only_reason}", severity="warning")
            return True
        return False

    def _ask(self, question: str, detail: str, then: Callable[[], object]) -> None:
        """Ask first (unless --no-confirm), then do it."""
        if self.no_confirm:
            then()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                then()

        self.push_screen(ConfirmScreen(question, detail), answered)

    @work(thread=True, group="faults")
    def apply_fault(self, fault: Fault) -> None:
        """The console carries it out; the line it answers, or its error, is a toast."""
        try:
            self.post_message(Said(self.lab_console.apply(fault)))
        except Exception as exc:  # the backend's errors are one line, like the CLI's
            self.post_message(Said(error_line(exc), severity="error", timeout=8))

    def _node_state(self, node: str) -> NodeState | None:
        record = self.lab.node(node) if self.lab else None
        return record.state if record else None

    def _broker_fault(self, verb: str, detail: str, kind: Callable[[str], FaultKind]) -> None:
        """Ask about the selected broker, then apply the fault `kind(node)` names."""
        if self._refused():
            return
        target = self._target()
        if target is None:
            return
        broker_id, node = target
        self._ask(f"{verb} broker {broker_id} ({node})?", detail,
                  lambda: self.apply_fault(Fault(kind(node), node)))

    def action_kill(self) -> None:
        self._broker_fault("Kill", "SIGKILL: the broker dies at once, like a crash.",
                           lambda _node: FaultKind.KILL)

    def action_stop(self) -> None:
        self._broker_fault("Stop", "A clean shutdown: leadership moves away first.",
                           lambda _node: FaultKind.STOP)

    def action_start(self) -> None:
        def kind(node: str) -> FaultKind:
            state = self._node_state(node)
            return FaultKind.RESTART if state is not None and state.alive else FaultKind.START

        self._broker_fault("Start / restart", "Starts it if down, restarts it if running.", kind)

    def action_pause(self) -> None:
        def kind(node: str) -> FaultKind:
            paused = self._node_state(node) == NodeState.PAUSED
            return FaultKind.RESUME if paused else FaultKind.PAUSE

        self._broker_fault("Pause / resume", "SIGSTOP freezes the JVM like a long GC pause; "
                           "pressing again resumes it.", kind)

    def action_isolate(self) -> None:
        if self._refused():
            return
        target = self._target()
        if target is None:
            return
        node = target[1]

        def chosen(scope: str | None) -> None:
            if scope:
                self.apply_fault(Fault(FaultKind.ISOLATE, node, Scope(scope)))

        self.push_screen(IsolateScreen(node), chosen)

    def action_partition(self) -> None:
        if self._refused() or self.lab is None:
            return

        def chosen(specs: list[str] | None) -> None:
            if specs:
                self.apply_fault(Fault(FaultKind.PARTITION,
                                       groups=tuple(tuple(s.split(",")) for s in specs)))

        self.push_screen(PartitionEditor([n.name for n in self.lab.nodes]), chosen)

    def action_heal(self) -> None:
        if self._refused():
            return
        self.apply_fault(Fault(FaultKind.HEAL))

    # ----- load and post-mortem --------------------------------------------------------

    def action_load(self) -> None:
        if self._refused():
            return
        if self.load_dir is not None and self.load is not None and self.load.running:
            run_dir = self.load_dir
            self._ask("Stop the running load?", str(run_dir), lambda: self.stop_load(run_dir))
            return
        topics = sorted(t.name for t in self.snapshot.topics) if self.snapshot else []
        self.push_screen(LoadForm([t for t in topics if not t.startswith("__")]),
                         self._start_load)

    def _start_load(self, request: LoadRequest | None) -> None:
        if request is not None:
            self.start_load(request)

    @work(thread=True, group="load")
    def start_load(self, request: LoadRequest) -> None:
        try:
            self.post_message(LoadStarted(self.lab_console.start_load(request)))
        except Exception as exc:
            self.post_message(Said(f"load did not start: {error_line(exc)}", severity="error"))

    @work(thread=True, group="load")
    def stop_load(self, run_dir: Path) -> None:
        try:
            self.post_message(Said(self.lab_console.stop_load(run_dir)))
        except Exception as exc:
            self.post_message(Said(error_line(exc), severity="error"))

    def action_postmortem(self) -> None:
        if self._refused() or self.lab is None:
            return
        if self.load is not None and self.load.running:
            self.notify("the load is still running: stop it with l first", severity="warning")
            return
        self.run_postmortem(self.load_dir, self.lab)

    @work(thread=True, exclusive=True, group="postmortem")
    def run_postmortem(self, run_dir: Path | None, lab: LabState) -> None:
        """verify (read the final log back) → evidence → Spark job → report screen."""
        from kinspect.load.rundir import latest_run, report_dir
        from kinspect.postmortem.finish import finish_run

        run_dir = run_dir or latest_run()
        if run_dir is None:
            self.post_message(Said("no load run yet: start one with l, break something, then "
                                   "press m", severity="warning"))
            return
        try:
            report = finish_run(run_dir, lab.bootstrap, lab=lab, say=self._progress("post-mortem"))
        except Exception as exc:  # one line, like the CLI; the run dir is untouched
            self.post_message(Said(f"post-mortem failed: {error_line(exc)}", severity="error",
                                   timeout=15))
            return
        self.post_message(ReportReady(report, report_dir(run_dir)))

    def _progress(self, title: str) -> Callable[[str], None]:
        """A worker's progress lines, as short toasts."""
        def say(line: str) -> None:
            self.post_message(Said(line, title=title, timeout=4))
        return say

    # ----- scenarios ---------------------------------------------------------------------

    def action_scenario(self) -> None:
        if self._refused():
            return
        if any(w.group == "scenario" and w.is_running for w in self.workers):
            self.notify("a scenario is already running", severity="warning")
            return
        self.pick_scenario()

    @work(thread=True, group="catalog")
    def pick_scenario(self) -> None:
        from kinspect.scenarios.catalog import builtin

        try:
            choices = [(s.name, s.title, s.expectation_text()) for s in builtin()]
        except Exception as exc:
            self.post_message(Said(error_line(exc), severity="error"))
            return
        self.post_message(CatalogReady(choices))

    @on(CatalogReady)
    def catalog_ready(self, message: CatalogReady) -> None:
        self.push_screen(ScenarioPicker(message.choices), self._scenario_chosen)

    def _scenario_chosen(self, name: str | None) -> None:
        if name is not None:
            self._ask(f"Run {name}?", "The lab is reset (its data wiped), then loaded and "
                      "broken as the scenario says; watch it here.",
                      lambda: self.run_scenario(name))

    @work(thread=True, group="scenario")
    def run_scenario(self, name: str) -> None:
        """The run plays out on the main screen (the feed keeps observing); its progress lines
        are toasts, then its verdict and its report."""
        from kinspect.scenarios.background import follow

        try:
            outcome = follow(self.lab_console.start_scenario(name), self._progress(f"scenario {name}"))
        except Exception as exc:  # a worker error would end the app
            self.post_message(Said(f"scenario {name}: {error_line(exc)}", severity="error",
                                   timeout=15))
            return
        severity: Severity = ("error" if outcome.failure else
                              "information" if outcome.held else "warning")
        self.post_message(Said(outcome.verdict(), severity=severity, timeout=15))
        if outcome.report is not None and outcome.report_dir is not None:
            self.post_message(ReportReady(outcome.report, outcome.report_dir))


EVENT_BURST = 200
MIN_DRAW_GAP_S = 0.2


def say_running_loads(bootstrap: str) -> None:
    """On quit: the loads started here (or anywhere) keep running; say which, and how to stop
    them, so none hammers the lab unnoticed."""
    from kinspect.load.active import running_loads

    for load in running_loads():
        if load.aims_at(bootstrap.split(",")):
            print(f"the load on {load.topic} keeps running (pid {load.pid}); stop it with: "
                  f"kinspect load stop --run-dir {load.run_dir}")


def run_app(cluster: ClusterTarget, no_confirm: bool = False) -> int:
    """Open the TUI: fault keys on the lab kinspect started, read-only anywhere else."""
    from kinspect.tui.feed import LiveFeed

    feed = LiveFeed(cluster.bootstrap, cluster.zookeeper, lab_backed=cluster.lab is not None,
                    expected=cluster.expected_brokers, title=redact(cluster.label),
                    admin_config=cluster.kafka, zk_auth=list(cluster.zk_auth) or None)
    if cluster.lab is not None:
        KinspectApp(feed, LabConsole(), no_confirm=no_confirm).run()
        say_running_loads(cluster.bootstrap)
        return 0
    reason = (f"fault keys act only on a lab kinspect started; {redact(cluster.label)} is not "
              "one (no lab id of ours in its ZooKeeper)")
    KinspectApp(feed, ReadOnlyConsole(reason), no_confirm=no_confirm).run()
    return 0
