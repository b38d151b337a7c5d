"""Confirm a fix an MCP client proposed: the store confirmation, with who proposed it and
a no that leaves it pending (rejecting it is the review screen's own key)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from app.dashboard.screens.store_modal import StoreModal
from app.dashboard.screens.yes_no_modal import Choice

if TYPE_CHECKING:
    from agent.supervisor import StoreProposal
    from memory.records import Proposal


class ProposalModal(StoreModal):
    """Answers True (write the record, or confirm the duplicate again) or False (cancel)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Confirm", id="proposal.confirm"),
        Binding("n,escape", "answer(False)", "Cancel", id="proposal.cancel"),
    ]

    def __init__(self, store: StoreProposal, proposal: Proposal) -> None:
        super().__init__(store, Choice("Cancel", "primary", "cancel"))
        self.question = f"Proposal {proposal.short_id}: {self.question}"
        self.proposed = proposal

    def compose_body(self) -> ComposeResult:
        yield Static(
            f"from the MCP client {self.proposed.client}; tests reported passing, not run here",
            markup=False,
            id="proposal-source",
        )
        yield from super().compose_body()
