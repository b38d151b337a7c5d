"""The two issue-11 modals driven by keys, through the dashboard's Supervisor: an edit
approved with y, refused with n and a typed reason; the end-of-session choice."""

from __future__ import annotations

import asyncio

from textual.app import App

from agent.supervisor import EditDecision, EditProposal
from app.dashboard_supervisor import DashboardSupervisor
from app.screens.edit_modal import EditModal
from app.screens.finish_modal import FinishModal

PROPOSAL = EditProposal("calc.sh", "--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-a - b\n+a + b\n")


async def ask(keys: tuple[str, ...], question) -> object:
    """Run the Supervisor's question in an app, answer it with keys, return the answer."""
    app = App()
    async with app.run_test() as pilot:
        supervisor = DashboardSupervisor(app)
        task = asyncio.ensure_future(question(supervisor))
        await pilot.pause()
        assert isinstance(app.screen, (EditModal, FinishModal))
        await pilot.press(*keys)
        return await asyncio.wait_for(task, 5)


async def test_y_applies_the_edit():
    answer = await ask(("y",), lambda s: s.approve_edit(PROPOSAL))
    assert answer == EditDecision(True)


async def test_n_asks_a_reason_that_goes_with_the_rejection():
    keys = ("n", "y", "e", "s", " ", "n", "o", "enter")  # y and n are letters of the reason
    answer = await ask(keys, lambda s: s.approve_edit(PROPOSAL))
    assert answer == EditDecision(False, "yes no")


async def test_the_finish_modal_answers_each_choice():
    for key, choice in (("a", "apply"), ("b", "branch"), ("d", "discard"), ("escape", "branch")):
        assert await ask((key,), lambda s: s.choose_finish("/src", "astra/x")) == choice
