"""The history screen (Pilot, headless): `h` and the palette open it, it lists what the
summaries hold with memory's effect, and `enter` replays a transcript in the dashboard."""

from __future__ import annotations

import shutil

from textual.widgets import DataTable, Label

from app.screens.dashboard import DashboardScreen
from app.screens.history_screen import HistoryScreen
from app.session_history import SessionEntry, load_history, summary_path, write_summary
from tests.app.pilot_helpers import (
    REHEARSAL,
    SIZE,
    idle_app,
    leave_the_browser,
    wait_for,
    wait_for_screen,
)


def recorded(settings, workspace, *, transcript: bool = True) -> SessionEntry:
    """A live session's summary, its transcript the alpha rehearsal (the same format)."""
    transcripts = settings.data_dir / "transcripts"
    transcripts.mkdir(parents=True, exist_ok=True)
    path = transcripts / "session-old.jsonl"
    if transcript:
        shutil.copy(REHEARSAL, path)
    entry = SessionEntry(
        session_id="session-old",
        started_at="2026-01-01T10:00:00+00:00",
        workspace=str(workspace),
        model="gpt-6-astra",
        mode="live",
        status="completed",
        exit_code=0,
        turns=7,
        tool_calls=9,
        cost_usd=0.25,
        delivered_memory_ids=["abcdef0123"],
        stored_memory_ids=["1234"],
        transcript=str(path),
    )
    write_summary(summary_path(transcripts, entry.session_id), entry)
    return entry


async def test_h_lists_sessions_and_enter_replays_one_offline(settings, url, alpha):
    recorded(settings, alpha)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await leave_the_browser(pilot)  # there `h` types into the search
        await pilot.press("h")
        await wait_for_screen(pilot, HistoryScreen)
        table = app.screen.query_one(DataTable)
        await wait_for(pilot, lambda: table.row_count == 1)
        row = [str(cell) for cell in table.get_row_at(0)]
        assert row[:7] == ["2026-01-01 10:00", "completed", "7", "$0.2500", "1", "match", "1"]
        effect = str(app.screen.query_one("#history-effect", Label).render())
        assert "1 live sessions received a match, 0 did not" in effect and "too few" in effect
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        await wait_for(pilot, lambda: app.sessions.finished, timeout=60)
        [done] = app.sessions.finished
    assert done.report.status == "completed" and done.report.cost_usd == 0
    assert done.plan.options.replay == settings.data_dir / "transcripts" / "session-old.jsonl"
    assert done.plan.options.store == "no" and not done.report.stored_memory_ids
    replayed = next(e for e in load_history(settings.data_dir) if e.session_id.startswith("replay"))
    assert (replayed.mode, replayed.status, replayed.workspace) == (
        "rehearsal",
        "completed",
        str(alpha),
    )


async def test_a_session_without_a_transcript_says_why_it_cannot_replay(settings, url, alpha):
    recorded(settings, alpha, transcript=False)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.action_history()  # as the palette's "Session history" does
        await wait_for_screen(pilot, HistoryScreen)
        await wait_for(pilot, lambda: app.screen.query_one(DataTable).row_count == 1)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen) and not app.sessions.plans
        assert any("it has no transcript" in str(n.message) for n in app._notifications)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HistoryScreen)


async def test_the_palette_offers_the_history(settings, url):
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE):
        titles = [command.title for command in app.get_system_commands(app.screen)]
    assert "Session history" in titles
