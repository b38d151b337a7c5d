"""The browser's scope picker: the list and the search follow the chosen scope, in both
stores (Pilot, headless)."""

from __future__ import annotations

from textual.widgets import DataTable, Input, Select
from textual.widgets._select import SelectCurrent, SelectOverlay

from app.dashboard.screens.memory_browser import MemoryBrowserScreen
from memory.service import MemoryService
from memory.stores.protocol import open_store
from tests.app.pilot_helpers import (
    SIZE,
    drawn,
    idle_app,
    listed,
    on_screen,
    seed,
    wait_for,
    wait_for_screen,
)
from tests.fakes import EVIDENCE, PASSING, HashEmbedder

TUI = [
    ("KeyError: 'user_id' in the session lookup", "KeyError", "read user_id with .get"),
    ("ValueError: invalid literal for int()", "ValueError", "strip each value"),
]
DEMO = ("ConnectionResetError while uploading the report", "ConnectionResetError")
DEMO_FIX = "retry the upload with a fresh connection"


async def seed_demo(url: str, scope: str = "demo-1") -> str:
    """One record in scope `demo-1`, beside the `tui` ones."""
    store = open_store(url)
    try:
        service = MemoryService(store, HashEmbedder(), session_id="seed-demo", scope=scope)
        service.confirm_outcome(PASSING, EVIDENCE)
        service.last_query = DEMO[0]
        return await service.store_fix_memory(DEMO_FIX, DEMO[1], ["app/up.py"], PASSING)
    finally:
        await store.close()


async def test_the_list_and_the_search_follow_the_chosen_scope(settings, any_url):
    tui = set(await seed(any_url, TUI))
    demo = await seed_demo(any_url)
    app = idle_app(settings, any_url)  # the session's scope: tui
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        picker = browser.query_one("#scope", Select)
        await wait_for(pilot, lambda: set(browser.records) == tui and len(picker._options) == 3)
        assert [value for _, value in picker._options] == ["demo-1", "tui", None]
        assert picker.value == "tui"

        picker.focus()  # the keys an operator presses: open, one down, choose
        await pilot.press("enter", "down", "enter")
        await wait_for(pilot, lambda: set(browser.records) == tui | {demo})
        assert browser.scope is None

        picker.value = "demo-1"
        await wait_for(pilot, lambda: set(browser.records) == {demo})

        browser.query_one("#search", Input).value = "ConnectionResetError uploading"
        await wait_for(pilot, lambda: listed(browser, "ConnectionResetError uploading"))
        assert set(browser.records) == {demo}

        picker.value = "tui"  # the same words in another scope: its records only
        await wait_for(pilot, lambda: demo not in browser.records)
        await wait_for(pilot, lambda: listed(browser, "ConnectionResetError uploading"))
        assert browser.records and set(browser.records) <= tui


async def test_an_empty_session_scope_starts_the_browser_on_every_scope(settings, any_url):
    demo = await seed_demo(any_url)  # as after the README's demo: nothing in the app's scope
    app = idle_app(settings, any_url)  # the session's scope: tui, empty
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        await wait_for(pilot, lambda: set(browser.records) == {demo})
        assert browser.scope is None
        picker = browser.query_one("#scope", Select)
        assert picker.value is None
        await wait_for(pilot, lambda: len(picker._options) == 3)
        assert [value for _, value in picker._options] == ["demo-1", "tui", None]  # tui kept
        notices = [n.message for n in app._notifications]
    assert "scope tui holds no record yet: showing all scopes" in notices


async def test_an_empty_scope_chosen_counts_the_records_elsewhere(settings, any_url):
    """The CLI says where the records are; the browser only said 0 records."""
    demo = await seed_demo(any_url)
    app = idle_app(settings, any_url)  # the session's scope, tui, is empty: all are shown
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        await wait_for(pilot, lambda: set(browser.records) == {demo})
        assert "other scopes" not in title_of(browser)
        await wait_for(pilot, lambda: browser.picker is not None)
        browser.picker.value = "tui"
        await wait_for(pilot, lambda: not browser.records)
        await wait_for(pilot, lambda: "1 record in other scopes" in title_of(browser))
        assert title_of(browser).endswith("choose in the picker")


def title_of(browser: MemoryBrowserScreen) -> str:
    return "".join(drawn(browser.query_one("#browser-title")))


LONG_SCOPE = "demo-20261201-195012-d0ab6d"  # the demo's, as `demo` names it


async def test_a_long_scope_keeps_one_line_in_the_picker_and_its_list(settings, url):
    """It wrapped as `demo-20261201-195012-d` over `0ab6d`, at 120 columns too."""
    await seed(url, TUI)
    await seed_demo(url, LONG_SCOPE)
    for size in ((80, 24), (120, 40)):
        app = idle_app(settings, url)
        async with app.run_test(size=size) as pilot:
            await wait_for_screen(pilot, MemoryBrowserScreen)
            picker = app.screen.query_one("#scope", Select)
            await wait_for(pilot, lambda picker=picker: len(picker._options) == 3)
            picker.value = LONG_SCOPE
            await pilot.pause()
            label = written(on_screen(picker.query_one(SelectCurrent)))
            picker.focus()
            await pilot.press("enter")
            await pilot.pause()
            listed = written(on_screen(picker.query_one(SelectOverlay)))
        shown = "demo-2…195012-d0ab6d"  # its kind, its date's end, its time, its tail
        assert len(label) == 1 and shown in label[0], (size, label)
        assert len(listed) == 3 and shown in listed[0], (size, listed)  # and tui, all scopes


async def test_two_scopes_of_one_prefix_stay_apart_at_80_columns(settings, url):
    """Both demo runs' records read `demo-20…` in the scope column."""
    scopes = ("demo-20261203-124050-0b0ef7", "demo-20261203-124050-1c1ef8")  # `demo` names
    ids = [await seed_demo(url, scope) for scope in scopes]
    app = idle_app(settings, url)  # scope tui is empty: every scope is listed
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        picker = browser.query_one("#scope", Select)
        await wait_for(pilot, lambda: set(browser.records) == set(ids) and picker._options)
        table = browser.query_one(DataTable)
        cells = [table.get_cell(memory_id, "scope").plain for memory_id in ids]
        rows = " ".join(drawn(table))
        picker.focus()
        await pilot.press("enter")
        await pilot.pause()
        listed = written(on_screen(picker.query_one(SelectOverlay)))
    assert cells == ["de…b0ef7", "de…c1ef8"] and all(cell in rows for cell in cells), cells
    assert "…124050-0b0ef7" in listed[0] and "…124050-1c1ef8" in listed[1], listed


def written(lines: list[str]) -> list[str]:
    """The lines with words on them, not the borders."""
    return [line for line in lines if any(c.isalnum() for c in line)]
