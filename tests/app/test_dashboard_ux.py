"""The dashboard as people use it: quitting mid-session, help, the matches pane across
sessions, the browser's keys, export and wording (Pilot, headless)."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from textual.events import Key
from textual.widgets import DataTable, Footer, Input
from textual.widgets._toast import Toast

from agent import events as ev
from agent.supervisor import CostQuote
from app.dashboard.app import build_app
from app.dashboard.screens.confirm_modal import ConfirmModal
from app.dashboard.screens.cost_modal import quote_text
from app.dashboard.screens.dashboard import DashboardScreen
from app.dashboard.screens.edit_modal import EditModal
from app.dashboard.screens.export_modal import ExportModal
from app.dashboard.screens.help_screen import HelpScreen
from app.dashboard.screens.memory_browser import MemoryBrowserScreen
from app.dashboard.screens.record_modal import RecordModal
from app.dashboard.screens.summary_modal import SummaryModal
from app.sessions.options import SessionOptions
from memory.retrieval.explain import COMPACT_WIDTH
from memory.service import MemoryService
from memory.stores.protocol import open_store
from tests.agent.responses_server import ResponsesServer, response_body
from tests.app.pilot_helpers import (
    REHEARSAL,
    SIZE,
    SlowModel,
    drawn,
    idle_app,
    on_screen,
    option_texts,
    rehearsal_app,
    seed,
    seed_imported,
    stored_records,
    wait_for,
    wait_for_screen,
)
from tests.app.test_dashboard import live_app
from tests.app.test_snapshots import SnapshotHost, fixed_events
from tests.fakes import HashEmbedder
from widgets import MatchesLog, SessionHeader

FIXES = [
    ("KeyError: 'port' in config loader", "KeyError", "read port with a default " * 4),
    ("AssertionError: origins list split wrong", "AssertionError", "strip origins"),
]


async def test_quit_mid_session_asks_stops_summarises_then_quits(settings, url, alpha):
    first = json.loads(REHEARSAL.read_text().splitlines()[0])["output"]
    with ResponsesServer() as server:
        answer = threading.Event()
        server.enqueue(response_body(first, response_id="resp_1"), held=answer)
        app = live_app(settings, url, alpha, server)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_screen(pilot, ConfirmModal.__mro__[1])  # the cost modal
            await pilot.click("#approve")
            await wait_for(pilot, lambda: server.requests)
            await pilot.press("q")  # while the model's first answer is on its way
            await wait_for_screen(pilot, ConfirmModal)
            assert app.is_running and app.sessions.agent is not None  # nothing yet
            await pilot.press("y")
            answer.set()
            await wait_for_screen(pilot, SummaryModal)
            summary = str(app.screen.query_one("#summary").render())
            title = str(app.screen.query_one(".dialog-title").render())
            assert app.is_running
            await pilot.press("enter")
            await wait_for(pilot, lambda: not app.is_running)
    assert summary.startswith("stopped (exit 3)") and len(server.requests) == 1
    assert title == "The session before quitting"  # one session: it said "Sessions stopped"
    assert app.return_value == 3


async def test_quit_asked_mid_session_can_be_cancelled(settings, url, alpha):
    first = json.loads(REHEARSAL.read_text().splitlines()[0])["output"]
    with ResponsesServer() as server:
        answer = threading.Event()
        server.enqueue(response_body(first, response_id="resp_1"), held=answer)
        app = live_app(settings, url, alpha, server)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_screen(pilot, ConfirmModal.__mro__[1])
            await pilot.click("#approve")
            await wait_for(pilot, lambda: server.requests)
            await pilot.press("q")
            await wait_for_screen(pilot, ConfirmModal)
            await pilot.press("n")
            answer.set()
            await wait_for(pilot, lambda: app.sessions.finished)
            assert app.is_running and not app.quitting
    assert app.sessions.finished[0].report.status != "stopped"


async def test_a_quit_answers_the_open_question_no(settings, url, alpha):
    """ctrl+q with the edit question open: the session waited on it, so the summary never
    came until the operator answered a question they had just walked away from."""
    before = (alpha / "app" / "service.py").read_text()
    app = rehearsal_app(settings, url, alpha, edits=None, on_success=None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, EditModal)
        await pilot.press("ctrl+q")
        await wait_for_screen(pilot, ConfirmModal)
        await pilot.press("y")
        await wait_for_screen(pilot, SummaryModal)
        notes = [note.message for note in app._notifications]
    [done] = app.sessions.finished
    assert done.report.status == "stopped" and not done.report.stored_memory_ids
    assert any("the edit was not applied" in note for note in notes)
    assert (alpha / "app" / "service.py").read_text() == before


async def test_help_on_question_mark_and_f1(settings, url):
    """`f1` anywhere; `?` too, but in the memory browser, where it types into the search."""
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        texts = []
        for key, where in (("f1", browser), ("question_mark", app.dashboard)):
            if where is app.dashboard:  # in the browser `?` is typed; `esc` twice: back
                browser.query_one(DataTable).focus()
                await pilot.press("question_mark")
                assert browser.query_one("#search", Input).value == "?"
                await pilot.press("escape")
                await wait_for(pilot, lambda: app.screen is app.dashboard)
            await pilot.press(key)
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            await pilot.pause()
            texts.append(app.screen.query_one("Markdown").source)
            await pilot.press("escape")
            await wait_for(pilot, lambda where=where: app.screen is where)
    assert texts[0] == texts[1]
    assert "cosine similarity" in texts[0] and "| `q` |" in texts[0]
    assert str(settings.data_dir) in texts[0] and url in texts[0]


async def test_the_palettes_screenshot_is_saved_in_the_data_dir(settings, url, monkeypatch):
    """Textual saves to the user's Downloads folder, which a server often lacks: the save
    failed there. The dashboard saves in its data dir and says where."""
    monkeypatch.setenv("HOME", str(settings.data_dir / "no-home"))  # no Downloads folder
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        await pilot.press("ctrl+p")
        await pilot.press(*"screenshot")
        await pilot.pause(0.5)
        await pilot.press("enter")
        folder = settings.data_dir / "screenshots"
        await wait_for(pilot, lambda: folder.is_dir() and list(folder.glob("*.svg")))
        await wait_for(
            pilot, lambda: any("Saved screenshot" in n.message for n in app._notifications)
        )
    [saved] = folder.glob("*.svg")
    assert saved.read_text().startswith("<svg")


async def test_matches_pane_separates_sessions_and_shows_the_new_matches():
    events = fixed_events()
    second = [
        events[0].model_copy(update={"session_id": "session-two"}),
        *[e for e in events if e.event == "memory_matched"],
    ]
    host = SnapshotHost(DashboardScreen(), [*events, *second])
    async with host.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        matches = host.screen.query_one(MatchesLog)
        texts = option_texts(matches)
        highlighted = matches.highlighted
    separators = [i for i, text in enumerate(texts) if text.startswith("── session")]
    assert [texts[i] for i in separators] == [
        "── session session-fixed ──",
        "── session session-two ──",
    ]
    assert highlighted == separators[1] + 2  # the second session's first match


def finished_report() -> ev.SessionReport:
    return ev.SessionReport(
        session_id="session-fixed",
        status="completed",
        exit_code=0,
        model_requests=7,
        tool_calls=8,
        memory_searches=[],
        stored_memory_ids=["0123abcd-0000-5000-8000-000000000000"],
        tests=ev.TestsReport(exit_code=0, passed=4, failed=0),
        tokens={},
        cost_usd=0.0123,
        final_text="",
        first_edit_turn=3,
        first_search_turn=2,
        first_request_chained=False,
    )


async def test_the_header_keeps_the_stored_count_and_the_cost_at_80_columns():
    """At 80 columns the report line was cut at `…0 failed · s…`."""
    host = SnapshotHost(DashboardScreen(), [*fixed_events(), finished_report()])
    async with host.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        header = host.screen.query_one(SessionHeader)
        narrow = drawn(header)[1].strip()
        await pilot.resize_terminal(140, 24)
        await pilot.pause()
        wide = drawn(header)[1].strip()
    assert narrow == "completed (exit 0) · tests 4 passed, 0 failed · stored 1 · $0.0123 · 7 req"
    assert wide == (
        "completed (exit 0) · 7 requests · 8 tool calls · tests 4 passed, 0 failed · "
        "stored 1 · $0.0123"
    )


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_every_pane_and_the_running_budget_show_at_80x24_and_120x40(size):
    """At 80x24 the stacked panes were 10 rows each: Budget was below the screen's edge."""
    host = SnapshotHost(DashboardScreen(), fixed_events())
    async with host.run_test(size=size) as pilot:
        await pilot.pause()
        screen = host.screen.region
        panes = {pane.id: pane.region for pane in host.screen.query(".pane")}
        budget = "\n".join(on_screen(host.screen.query_one("#budget")))
    assert screen.size == size and set(panes) == {"turns", "matches", "tests", "budget"}
    for pane_id, region in panes.items():
        assert region.height >= 4 and screen.contains_region(region), pane_id
    assert "$0.0123" in budget and "$2.0000" in budget and "2 of 12" in budget
    assert "$1.5000" in budget and "$0.0421" in budget


