"""Every cluster warning in full: the side panel has a few lines, a warning can need more."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static


class WarningsScreen(ModalScreen[None]):
    """The warnings panel's text, wrapped at the dialog's width and scrollable."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,W,enter", "dismiss(None)", "close")]

    def __init__(self, text: Text) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog wide"):
            yield Label(Text("cluster warnings", "bold"))
            yield Static(self.text)
            yield Label(Text("Esc closes", "dim"))
