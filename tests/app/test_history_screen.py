"""The history screen (Pilot, headless): `h` and the palette open it, it lists what the
summaries hold with memory's effect, and `enter` replays a transcript in the dashboard."""

from __future__ import annotations

import shutil

from textual.widgets import DataTable, Label

from app.dashboard.screens.dashboard import DashboardScreen
from app.dashboard.screens.history_screen import HistoryScreen
from app.sessions.history import SessionEntry, load_history, summary_path, write_summary
from tests.app.pilot_helpers import (
    REHEARSAL,
    SIZE,
    drawn,
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
        row = dict(zip(table.columns, (str(cell) for cell in table.get_row_at(0)), strict=True))
        assert row == {
            "when": "2026-01-01 10:00",
            "session": "session-old",
            "status": "completed",
            "tests": "green",
            "turns": "7",
            "cost": "$0.2500",
            "matches": "1",
            "memory": "match",
            "stored": "1",
            "workspace": row["workspace"],
        }
        assert str(alpha).endswith(row["workspace"].lstrip("…"))
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


def demo_pair(settings) -> list[SessionEntry]:
    """The demo's two sessions: the same model, minute and status; ids and workspaces
    that differ only at their ends."""
    transcripts = settings.data_dir / "transcripts"
    transcripts.mkdir(parents=True, exist_ok=True)
    entries = []
    for name in ("alpha", "beta"):
        demo = "demo-20261201-195012-d0ab6d"
        entry = SessionEntry(
            session_id=f"{demo}-{name}",
            started_at="2026-12-01T19:50:12+00:00",
            workspace=f"{settings.data_dir}/demo/{demo}/{name}",
            model="gpt-6-astra",
            mode="rehearsal",
            status="completed",
            exit_code=0,
            turns=7,
            cost_usd=0.0,
        )
        write_summary(summary_path(transcripts, entry.session_id), entry)
        entries.append(entry)
    return entries


async def test_the_narrow_history_tells_its_sessions_apart(settings, url):
    """At 80 columns each row read `… completed 7 $0.0000 … gpt-6-ast`: no session id, no
    workspace, every row alike."""
    demo_pair(settings)
    app = idle_app(settings, url)
    drawn_rows = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.action_history()
        await wait_for_screen(pilot, HistoryScreen)
        table = app.screen.query_one(DataTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        for size in ((80, 24), (120, 40)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            drawn_rows[size] = drawn(table)[1:3]
            assert [str(c.label) for c in table.columns.values()][:2] == ["when", "session"]
    for size, (one, other) in drawn_rows.items():
        assert one != other and len(one) <= size[0], (size, one)
        for name in ("alpha", "beta"):  # its id's end and its workspace's, on one row
            rows = [line for line in (one, other) if f"-{name} " in line]
            assert len(rows) == 1 and f"/{name} " in rows[0] + " ", (size, one, other)
    assert "gpt-6-ast " not in " ".join(drawn_rows[(80, 24)])


async def test_an_unreadable_summary_is_said_not_silently_left_out(settings, url, alpha):
    recorded(settings, alpha)
    broken = summary_path(settings.data_dir / "transcripts", "session-broken")
    broken.write_text('{"session_id": "session-broken", "cost_usd": "lots"}')
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.action_history()
        await wait_for_screen(pilot, HistoryScreen)
        await wait_for(pilot, lambda: app.screen.query_one(DataTable).row_count == 1)
        title = str(app.screen.query_one("#history-title", Label).render())
        assert title.endswith("1 sessions · 1 unreadable, not listed")
        warned = [str(n.message) for n in app._notifications]
        assert any(
            "1 session summary(ies) could not be read" in m and str(broken) in m for m in warned
        )
