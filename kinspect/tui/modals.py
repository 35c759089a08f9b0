"""Modal screens: confirm, isolate menu, partition editor, load form, help, messages."""

from __future__ import annotations

from typing import TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from kinspect.errors import KinspectError
from kinspect.lab.faults import Scope
from kinspect.lab.topology import parse_groups
from kinspect.load.consumers.group_process import ConsumerRequest
from kinspect.load.load_process import LoadRequest
from kinspect.tui.actions import ACTIONS, display_key


class ConfirmScreen(ModalScreen[bool]):
    """Yes/no before anything destructive; `y` / Enter confirms, `n` / Esc cancels."""

    BINDINGS = [Binding("y", "answer(True)", "yes"), Binding("n,escape", "answer(False)", "no")]
    AUTO_FOCUS = "#yes"

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question, self.detail = question, detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self.question, "bold"))
            if self.detail:
                yield Static(Text(self.detail, "dim"))
            with Horizontal(classes="buttons"):
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", id="no")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class IsolateScreen(ModalScreen[str | None]):
    """Which way to cut a broker off: ZooKeeper (in KRaft the controller quorum) only, the
    zombie leader; brokers; or all."""

    BINDINGS = [Binding("escape", "dismiss(None)", "cancel")]

    def __init__(self, node: str, kraft: bool = False) -> None:
        super().__init__()
        self.node, self.kraft = node, kraft

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(f"Isolate {self.node}", "bold"))
            yield OptionList(*[Option(scope.words_in(self.kraft), id=scope.value)
                               for scope in (Scope.ZK, Scope.BROKERS, Scope.ALL)])

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class ScenarioPicker(ModalScreen[str | None]):
    """The workshop menu: every scenario with what it should show; Enter runs one."""

    BINDINGS = [Binding("escape", "dismiss(None)", "cancel")]

    def __init__(self, scenarios: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.scenarios = scenarios  # name, title, expectation

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(Text("Replay a scenario (resets the lab: its data is wiped)", "bold"))
            yield OptionList(*[Option(Text.assemble((name, "bold"), f"  {title}\n",
                                                    (f"   expect {expect}", "dim")), id=name)
                               for name, title, expect in self.scenarios])

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


LAB_CHOICE = "\0lab"  # the switcher's id for the running lab (no profile name has a NUL)


class ClusterPicker(ModalScreen[str | None]):
    """The cluster switcher: the lab, or a profile of the profiles file (read-only there)."""

    BINDINGS = [Binding("escape", "dismiss(None)", "cancel")]

    def __init__(self, names: tuple[str, ...], lab: bool, problem: str | None) -> None:
        super().__init__()
        self.names, self.lab, self.problem = names, lab, problem

    def compose(self) -> ComposeResult:
        options = [Option(Text.assemble(("the lab", "bold"), ("  fault keys on", "dim")),
                          id=LAB_CHOICE)] if self.lab else []
        options += [Option(Text(name, "bold"), id=name) for name in self.names]
        with Vertical(classes="dialog"):
            yield Label(Text("Look at another cluster", "bold"))
            if self.problem:
                yield Static(Text(self.problem, "yellow"))
            yield OptionList(*options)

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class PartitionEditor(ModalScreen[list[str] | None]):
    """Type groups as in `kinspect lab partition`: each group is comma-separated nodes."""

    BINDINGS = [Binding("escape", "dismiss(None)", "cancel")]

    def __init__(self, nodes: list[str]) -> None:
        super().__init__()
        self.nodes = nodes
        # zk1, or in a KRaft lab its first controller: what the example cuts kafka2 from
        self.decider = next((n for n in nodes if not n.startswith("kafka")), "zk1")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(Text("Network partition", "bold"))
            yield Static(Text("Groups separated by spaces, nodes by commas; two nodes talk only "
                              "if some group holds both, unnamed nodes form one more group.\n"
                              f"Nodes: {', '.join(self.nodes)}.   Example: "
                              f"kafka1,kafka2,kafka3 kafka1,kafka3,{self.decider} (kafka2 "
                              f"loses {'ZooKeeper' if self.decider == 'zk1' else 'the quorum'})",
                              "dim"))
            yield Input(placeholder="kafka2", id="groups")
            yield Static(id="preview")

    @on(Input.Changed)
    def preview(self, event: Input.Changed) -> None:
        self.query_one("#preview", Static).update(self._check(event.value)[1])

    def _check(self, value: str) -> tuple[list[str] | None, Text]:
        specs = value.split()
        try:
            groups = parse_groups(specs, self.nodes)
        except KinspectError as exc:
            return None, Text(str(exc), "red")
        return specs, Text("groups: " + "  |  ".join(",".join(g) for g in groups), "green")

    @on(Input.Submitted)
    def submit(self, event: Input.Submitted) -> None:
        specs, message = self._check(event.value)
        if specs is None:
            self.query_one("#preview", Static).update(message)
            return
        self.dismiss(specs)


RequestT = TypeVar("RequestT")


class RequestForm(ModalScreen[RequestT | None]):
    """A form whose Start builds a request (or the one line saying what is wrong, shown in
    its #hint) and whose Cancel or Escape dismisses it with None."""

    BINDINGS = [Binding("escape", "dismiss(None)", "cancel")]

    def _request(self) -> RequestT | str:
        raise NotImplementedError

    @on(Button.Pressed)
    @on(Input.Submitted)
    def submit(self, event: Button.Pressed | Input.Submitted) -> None:
        if isinstance(event, Button.Pressed) and event.button.id == "cancel":
            self.dismiss(None)
            return
        request = self._request()
        if isinstance(request, str):
            self.query_one("#hint", Static).update(Text(request, "bold red"))
            return
        self.dismiss(request)


class LoadForm(RequestForm[LoadRequest]):
    """The source material's producer by default: test1, acks=1, 10,000 msg/s, 100,000."""
    FIELDS = ("topic", "acks", "rate", "count", "producers")

    def __init__(self, topics: list[str], defaults: LoadRequest | None = None) -> None:
        super().__init__()
        self.topics, self.defaults = topics, defaults or LoadRequest()

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text("Start a load generator", "bold"))
            with Grid(classes="form"):
                for name in self.FIELDS:
                    yield Label(name)
                    yield Input(str(getattr(self.defaults, name)), id=name)
            yield Static(Text("topics: " + ", ".join(self.topics), "dim"), id="hint")
            with Horizontal(classes="buttons"):
                yield Button("Start", variant="primary", id="start")
                yield Button("Cancel", id="cancel")

    def _request(self) -> LoadRequest | str:
        values = {name: self.query_one(f"#{name}", Input).value.strip() for name in self.FIELDS}
        if values["acks"] not in ("0", "1", "all", "-1"):
            return "acks must be 0, 1 or all"
        for name in ("count", "producers"):
            if not values[name].isdigit() or int(values[name]) < 1:
                return f"{name} must be a positive whole number"
        rate = values["rate"]
        if rate != "max" and not rate.replace(".", "", 1).isdigit():
            return "rate must be a number of messages per second, or max"
        if self.topics and values["topic"] not in self.topics:
            return f"no topic {values['topic']!r} on this cluster"
        return LoadRequest(**values)


