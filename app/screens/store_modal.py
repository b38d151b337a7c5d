"""Confirm a memory write: the exact record beside the nearest records already stored."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label

from widgets import RecordView

if TYPE_CHECKING:
    from agent.supervisor import StoreProposal


class StoreModal(ModalScreen[bool]):
    """Answers True (store) or False (reject: nothing is written)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Store", id="store.store"),
        Binding("escape,n", "answer(False)", "Reject", id="store.reject"),
    ]

    def __init__(self, proposal: StoreProposal) -> None:
        super().__init__()
        self.proposal = proposal

    def compose(self) -> ComposeResult:
        record = self.proposal.record
        title = f"Store fix {record.short_id} in memory?"
        if record.flags:
            title += "  ⚑ FLAGGED"
        with Vertical(classes="dialog wide"):
            yield Label(title, classes="dialog-title")
            with VerticalScroll(id="store-body"):
                yield RecordView(record, self.proposal.nearest, id="store-record")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Store", variant="success", id="store")
                yield Button("Reject", variant="error", id="reject")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#reject", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "store")

    def action_answer(self, store: bool) -> None:
        self.dismiss(store)
