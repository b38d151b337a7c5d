"""The dashboard's Supervisor: the operator answers the loop's questions in modals.

Each question pushes a ModalScreen and awaits its dismissal; the loop, running in a
worker on the app's event loop, waits there, so nothing is sent or written meanwhile.
Flags given up front (`--approve-live-cost`, `--store yes|no`) answer without asking.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.app import App
from textual.screen import ModalScreen

from app.screens.cost_modal import CostModal
from app.screens.store_modal import StoreModal

if TYPE_CHECKING:
    from agent.supervisor import CostQuote, StoreProposal


class DashboardSupervisor:
    def __init__(self, app: App, *, approve_live_cost: bool = False, store: str = "ask") -> None:
        self.app = app
        self.approve = approve_live_cost
        self.store = store

    async def _ask(self, modal: ModalScreen[bool]) -> bool:
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def settle(result: bool | None) -> None:
            if not answer.done():
                answer.set_result(bool(result))

        self.app.push_screen(modal, callback=settle)
        return await answer

    async def approve_live_cost(self, quote: CostQuote) -> bool:
        if self.approve:
            return True
        return await self._ask(CostModal(quote))

    async def confirm_store(self, proposal: StoreProposal) -> bool:
        if self.store != "ask":
            return self.store == "yes"
        return await self._ask(StoreModal(proposal))
