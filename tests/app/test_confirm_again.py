"""A store that repeats a stored fix is offered as "confirm again", in the dashboard's store
modal (same y/n keys) and in the headless prompt."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from textual.app import App
from textual.widgets import Button, Label, Static

from agent.supervisor import StoreProposal
from app.dashboard.screens.store_modal import StoreModal
from app.dashboard.supervisor import DashboardSupervisor
from app.sessions.headless import HeadlessSupervisor
from memory.records import Confirmation, MemoryRecord, MemorySearchResult
from tests.fakes import PASSING

AT = datetime(2026, 5, 1, tzinfo=UTC)


def record(memory_id: str, session_id: str, confirmations=()) -> MemoryRecord:
    return MemoryRecord(
        memory_id=memory_id,
        fix_description="Strip whitespace around each origin.",
        error_type="AssertionError",
        file_paths=("app/service.py",),
        outcome=PASSING,
        session_id=session_id,
        timestamp=AT,
        confirmations=confirmations,
    )


STORED = record(
    "0123abcd-0000-5000-8000-000000000000",
    "first",
    (Confirmation(session_id="second", confirmed_at=AT),),
)
NEW = record("89abcdef-0000-5000-8000-000000000000", "third")
PROPOSAL = StoreProposal(NEW, [MemorySearchResult(record=STORED, score=0.97, rank=1)], STORED)


async def test_the_store_modal_offers_confirm_again_and_y_accepts_it():
    app = App()
    async with app.run_test() as pilot:
        task = asyncio.ensure_future(DashboardSupervisor(app).confirm_store(PROPOSAL))
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, StoreModal)
        title = str(modal.query_one(".dialog-title", Label).render())
        assert title == "Confirm 0123abcd again?"
        body = str(modal.query_one("#store-confirm-again", Static).render())
        # as `memory show` counts it (it said 3, the record then held 2); the new id is a draft
        assert body.startswith("Stored fix 0123abcd, confirmed 2 times so far:")
        assert "no second record" in body and "the id 89abcdef below is not kept" in body
        assert str(modal.query_one("#store", Button).label) == "Confirm again"
        await pilot.press("y")
        assert await asyncio.wait_for(task, 5) is True


async def test_the_headless_prompt_says_confirm_again():
    asked: list[str] = []

    def ask(question: str) -> bool:
        asked.append(question)
        return False

    supervisor = HeadlessSupervisor(approve_live_cost=False, store="ask", ask=ask)
    assert await supervisor.confirm_store(PROPOSAL) is False
    [question] = asked
    assert "It repeats stored fix 0123abcd, confirmed 2 times so far." in question
    assert question.endswith("Confirm it again?")
