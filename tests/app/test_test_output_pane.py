"""The Test output pane under load: a flood is drawn in order, to its last line, and a
later run's flood leaves the earlier runs' summaries in the pane."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.message import Message

from agent import events as ev
from app.config.settings import Settings
from app.dashboard.app import AstraApp, build_app
from app.dashboard.screens.messages import TestOutputBatch
from app.sessions.options import SessionOptions
from tests.fakes import HashEmbedder, failed_run_finished
from widgets import TestOutputLog

SIZE = (120, 40)
BURST = 800
SUMMARY = "run 1 FAILED: 3 passed, 1 failed, exit 1 in 0.5s"


def dashboard(tmp_path: Path) -> AstraApp:
    """The real app, idle (no session), fed events through the session's callback."""
    options = SessionOptions(memory=f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    settings = Settings(astra_data_dir=tmp_path / "data")
    return build_app(settings, options, tmp_path, embedder=HashEmbedder(), plans=[])


async def send(pilot, events: list[ev.Event], last_row: str) -> TestOutputLog:
    """Post the events to the dashboard in bursts, as the session does; wait until drawn.

    A flood past twice max_lines is drawn again from its pinned lines, FLUSH_LINES a
    frame, so its last line can take a few frames.
    """
    for first in range(0, len(events), BURST):
        for event in events[first : first + BURST]:
            pilot.app.forward_event(event)
        await asyncio.sleep(0)
    pane = pilot.app.dashboard.query_one(TestOutputLog)
    await drawn_to(pilot, pane, last_row)
    return pane


async def drawn_to(pilot, pane: TestOutputLog, last_row: str) -> None:
    async with asyncio.timeout(10):
        while not pane.lines or rows(pane)[-1] != last_row:
            await pilot.pause(0.01)
    await pilot.pause()


def rows(pane: TestOutputLog) -> list[str]:
    return [strip.text.rstrip() for strip in pane.lines]


async def test_a_flood_is_drawn_in_order_to_its_last_line(tmp_path):
    texts = [f"line {n:05d}" for n in range(6000)]
    messages: list[Message] = []
    async with dashboard(tmp_path).run_test(size=SIZE, message_hook=messages.append) as pilot:
        pane = await send(pilot, [ev.TestOutput(run=1, line=text) for text in texts], texts[-1])
        drawn = rows(pane)
        keep = pane.keep_lines
    handled = [m for m in messages if isinstance(m, TestOutputBatch)]
    assert all(b.taken for b in handled)
    assert [event.line for b in handled for event in b.events] == texts
    assert drawn[-1] == "line 05999"
    shown = [row for row in drawn if row.startswith("line ")]
    assert shown == texts[-len(shown) :]  # a tail of the flood, in order, nothing skipped
    assert keep <= len(drawn) <= 2 * keep  # max_lines kept, at most twice that before a trim


async def test_a_burst_is_drawn_by_the_next_pause(tmp_path):
    async with dashboard(tmp_path).run_test(size=SIZE) as pilot:
        pane = pilot.app.dashboard.query_one(TestOutputLog)
        burst = pane.FLUSH_LINES - 1  # with the run's header, one frame's lines
        for n in range(burst):
            pilot.app.forward_event(ev.TestOutput(run=1, line=f"line {n}"))
        await pilot.pause()
        assert len(pane.lines) == burst + 1 and rows(pane)[-1] == f"line {burst - 1}"
        pilot.app.forward_event(ev.TestOutput(run=1, line="one more"))
        await pilot.pause()
        assert rows(pane)[-2:] == [f"line {burst - 1}", "one more"]


async def test_the_summary_comes_after_the_runs_lines(tmp_path):
    lines = [ev.TestOutput(run=1, line=f"line {n}") for n in range(700)]
    async with dashboard(tmp_path).run_test(size=SIZE) as pilot:
        pane = await send(pilot, [*lines, failed_run_finished(1)], SUMMARY)
        drawn = rows(pane)
    assert drawn.count(SUMMARY) == 1
    assert drawn[-2:] == ["line 699", SUMMARY]


async def test_earlier_runs_keep_their_summaries_when_a_later_run_floods_the_pane(tmp_path):
    first = [ev.TestOutput(run=1, line=f"first {n}") for n in range(3)]
    flood = [ev.TestOutput(run=2, line=f"line {n:05d}") for n in range(6000)]
    async with dashboard(tmp_path).run_test(size=SIZE) as pilot:
        pane = await send(pilot, [*first, failed_run_finished(1), *flood], "line 05999")
        drawn = rows(pane)
        keep = pane.keep_lines
        await pilot.resize_terminal(80, 24)  # another width: the kept lines are drawn again
        await drawn_to(pilot, pane, "line 05999")
        rewrapped = rows(pane)
    for shown in (drawn, rewrapped):
        assert shown.index("── test run 1 ──") < shown.index(SUMMARY)
        assert shown.index(SUMMARY) < shown.index("── test run 2 ──")
        assert "first 0" not in shown  # the oldest output lines are what go
        assert shown[-1] == "line 05999"
    assert len(drawn) <= 2 * keep + 3


async def test_output_is_shown_as_written_never_read_as_markup(tmp_path):
    lines = [
        r"E   FileNotFoundError: C:\logs\ERROR.log",
        r"E   assert 'a\\' == '[bold]b[/]' PASSED",
    ]
    async with dashboard(tmp_path).run_test(size=SIZE) as pilot:
        events = [ev.TestOutput(run=1, line=line) for line in lines]
        pane = await send(pilot, events, lines[-1])
        drawn = rows(pane)
    assert drawn[-2:] == lines


async def test_what_a_session_says_while_the_app_closes_is_dropped(tmp_path):
    """Closed mid-session (a test's run_test ending, a crash), the panes go first; a line or
    note still on its way must not raise NoMatches out of the closing app."""
    async with dashboard(tmp_path).run_test(size=SIZE) as pilot:
        screen = pilot.app.dashboard
        await screen.query("*").remove()  # as the app's close removes them
        pilot.app.forward_event(ev.TestOutput(run=1, line="late line"))
        pilot.app.forward_event(ev.SessionNote(level="info", message="late note"))
        await pilot.pause()
        assert not screen.query(TestOutputLog)
