"""The dashboard's Supervisor: the operator answers the loop's questions in modals.

Each question pushes a ModalScreen and awaits its dismissal; the loop, running in a
worker on the app's event loop, waits there, so nothing is sent or written meanwhile.
Flags given up front (`--approve-live-cost`, `--store yes|no`) answer without asking;
`--edits auto` never reaches here.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

from textual.app import App
from textual.screen import ModalScreen

from app.dashboard.screens.cost_modal import CostModal
from app.dashboard.screens.edit_modal import EditModal
from app.dashboard.screens.finish_modal import FinishModal
from app.dashboard.screens.store_modal import StoreModal

if TYPE_CHECKING:
    from agent.supervisor import CostQuote, EditDecision, EditProposal, StoreProposal


T = TypeVar("T")

# the loop waits on the one on screen: a stop answers it with its default, or the session
# could not reach the safe point where it stops; what each default means
QUESTIONS: dict[type[ModalScreen], str] = {
    CostModal: "the request was not approved",
    EditModal: "the edit was not applied",
    StoreModal: "the fix was not stored",
    FinishModal: "the changes are kept on a branch",
}


def answer_open_question(app: App) -> str:
    """Dismiss the question on screen with its default; what that means, if one was open."""
    question = app.screen
    if type(question) not in QUESTIONS:
        return ""
    question.dismiss(None)
    return QUESTIONS[type(question)]


class DashboardSupervisor:
    def __init__(self, app: App, *, approve_live_cost: bool = False, store: str = "ask") -> None:
        self.app = app
        self.approve = approve_live_cost
        self.store = store

    async def _ask(self, modal: ModalScreen[T], default: T) -> T:
        answer: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def settle(result: T | None) -> None:
            if not answer.done():
                answer.set_result(default if result is None else result)

        self.app.push_screen(modal, callback=settle)
        return await answer

    async def approve_live_cost(self, quote: CostQuote) -> bool:
        if self.approve:
            return True
        return await self._ask(CostModal(quote), False)

    async def confirm_store(self, proposal: StoreProposal) -> bool:
        if self.store != "ask":
            return self.store == "yes"
        return await self._ask(StoreModal(proposal), False)

    async def approve_edit(self, proposal: EditProposal) -> EditDecision:
        from agent.supervisor import EditDecision  # loaded by now: a session is running

        approved, reason = await self._ask(EditModal(proposal), (False, ""))
        return EditDecision(approved, reason)

    async def choose_finish(self, source: str, branch: str) -> str:
        """apply, branch or discard, for a session whose tests pass after its edits."""
        return await self._ask(FinishModal(source, branch), "branch")
