"""`kinspect replay`'s app: the live screen fed by a recording (replay_feed.py).

It only adds the player keys and a status bar to KinspectApp; its console is read-only, so
every fault key is refused. In: a ReplayFeed. Out: the screen, and the player's commands to
the feed.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.binding import Binding
from textual.widgets import RichLog, Static

from kinspect.lab.journal import JournalEntry
from kinspect.sources.playback import Recording
from kinspect.tui.app import KinspectApp
from kinspect.tui.console import ReadOnlyConsole
from kinspect.tui.messages import ReplayJumped, ReplayStatus
from kinspect.tui.render import event_line, fault_line
from kinspect.tui.replay_feed import ReplayFeed

READ_ONLY = "a replay: it shows what was recorded and acts on nothing"


class ReplayBar(Static):
    DEFAULT_CSS = "ReplayBar { height: 1; background: $primary-darken-2; color: $text; }"


class ReplayApp(KinspectApp):
    """The live screen, fed by a recording; the player's keys on top, fault keys refused."""

    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        *KinspectApp.BINDINGS,
        Binding("space", "replay_toggle", "pause/play"),
        Binding("full_stop", "replay_step(1)", "step", show=False),
        Binding("comma", "replay_step(-1)", "step back", show=False),
        Binding("right_square_bracket", "replay_seek(10)", "+10 s", show=False),
        Binding("left_square_bracket", "replay_seek(-10)", "-10 s", show=False),
        Binding("plus,equals_sign", "replay_speed(2)", "faster", show=False),
        Binding("minus", "replay_speed(0.5)", "slower", show=False),
    ]

    def __init__(self, feed: ReplayFeed) -> None:
        super().__init__(feed, ReadOnlyConsole(READ_ONLY), clock=feed.clock)
        self.replay = feed
        self.replay_status: ReplayStatus = feed.status()

    def on_mount(self) -> None:
        """Runs before the base's on_mount (Textual calls both): the bar is there first."""
        self.main.mount(ReplayBar(self.replay_status.text(), id="replay-bar"), before=0)

    @on(ReplayStatus)
    def replay_moved(self, message: ReplayStatus) -> None:
        self.replay_status = message
        if self.screen_stack:
            self.main.query_one(ReplayBar).update(message.text())

    @on(ReplayJumped)
    def replay_jumped(self, message: ReplayJumped) -> None:
        if not self.screen_stack:
            return
        log = self.main.query_one("#events", RichLog)
        log.clear()
        for item in message.history:
            if isinstance(item, JournalEntry):
                log.write(fault_line(item))
            else:
                log.write(event_line(item))

    def action_replay_toggle(self) -> None:
        self.replay.toggle()

    def action_replay_step(self, n: int) -> None:
        self.replay.step(n)

    def action_replay_seek(self, seconds: float) -> None:
        self.replay.seek(seconds)

    def action_replay_speed(self, factor: float) -> None:
        self.replay.change_speed(factor)


def run_replay(recording: Recording, at_ms: int | None, speed: float, title: str,
               paused: bool = False) -> int:
    ReplayApp(ReplayFeed(recording, at_ms, speed, title, paused)).run()
    return 0