class ConsumerForm(RequestForm[ConsumerRequest]):
    """A consumer group on the load's topic; the defaults are the safe consumer."""
    FIELDS = ("group", "commit", "crash_after", "fail_rate", "process_ms")

    def __init__(self, topic: str) -> None:
        super().__init__()
        self.defaults = ConsumerRequest(topic)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(f"Start a consumer group on {self.defaults.topic}", "bold"))
            with Grid(classes="form"):
                for name in self.FIELDS:
                    yield Label(name.replace("_", " "))
                    yield Input(str(getattr(self.defaults, name)), id=name)
            yield Static(Text("commit: auto, before or after; crash after N records: consumer "
                              "0 is killed and restarted (blank: no crash)", "dim"), id="hint")
            with Horizontal(classes="buttons"):
                yield Button("Start", variant="primary", id="start")
                yield Button("Cancel", id="cancel")

    def _request(self) -> ConsumerRequest | str:
        values = {name: self.query_one(f"#{name}", Input).value.strip() for name in self.FIELDS}
        if values["commit"] not in ("auto", "before", "after"):
            return "commit must be auto, before or after"
        if values["crash_after"] and not (values["crash_after"].isdigit()
                                          and int(values["crash_after"]) > 0):
            return "crash after must be a positive whole number, or blank"
        for name in ("fail_rate", "process_ms"):
            if not values[name].replace(".", "", 1).isdigit():
                return f"{name.replace('_', ' ')} must be a number"
        if float(values["fail_rate"]) > 1:
            return "fail rate must be between 0 and 1"
        if not values["group"]:
            return "the group needs a name"
        return ConsumerRequest(self.defaults.topic, **values)


class HelpScreen(ModalScreen[None]):
    """Every key, from the same registry as the bindings."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss(None)", "close")]

    def __init__(self, read_only_reason: str | None) -> None:
        super().__init__()
        self.read_only_reason = read_only_reason

    def compose(self) -> ComposeResult:
        text = Text()
        titles = {"broker": "On the selected broker", "cluster": "Cluster",
                  "view": "View", "app": "App"}
        for group, title in titles.items():
            text.append(f"{title}\n", "bold underline")
            for action in (a for a in ACTIONS if a.group == group):
                hidden = action.fault and self.read_only_reason is not None
                style = "dim strike" if hidden else ""
                text.append(f"  {display_key(action):>3}  ", "bold cyan")
                text.append(f"{action.help}\n", style)
            text.append("\n")
        text.append("  1-9  select broker by id      tab  move between panels\n", "dim")
        text.append("  ⏎    open/close a topic        a    open/close every topic\n", "dim")
        if self.read_only_reason:
            text.append(f"\nFault keys are off: {self.read_only_reason}\n", "yellow")
        with Vertical(classes="dialog wide"):
            yield Label(Text("kinspect keys", "bold"))
            yield Static(text)