async def test_the_header_before_any_session_names_the_store_not_dashes():
    """It read `no session · - · - · workspace - · memory …`."""
    host = SnapshotHost(DashboardScreen("sqlite:///m.sqlite3"))
    async with host.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        header = drawn(host.screen.query_one(SessionHeader))
        host.screen.forward(fixed_events()[0])
        await pilot.pause()
        started = drawn(host.screen.query_one(SessionHeader))
    assert header[0].strip() == "no session · memory sqlite:///m.sqlite3"
    assert "workspace" in started[0] and "no session" not in started[0]


async def _browser(pilot, app) -> MemoryBrowserScreen:
    return await _browser_of(pilot, app, 2)


async def _browser_of(pilot, app, records: int) -> MemoryBrowserScreen:
    await wait_for_screen(pilot, MemoryBrowserScreen)
    browser = app.screen
    await wait_for(pilot, lambda: len(browser.records) == records)
    await pilot.pause()
    return browser


async def test_browser_enter_opens_the_record(settings, url):
    await seed(url, FIXES)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        browser = await _browser(pilot, app)
        expected = browser.selected()
        await pilot.press("enter")
        await wait_for_screen(pilot, RecordModal)
        assert app.screen.record.memory_id == expected.memory_id


async def test_browser_search_box_moves_the_highlight_and_enter_opens_it(settings, url):
    """Once `down` and `enter` did nothing in the search box: only Tab reached the table."""
    await seed(url, FIXES)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        browser = await _browser(pilot, app)
        table = browser.query_one(DataTable)
        await pilot.press(*"origins")
        await wait_for(pilot, lambda: _title(browser).endswith("2 matches for 'origins'"))
        await pilot.pause()
        assert isinstance(app.focused, Input) and table.cursor_row == 0
        await pilot.press("down")
        assert table.cursor_row == 1 and isinstance(app.focused, Input)  # typing goes on
        await pilot.press("up", "down")
        expected = browser.selected()
        await pilot.press("enter")
        await wait_for_screen(pilot, RecordModal)
        assert app.screen.record.memory_id == expected.memory_id
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is browser)
        assert isinstance(app.focused, Input)


