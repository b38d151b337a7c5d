"""Confirm a memory write: the exact record beside the nearest records already stored, or,
when the nearest is a near-duplicate, confirming that record again (same y/n keys)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from app.dashboard.screens.yes_no_modal import Choice, YesNoModal
from widgets import RecordView

if TYPE_CHECKING:
    from agent.supervisor import StoreProposal

REJECT = Choice("Reject", "error", "reject")  # nothing is written


class StoreModal(YesNoModal):
    """Answers True (store, or confirm the duplicate again) or False (nothing is written)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Store", id="store.store"),
        Binding("n,escape", "answer(False)", "Reject", id="store.reject"),  # the footer: n
    ]

    def __init__(self, proposal: StoreProposal, no: Choice = REJECT) -> None:
        record = proposal.record
        again = proposal.duplicate_of
        title = (
            f"Confirm {again.short_id} again?"
            if again
            else f"Store fix {record.short_id} in memory?"
        )
        if record.flags:
            title += "  ⚑ FLAGGED"
        super().__init__(
            title, Choice("Confirm again" if again else "Store", "success", "store"), no, wide=True
        )
        self.proposal = proposal

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="store-body"):
            if self.proposal.duplicate_of is not None:
                yield Static(
                    f"Stored fix {self.proposal.confirm_again_text()}: the nearest record "
                    "names the same files and failure signature, so y adds this session's "
                    "evidence to it; no second record is made, and the id "
                    f"{self.proposal.record.short_id} below is not kept.",
                    id="store-confirm-again",
                )
            yield RecordView(self.proposal.record, self.proposal.nearest, id="store-record")
