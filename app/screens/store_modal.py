"""Confirm a memory write: the exact record beside the nearest records already stored."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll

from app.screens.yes_no_modal import Choice, YesNoModal
from widgets import RecordView

if TYPE_CHECKING:
    from agent.supervisor import StoreProposal


class StoreModal(YesNoModal):
    """Answers True (store) or False (reject: nothing is written)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Store", id="store.store"),
        Binding("escape,n", "answer(False)", "Reject", id="store.reject"),
    ]

    def __init__(self, proposal: StoreProposal) -> None:
        record = proposal.record
        title = f"Store fix {record.short_id} in memory?"
        if record.flags:
            title += "  ⚑ FLAGGED"
        super().__init__(
            title,
            Choice("Store", "success", "store"),
            Choice("Reject", "error", "reject"),
            wide=True,
        )
        self.proposal = proposal

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="store-body"):
            yield RecordView(self.proposal.record, self.proposal.nearest, id="store-record")