async def test_browser_del_in_the_search_box_deletes_the_highlighted_record(settings, url):
    """There `del` deleted a character of the search, and the footer hid `del Delete` (and
    `^e Export`, `^u Unstale`, which the search box took as end and delete-left)."""
    await seed(url, FIXES)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        browser = await _browser(pilot, app)
        search = browser.query_one("#search", Input)
        search.focus()
        await pilot.press(*"port", "home")  # `del` would take the "p"
        await wait_for(pilot, lambda: browser.query_text == "port" and not searching(app))
        await pilot.pause()
        footer = " ".join(on_screen(browser.query_one(Footer)))
        assert "del Delete" in footer and "^e Export" in footer and "^u Unstale" in footer
        highlighted = browser.selected()
        await pilot.press("delete")
        await wait_for_screen(pilot, ConfirmModal)
        await pilot.press("y")
        await wait_for(pilot, lambda: highlighted.memory_id not in browser.records)
    assert search.value == "port"
    assert highlighted.memory_id not in {r.memory_id for r in await stored_records(url)}


def searching(app) -> bool:
    return any(w.group == "browser" and not w.is_finished for w in app.workers)


async def test_browser_enter_typed_before_the_results_opens_the_first_match(settings, url):
    await seed(url, FIXES)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        browser = await _browser(pilot, app)
        await pilot.press(*"port", "enter")  # before the search's pause is over
        await wait_for_screen(pilot, RecordModal)
        opened = app.screen.record
        first = str(browser.query_one(DataTable).get_row_at(0)[0])
        assert browser.query_text == "port" and _title(browser).endswith("for 'port'")
    assert opened.short_id == first


def _title(browser: MemoryBrowserScreen) -> str:
    return str(browser.query_one("#browser-title").render())


