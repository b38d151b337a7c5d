"""A yes/no question, e.g. before deleting a memory record."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from app.dashboard.screens.yes_no_modal import Choice, YesNoModal


class ConfirmModal(YesNoModal):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("escape,n", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, title: str, detail: str, yes: str = "Delete") -> None:
        super().__init__(title, Choice(yes, "error", "yes"), Choice("Cancel", "primary", "no"))
        self.detail = detail

    def compose_body(self) -> ComposeResult:
        yield Static(self.detail, markup=False)
