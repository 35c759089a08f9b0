"""One registry of what the TUI can do: it feeds the key bindings, footer, help and palette.

Adding an action here is enough for it to get a key, a line in `?`, and a palette entry; the
app only has to implement `action_<name>`.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from kinspect.lab.faults import FaultKind


@dataclass(frozen=True)
class UiAction:
    name: str          # the app implements action_<name>
    key: str
    label: str         # short, for the footer
    help: str          # one line, for `?` and the palette
    group: str         # "broker" | "cluster" | "view" | "app"
    fault: bool = False         # acts on the lab: hidden and refused on other clusters
    footer: bool = True
    kind: FaultKind | None = None  # the lab's fault the key applies (its repair: the same key)


ACTIONS: tuple[UiAction, ...] = (
    UiAction("kill", "k", "kill", "SIGKILL the selected broker (a crash)", "broker",
             fault=True, kind=FaultKind.KILL),
    UiAction("stop", "s", "stop", "stop the selected broker cleanly (controlled shutdown)",
             "broker", fault=True, footer=False, kind=FaultKind.STOP),
    UiAction("start", "r", "start", "start the selected broker, or restart it if it runs",
             "broker", fault=True, kind=FaultKind.RESTART),
    UiAction("pause", "p", "pause", "freeze (SIGSTOP) or thaw the selected broker: a long GC",
             "broker", fault=True, kind=FaultKind.PAUSE),
    UiAction("isolate", "i", "isolate", "cut the selected broker off from ZooKeeper, the "
             "other brokers, or all", "broker", fault=True, kind=FaultKind.ISOLATE),
    UiAction("slow", "w", "slow link", "slow the selected broker's link (rate + loss), "
             "or restore it", "broker", fault=True, footer=False, kind=FaultKind.SLOW),
    UiAction("power", "o", "power", "cut the power of every broker at once (lab up --power: "
             "what was not fsynced is lost), or power them on again", "cluster", fault=True,
             footer=False, kind=FaultKind.POWER_OFF),
    UiAction("partition", "x", "partition", "build network partition groups from any nodes",
             "cluster", fault=True, footer=False, kind=FaultKind.PARTITION),
    UiAction("heal", "h", "heal", "remove every network partition", "cluster", fault=True,
             kind=FaultKind.HEAL),
    UiAction("load", "l", "load", "start or stop a load generator", "cluster", fault=True),
    UiAction("consumers", "g", "consumers", "start or stop a consumer group reading the load "
             "(crashes, failures; m judges it)", "cluster", fault=True, footer=False),
    UiAction("postmortem", "m", "post-mortem", "verify the last load run and report what "
             "was lost (PySpark)", "cluster", fault=True, footer=False),
    UiAction("scenario", "e", "scenario", "replay a data-loss experiment from the catalog "
             "(resets the lab), then show its post-mortem", "cluster", fault=True, footer=False),
    UiAction("filter", "slash", "filter", "filter partitions by topic or name", "view"),
    UiAction("unhealthy", "u", "unhealthy", "show only unhealthy partitions", "view"),
    UiAction("warnings", "W", "warnings", "every cluster warning in full", "view", footer=False),
    UiAction("broker", "b", "broker", "the selected broker's replicas: leads or follows, in "
             "sync, behind the leader, size, log dir (sortable)", "view", footer=False),
    UiAction("command_palette", "colon", "commands", "open the command palette", "app",
             footer=False),
    UiAction("switch", "c", "cluster", "look at another cluster of the profiles file, or back "
             "at the lab (read-only anywhere but the lab)", "app", footer=False),
    UiAction("help", "question_mark", "help", "show every key", "app"),
    UiAction("quit", "q", "quit", "quit (the lab keeps running)", "app"),
)

KEY_NAMES = {"slash": "/", "colon": ":", "question_mark": "?"}


def by_name(name: str) -> UiAction | None:
    return next((a for a in ACTIONS if a.name == name), None)


def display_key(action: UiAction) -> str:
    return KEY_NAMES.get(action.key, action.key)


def bindings() -> list[Binding]:
    return [Binding(a.key, a.name, a.label, show=a.footer, key_display=display_key(a))
            for a in ACTIONS]