IMPORTED = {
    "fix_description": "read the port with a default when the config key is missing",
    "error_type": "KeyError",
    "file_paths": ["app/config.py"],
    "symptom": "KeyError: 'port' in config loader",
}


async def test_browser_rows_mark_an_imported_record_at_80_columns(settings, url):
    """Only the detail said `provenance imported`; `memory list` says it on the line."""
    confirmed = (await seed(url, FIXES[1:]))[0]
    imported = (await seed_imported(url, [IMPORTED]))[0]
    app = idle_app(settings, url)
    async with app.run_test(size=(80, 24)) as pilot:
        browser = await _browser(pilot, app)
        table = browser.query_one(DataTable)
        listed = {key: drawn_row(browser, key) for key in (confirmed, imported)}
        await pilot.press(*"port")  # searching, the fix column is at its narrowest
        await wait_for(pilot, lambda: _title(browser).endswith("matches for 'port'"))
        await pilot.pause()
        found = drawn_row(browser, imported)
        assert "score" in table.columns
    assert "imported · read the port" in listed[imported]
    assert "imported" not in listed[confirmed] and "strip origins" in listed[confirmed]
    assert "imported · read" in found


def drawn_row(browser: MemoryBrowserScreen, memory_id: str) -> str:
    """The table's row of this record as drawn: the header is the first line."""
    table = browser.query_one(DataTable)
    return drawn(table)[1 + table.get_row_index(memory_id)]


async def test_matches_pane_marks_an_imported_match_on_its_line():
    events = fixed_events()
    for event in events:
        if event.event == "memory_matched":
            event.matches[0] = event.matches[0].model_copy(update={"provenance": "imported"})
    host = SnapshotHost(DashboardScreen(), events)
    async with host.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = drawn(host.screen.query_one(MatchesLog))
    match = next(line for line in lines if "1. strong" in line or "1. possible" in line)
    assert "0123abcd imported · AssertionError" in match, lines


async def test_browser_fix_column_takes_the_width_left(settings, url):
    await seed(url, FIXES)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        browser = await _browser(pilot, app)
        table = browser.query_one(DataTable)
        widths = {c.label.plain: c.get_render_width(table) for c in table.columns.values()}
        total = sum(widths.values())
    assert widths["fix"] >= 40 and 115 <= total <= 120  # was 24 of 120


async def test_browser_typing_in_the_table_starts_a_search_without_losing_a_key(settings, url):
    await seed(url, FIXES)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        browser = await _browser(pilot, app)
        browser.query_one(DataTable).focus()
        await pilot.pause()
        await pilot.press(*"origins")  # no `/` first
        search = browser.query_one("#search", Input)
        await wait_for(pilot, lambda: browser.query_text == "origins")
    assert search.value == "origins"


