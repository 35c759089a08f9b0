"""The keys that act: each becomes a `Fault`, a load, a post-mortem or a scenario handed to the
console, in a thread worker that answers with messages (app.py shows them).

The console is the lab's or a read-only stand-in that refuses; nothing here knows how a fault
is done or how a run is judged: the lab, load, post-mortem and scenario layers do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App
from textual.message import Message
from textual.screen import Screen

from kinspect.errors import error_line
from kinspect.lab.faults import Fault, FaultKind, Scope
from kinspect.lab.shaping import Direction, LinkShape
from kinspect.lab.state import LabState, NodeState
from kinspect.load.consumers.group_process import ConsumerRequest
from kinspect.load.load_process import LoadRequest, LoadStatus
from kinspect.model import ClusterSnapshot, Severity
from kinspect.tui.console import Console
from kinspect.tui.messages import CatalogReady, LoadStarted, ReportReady, Said, TaskStep
from kinspect.tui.modals import (
    ConfirmScreen,
    ConsumerForm,
    IsolateScreen,
    LoadForm,
    PartitionEditor,
    ScenarioPicker,
)
from kinspect.tui.widgets import BrokerTable

# The w key's link: the slow-follower scenario's (a follower falls out of the ISR).
TUI_SLOW = LinkShape(rate_kbit=256, loss_pct=5, direction=Direction.IN)


class ActingApp(App[None]):
    """The acting half of the app: key actions and the workers behind them."""

    lab_console: Console
    no_confirm: bool
    snapshot: ClusterSnapshot | None
    lab: LabState | None
    load: LoadStatus | None
    load_dir: Path | None  # the run started here (l), for m

    @property
    def main(self) -> Screen[Any]:
        """The main screen: data keeps arriving while a modal is on top of it."""
        return self.screen_stack[0]

    @property
    def read_only_reason(self) -> str | None:
        return self.lab_console.read_only_reason

    # ----- fault keys ------------------------------------------------------------------

    def _target(self) -> tuple[int, str] | None:
        """The selected lab broker (id, node) a broker key acts on; None (said) when this
        console may not act or no lab broker is selected."""
        if self._refused():
            return None
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

    def _answer(self, do: Callable[[], list[Message]], failed: str = "",
                timeout: float = 8) -> None:
        """In a worker: post what `do` answers, or its error as one line (the console's and
        the services' errors are one line, like the CLI's; an exception would end the app)."""
        try:
            messages = do()
        except Exception as exc:
            self.post_message(Said(failed + error_line(exc), severity=Severity.ERROR, timeout=timeout))
            return
        for message in messages:
            self.post_message(message)

    def _progress(self, title: str) -> Callable[[str], None]:
        """A worker's progress lines, each replacing the last on the screen's progress line."""
        def say(line: str) -> None:
            self.post_message(TaskStep(title, line))
        return say

    def _answer_with_progress(self, title: str, do: Callable[[Callable[[str], None]], list[Message]],
                              failed: str = "", timeout: float = 8) -> None:
        """`_answer`, with `do`'s progress on the progress line, which goes when it ends."""
        try:
            self._answer(lambda: do(self._progress(title)), failed, timeout)
        finally:
            self.post_message(TaskStep(title, "", done=True))

    @work(thread=True, group="faults", exit_on_error=False)
    def apply_fault(self, fault: Fault) -> None:
        """The console carries it out; the line it answers is a toast."""
        self._answer(lambda: [Said(self.lab_console.apply(fault))])

    def _broker_fault(self, verb: str, detail: str, kind: Callable[[str], FaultKind]) -> None:
        """Ask about the selected broker, then apply the fault `kind(node)` names."""
        if (target := self._target()) is None:
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
        self._broker_fault("Start / restart", "Starts it if down, restarts it if running.",
                           lambda _node: FaultKind.RESTART)  # a down node's restart is a start

    def action_pause(self) -> None:
        def kind(node: str) -> FaultKind:
            record = self.lab.node(node) if self.lab else None
            paused = record is not None and record.state == NodeState.PAUSED
            return FaultKind.RESUME if paused else FaultKind.PAUSE

        self._broker_fault("Pause / resume", "SIGSTOP freezes the JVM like a long GC pause; "
                           "pressing again resumes it.", kind)

    def action_isolate(self) -> None:
        if (target := self._target()) is None:
            return
        node = target[1]

        def chosen(scope: str | None) -> None:
            if scope:
                self.apply_fault(Fault(FaultKind.ISOLATE, node, Scope(scope)))

        self.push_screen(IsolateScreen(node, kraft=bool(self.lab and self.lab.kraft)), chosen)

    def action_slow(self) -> None:
        """Slow the selected broker's link (what it receives), or restore it if slowed."""
        if (target := self._target()) is None:
            return
        broker_id, node = target
        slowed = self.lab.slowed_links().get(node) if self.lab else None
        if slowed:
            self._ask(f"Restore broker {broker_id}'s link ({node})?",
                      f"Now: {slowed.get('words', 'slowed')}. Back to full speed.",
                      lambda: self.apply_fault(Fault(FaultKind.UNSLOW, node)))
            return
        self._ask(f"Slow broker {broker_id}'s link ({node})?",
                  f"{TUI_SLOW.words}: as a follower it falls behind and, once its leader's "
                  "log runs ahead, leaves the ISR. Press w again to restore it.",
                  lambda: self.apply_fault(Fault(FaultKind.SLOW, node, shape=TUI_SLOW)))

    def action_partition(self) -> None:
        if self._refused() or self.lab is None:
            return

        def chosen(specs: list[str] | None) -> None:
            if specs:
                self.apply_fault(Fault(FaultKind.PARTITION,
                                       groups=tuple(tuple(s.split(",")) for s in specs)))

        self.push_screen(PartitionEditor([n.name for n in self.lab.nodes]), chosen)

    def action_power(self) -> None:
        """Every broker's power cut at once, or, while some are off, those powered on."""
        if self._refused() or self.lab is None:
            return
        off = [b.name for b in self.lab.brokers if b.state == NodeState.POWERED_OFF]
        if off:
            self._ask(f"Power on {', '.join(off)}?", "Each mounts its disk again and recovers "
                      "from an unclean shutdown.",
                      lambda: self.apply_fault(Fault(FaultKind.POWER_ON, ",".join(off))))
            return
        self._ask("Cut the power of every broker at once?", "Every write a broker has not "
                  "fsynced is dropped and the brokers die in the same instant (needs a lab made "
                  "with lab up --power). Press o again to power them on.",
                  lambda: self.apply_fault(Fault(FaultKind.POWER_OFF, "all")))

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

    @work(thread=True, group="load", exit_on_error=False)
    def start_load(self, request: LoadRequest) -> None:
        self._answer(lambda: [LoadStarted(self.lab_console.start_load(request))],
                     "load did not start: ")

    @work(thread=True, group="load", exit_on_error=False)
    def stop_load(self, run_dir: Path) -> None:
        self._answer(lambda: [Said(self.lab_console.stop_load(run_dir))])

    def action_consumers(self) -> None:
        """A consumer group on the topic of the load started here, in its run dir."""
        if self._refused():
            return
        run_dir = self.load_dir
        if run_dir is None or self.load is None:
            self.notify("start a load with l first: the group reads its topic, and m judges "
                        "both sides", severity="warning")
            return
        if self.load.consumers_running():  # the feed's word
            self._ask("Stop the consumer group?", str(run_dir),
                      lambda: self.stop_consumers(run_dir))
            return
        topic = self.load.topic()
        self.push_screen(ConsumerForm(topic), lambda request: self._start_consumers(
            request, run_dir))

    def _start_consumers(self, request: ConsumerRequest | None, run_dir: Path) -> None:
        if request is not None:
            self.start_consumers(request, run_dir)

    @work(thread=True, group="consumers", exit_on_error=False)
    def start_consumers(self, request: ConsumerRequest, run_dir: Path) -> None:
        self._answer(lambda: [Said(self.lab_console.start_consumers(request, run_dir))],
                     "consumers did not start: ")

    @work(thread=True, group="consumers", exit_on_error=False)
    def stop_consumers(self, run_dir: Path) -> None:
        self._answer(lambda: [Said(self.lab_console.stop_consumers(run_dir))])

    def action_postmortem(self) -> None:
        if self._refused() or self.lab is None:
            return
        if self.load is not None and self.load.running:
            self.notify("the load is still running: stop it with l first", severity="warning")
            return
        self.run_postmortem(self.load_dir, self.lab)

    @work(thread=True, exclusive=True, group="postmortem", exit_on_error=False)
    def run_postmortem(self, run_dir: Path | None, lab: LabState) -> None:
        """verify (read the final log back) → evidence → Spark job → report screen; a failure
        is one line and leaves the run dir untouched."""
        from kinspect.load.rundir import latest_run, report_dir
        from kinspect.postmortem.finish import finish_run

        run_dir = run_dir or latest_run()
        if run_dir is None:
            self.post_message(Said("no load run yet: start one with l, break something, then "
                                   "press m", severity=Severity.WARN))
            return
        self._answer_with_progress("post-mortem", lambda say: [ReportReady(finish_run(
            run_dir, lab.bootstrap, lab=lab, say=say), report_dir(run_dir))],
            "post-mortem failed: ", timeout=15)

    # ----- scenarios ---------------------------------------------------------------------

    def action_scenario(self) -> None:
        if self._refused():
            return
        if any(w.group == "scenario" and w.is_running for w in self.workers):
            self.notify("a scenario is already running", severity="warning")
            return
        self.pick_scenario()

    @work(thread=True, group="catalog", exit_on_error=False)
    def pick_scenario(self) -> None:
        from kinspect.scenarios.catalog import builtin

        self._answer(lambda: [CatalogReady([(s.name, s.title, s.expectation_text())
                                            for s in builtin()])])

    @on(CatalogReady)
    def catalog_ready(self, message: CatalogReady) -> None:
        self.push_screen(ScenarioPicker(message.choices), self._scenario_chosen)

    def _scenario_chosen(self, name: str | None) -> None:
        if name is not None:
            self._ask(f"Run {name}?", "The lab is reset (its data wiped), then loaded and "
                      "broken as the scenario says; watch it here.",
                      lambda: self.run_scenario(name))

    @work(thread=True, group="scenario", exit_on_error=False)
    def run_scenario(self, name: str) -> None:
        """The run plays out on the main screen (the feed keeps observing); its progress lines
        are toasts, then its verdict and its report."""
        from kinspect.scenarios.scenario_process import ScenarioOutcome, follow

        def verdict(outcome: ScenarioOutcome) -> list[Message]:
            severity = Severity.WARN  # ran, and the expectation did not hold
            if outcome.failure:
                severity = Severity.ERROR
            elif outcome.held:
                severity = Severity.INFO
            said: list[Message] = [Said(outcome.verdict(), severity=severity, timeout=15)]
            if outcome.report is not None and outcome.report_dir is not None:
                said.append(ReportReady(outcome.report, outcome.report_dir))
            return said

        # the lab's mode and release, as the screen watches it
        mode, kafka = (self.lab.mode, self.lab.kafka_version) if self.lab else (None, None)

        def run(say: Callable[[str], None]) -> list[Message]:
            process = self.lab_console.start_scenario(name, mode, kafka)
            self.post_message(LoadStarted(process.run_dir))  # its load in the load panel
            return verdict(follow(process, say))

        self._answer_with_progress(f"scenario {name}", run, f"scenario {name}: ", timeout=15)
