"""What the dashboard's sessions came to, shown before the app quits mid-session."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Static


class SummaryModal(ModalScreen[None]):
    """One line a session; any of enter, escape or q closes it (and the app after it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,escape,q", "dismiss", "Quit", id="summary.quit"),
    ]

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            what = "The session" if len(self.lines) == 1 else "The sessions"
            yield Label(f"{what} before quitting", classes="dialog-title")
            yield Static("\n".join(self.lines) or "no session finished", id="summary")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Quit", variant="primary", id="quit")
        yield Footer()

    def on_button_pressed(self) -> None:
        self.dismiss()
