"""The base of the dashboard's yes/no questions (confirm, live cost, store), as frogmouth's
dialogs are: a ModalScreen[bool] that dismisses its answer.

A subclass gives the title, the body between title and buttons, the two buttons, and its
own key bindings, which call `answer`. The "no" button has the focus, so a stray enter
never says yes.
"""

from __future__ import annotations

from typing import NamedTuple

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label
from textual.widgets.button import ButtonVariant


class Choice(NamedTuple):
    """One of the two buttons: its label, its colour, and its id."""

    label: str
    variant: ButtonVariant
    id: str


class YesNoModal(ModalScreen[bool]):
    """Answers True (the yes button or key) or False (the no button, key or escape)."""

    def __init__(self, title: str, yes: Choice, no: Choice, *, wide: bool = False) -> None:
        super().__init__()
        self.question = title
        self.yes = yes
        self.no = no
        self.wide = wide

    def compose_body(self) -> ComposeResult:
        """What the question is about, between the title and the buttons."""
        yield from ()

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide" if self.wide else "dialog"):
            yield Label(self.question, classes="dialog-title")
            yield from self.compose_body()
            with Horizontal(classes="dialog-buttons"):
                for choice in (self.yes, self.no):
                    yield Button(choice.label, variant=choice.variant, id=choice.id)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(f"#{self.no.id}", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == self.yes.id)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