@pytest.mark.parametrize("turns", [0, 1, 2, 3])  # loop turns between two keys
async def test_a_first_search_typed_fast_keeps_every_key(settings, url, monkeypatch, turns):
    """Typed while the model loaded, "origin whitespace" searched only "origi": the keys
    already on their way to the table when the first one moved the focus were dropped."""
    await seed(url, FIXES)
    model = SlowModel()
    monkeypatch.setattr("app.sessions.backend.ProcessEmbedder", lambda *_args, **_kwargs: model)
    searched = []
    find = MemoryService.find

    async def recorded(self, query, **kwargs):
        searched.append(query)
        return await find(self, query, **kwargs)

    monkeypatch.setattr(MemoryService, "find", recorded)
    app = build_app(settings, SessionOptions(memory=url, scope="tui"), None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        for key in "origin whitespace":  # as fast as a terminal hands them over
            app.post_message(Key("space" if key == " " else key, key))
            for _ in range(turns):
                await asyncio.sleep(0)
        await pilot.pause(0.5)
        model.allowed.set()
        await wait_for(pilot, lambda: searched and not searching(app))
        value = browser.query_one("#search", Input).value
    assert value == "origin whitespace" and searched[-1] == "origin whitespace"


async def test_browser_typing_words_in_the_table_only_searches(settings, url):
    """Once `d` then the `y` of "deploy" deleted a record: every printable key types."""
    await seed(url, FIXES)
    await make_stale(url)
    before = await stored_records(url)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        browser = await _browser(pilot, app)
        assert browser.stale  # so a `c` that cleared the mark would show
        search = browser.query_one("#search", Input)
        for word in ("deploy", "cache", "error", "quit", "session", "new memory help?"):
            search.value = ""
            browser.query_one(DataTable).focus()
            await pilot.press(*word)
            await wait_for(pilot, lambda word=word: browser.query_text == word)
            assert search.value == word and app.screen is browser and app.is_running
        assert app.sessions.agent is None  # `n` started no session
    assert await stored_records(url) == before  # none deleted, no stale mark cleared


async def make_stale(url: str) -> None:
    """Three sessions that received every record ended red: each is possibly stale."""
    store = open_store(url)
    try:
        for number in range(3):
            service = MemoryService(store, HashEmbedder(), session_id=f"red-{number}", scope="tui")
            await service.search_codebase_memory("KeyError: 'port'")
            await service.end_session(False)
    finally:
        await store.close()


async def test_a_new_search_highlights_its_first_match(settings, url):
    await seed(url, FIXES)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        browser = await _browser(pilot, app)
        table = browser.query_one(DataTable)
        table.move_cursor(row=1)
        await pilot.press(*"port")
        await wait_for(pilot, lambda: browser.query_text == "port" and browser.loaded == 2)
        await pilot.pause()
        first = str(table.get_row_at(0)[0])
        selected = browser.selected().short_id
        why = str(browser.query_one("#why").render())
        title = str(browser.query_one("#browser-title").render())
    assert table.cursor_row == 0 and selected == first
    assert why.startswith("why: ") and title.endswith("2 matches for 'port'")


async def test_the_why_line_takes_the_browsers_width(settings, url):
    words = "origins comma whitespace separated allowlist normalisation settings loader trims"
    await seed(url, [(f"AssertionError: {words}", "AssertionError", words)])
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        browser = await _browser_of(pilot, app, 1)
        search = browser.query_one("#search", Input)
        search.value = words
        await wait_for(pilot, lambda: browser.query_text == words and browser.loaded == 1)
        await pilot.pause()
        why = str(browser.query_one("#why").render())
        title = str(browser.query_one("#browser-title").render())
    assert COMPACT_WIDTH < len(why) < SIZE[0] - 1, why  # was cut at the matches pane's 68
    assert "1 match for" in title


async def test_browser_detail_reads_from_the_top_after_a_delete(settings, url):
    await seed(url, FIXES)
    app = idle_app(settings, url)
    async with app.run_test(size=(120, 24)) as pilot:
        browser = await _browser(pilot, app)
        detail = browser.query_one("#detail-scroll")
        detail.scroll_end(animate=False)
        await pilot.pause()
        assert detail.scroll_y > 0
        await pilot.press("delete")
        await wait_for_screen(pilot, ConfirmModal)
        await pilot.press("y")
        await wait_for(pilot, lambda: len(browser.records) == 1)
        await pilot.pause()
        assert detail.scroll_y == 0


async def test_browser_export_asks_where_and_names_the_file_whole(settings, url, tmp_path):
    await seed(url, FIXES)
    app = idle_app(settings, url)
    target = tmp_path / "chosen" / "my-memory-export.jsonl"
    target.parent.mkdir()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        browser = await _browser(pilot, app)
        await pilot.press("ctrl+e")
        await wait_for_screen(pilot, ExportModal)
        field = app.screen.query_one(Input)
        assert field.value.startswith(str(settings.data_dir / "exports" / "memory-"))
        field.value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: browser.exported is not None)
        await wait_for(pilot, lambda: app.screen.query(Toast))
        await pilot.pause()
        toast = app.screen.query(Toast).last()
        drawn = [strip.text for strip in toast.render_lines(toast.region.reset_offset)]
    assert len(target.read_text().splitlines()) == 2
    assert any(str(target) in row for row in drawn)  # on one row: not wrapped mid-name


def test_cost_modal_says_no_total_limit():
    quote = CostQuote(
        model="gpt-6-astra",
        input_per_million_usd=10.0,
        cached_input_per_million_usd=1.0,
        output_per_million_usd=50.0,
        max_turns=12,
        max_output_tokens=4000,
        first_output_tokens=4000,
        output_sized=False,
        context_tokens=1000,
        uncapped_worst_case_usd=1.2345,
        session_worst_case_usd=1.2345,
        capped_by="not capped",
        session_limit_usd=2.0,
        total_limit_usd=None,
        remaining_total_usd=None,
    )
    assert "budget remaining no total limit" in quote_text(quote)
