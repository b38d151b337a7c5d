"""The two issue-11 modals driven by keys, through the dashboard's Supervisor: an edit
approved with y, refused with n and a typed reason; the end-of-session choice."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.app import App

import app.dashboard.app as app_module
from agent.supervisor import EditDecision, EditProposal
from app.dashboard.screens.edit_modal import EditModal
from app.dashboard.screens.finish_modal import FinishModal
from app.dashboard.supervisor import DashboardSupervisor
from tests.app.pilot_helpers import drawn

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


LONG = (
    "--- a/app/service.py\n+++ b/app/service.py\n@@ -7,7 +7,7 @@\n"
    '-    return [value for value in raw.split(",") if value]\n'
    '+    return [value.strip() for value in raw.split(",") if value.strip()]  # ENDS HERE\n'
)


async def test_a_long_diff_line_is_drawn_whole_at_80_columns():
    """It was cut at the modal's edge: `… if value.stri`."""
    app = App(css_path=Path(app_module.__file__).parent / "app.tcss")
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(EditModal(EditProposal("app/service.py", LONG)))
        await pilot.pause()
        await pilot.pause()
        text = " ".join(drawn(app.screen.query_one("#edit-diff-text")))
    assert "value.strip()]" in text and "# ENDS HERE" in text


async def test_a_file_the_tests_wrote_is_asked_about_as_such():
    app = App(css_path=Path(app_module.__file__).parent / "app.tcss")
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(EditModal(EditProposal("planted.py", "+import os\n", by_tests=True)))
        await pilot.pause()
        title = " ".join(drawn(app.screen.query_one(".dialog-title")))
    assert "The tests wrote planted.py" in title and "keep it?" in title
