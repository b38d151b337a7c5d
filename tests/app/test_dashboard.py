"""The dashboard driven by Pilot: rehearsed sessions, the operator's modals, the browser.

Sessions replay demo_projects' alpha rehearsal on a copy of its project, with the hash
embedder in place of the real model; live cost runs against the loopback Responses API.
Assertions read the Messages the dashboard handled, the store, and what the panes draw.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from dataclasses import replace

import pytest
from rich.console import Console
from textual.message import Message
from textual.widgets import DataTable, Footer, Input, Label, Switch

from agent.loop import AstraAgent
from app.dashboard.app import AstraApp, build_app
from app.dashboard.screens.confirm_modal import ConfirmModal
from app.dashboard.screens.cost_modal import CostModal
from app.dashboard.screens.edit_modal import EditModal
from app.dashboard.screens.export_modal import ExportModal
from app.dashboard.screens.finish_modal import FinishModal
from app.dashboard.screens.memory_browser import MemoryBrowserScreen
from app.dashboard.screens.new_session_modal import NewSessionModal
from app.dashboard.screens.record_modal import RecordModal
from app.dashboard.screens.store_modal import StoreModal
from app.sessions.options import SessionOptions
from app.sessions.queue import SessionPlan
from memory.service import MemoryService
from memory.stores.protocol import open_store
from tests.agent.responses_server import ResponsesServer, response_body
from tests.app.pilot_helpers import (
    REHEARSAL,
    SIZE,
    SlowModel,
    idle_app,
    leave_the_browser,
    listed,
    on_screen,
    option_texts,
    posted_events,
    posted_lines,
    rehearsal_app,
    rows,
    seed,
    stored_records,
    wait_for,
    wait_for_screen,
)
from tests.fakes import HashEmbedder
from widgets import BudgetPanel, MatchesLog, RecordView, SessionHeader, TestOutputLog, TurnsLog


async def test_rehearsed_session_fills_the_panes_and_stores_on_confirm(settings, url, alpha):
    """Asked as the dashboard asks by default: the edit, the store, then the changes."""
    before = (alpha / "app" / "service.py").read_text()
    app = rehearsal_app(settings, url, alpha, edits=None, on_success=None)
    messages: list[Message] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await wait_for_screen(pilot, EditModal)
        assert (alpha / "app" / "service.py").read_text() == before
        await pilot.press("y")
        await wait_for_screen(pilot, StoreModal)
        shown = app.screen.query_one(RecordView).record
        assert shown is not None and shown.file_paths
        await pilot.click("#store")
        await wait_for_screen(pilot, FinishModal)
        assert (alpha / "app" / "service.py").read_text() == before  # untouched until apply
        await pilot.press("a")
        await wait_for(pilot, lambda: app.sessions.finished)
        await pilot.pause()
        report = app.sessions.finished[0].report
        turns = rows(app.dashboard.query_one(TurnsLog))
        matches = option_texts(app.dashboard.query_one(MatchesLog))
        tests = rows(app.dashboard.query_one(TestOutputLog))
        budget = str(app.dashboard.query_one(BudgetPanel).render())
    assert report.status == "completed" and report.exit_code == 0
    assert len(report.stored_memory_ids) == 1
    posted = posted_events(messages)
    assert "run_tests" in [call.name for call in posted["model_responded"][0].function_calls]
    assert any(row.startswith("turn 1 ") and "run_tests" in row for row in turns)
    assert [e.query for e in posted["memory_matched"]] and any(
        re.match(r"turn \d+ query", text) for text in matches
    )
    assert posted_lines(messages) and any("PASSED: 4 passed" in row for row in tests)
    assert f"turns          {report.model_requests} of 12" in budget
    assert [r.memory_id for r in await stored_records(url)] == report.stored_memory_ids
    assert (report.edits_approved, report.edits_rejected) == (1, 0)
    assert (alpha / "app" / "service.py").read_text() != before  # applied


async def test_selecting_a_match_opens_its_whole_record(settings, url, alpha):
    failure = "AssertionError: assert None == 'https://b.example'"  # one of alpha's
    [memory_id] = await seed(url, [(failure, "AssertionError", "strip each")])
    app = rehearsal_app(settings, url, alpha, store="yes")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.sessions.finished)
        matches = app.dashboard.query_one(MatchesLog)
        matches.focus()
        matches.highlighted = 2  # 0 is the session separator, 1 the search's query
        await pilot.press("enter")
        await wait_for_screen(pilot, RecordModal)
        shown = app.screen.query_one(RecordView).record
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard)
        match = option_texts(matches)[2]
    assert shown is not None and shown.memory_id == memory_id
    *_, why = match.splitlines()  # the third line: why it ranked, from the event
    assert why.strip().startswith("why: vector #1 · keyword #1 · signature none value returned")
    assert shown.fix_description == "strip each"


@pytest.mark.parametrize("first", ["session", "idle"])
async def test_the_browser_and_history_are_styled_however_the_dashboard_opened(
    settings, url, alpha, first
):
    """Their rules are read when they first open, unless the browser is the first screen:
    either way the scope picker keeps its width and the history its detail's height."""
    if first == "session":
        app = rehearsal_app(settings, url, alpha, store="yes")
    else:
        app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        if first == "session":
            await wait_for(pilot, lambda: app.sessions.finished)
        else:
            await wait_for_screen(pilot, MemoryBrowserScreen)
            await leave_the_browser(pilot)
        await pilot.press("m")
        await wait_for_screen(pilot, MemoryBrowserScreen)
        scope_width = app.screen.query_one("#scope").outer_size.width
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard)
        await pilot.press("h")
        await wait_for(pilot, lambda: app.screen.query("#history-detail-scroll"))
        await pilot.pause()
        detail_height = app.screen.query_one("#history-detail-scroll").outer_size.height
    assert (scope_width, detail_height) == (28, 10)


async def test_a_session_started_from_the_dashboard_runs_and_asks_before_storing(
    settings, url, alpha
):
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        await leave_the_browser(pilot)
        await pilot.press("n")
        await wait_for_screen(pilot, NewSessionModal)
        modal = app.screen
        await pilot.click("#start")
        await pilot.pause()
        empty = str(modal.query_one("#problem").render())
        modal.query_one("#workspace", Input).value = str(alpha)
        modal.query_one("#replay", Input).value = str(alpha / "missing.jsonl")
        modal.query_one("#replay", Input).focus()
        await pilot.press("enter")  # a button ignores a second press while it flashes
        await pilot.pause()
        missing = str(modal.query_one("#problem").render())
        modal.query_one("#replay", Input).value = str(REHEARSAL)
        await pilot.press("enter")
        await wait_for_screen(pilot, StoreModal)
        await pilot.click("#store")
        await wait_for(pilot, lambda: app.sessions.finished)
        await pilot.pause()
        watching = app.screen
    assert "give the workspace" in empty and "is not a file" in missing
    assert watching is app.dashboard
    [done] = app.sessions.finished
    assert done.plan.workspace == alpha and done.report.exit_code == 0
    assert [r.memory_id for r in await stored_records(url)] == done.report.stored_memory_ids


async def fill_new_session(pilot, workspace: str, replay: str = "", live: bool = False):
    """Open the new-session modal with n, fill it, press enter; returns the modal."""
    await leave_the_browser(pilot)
    await pilot.press("n")
    await wait_for_screen(pilot, NewSessionModal)
    modal = pilot.app.screen
    modal.query_one("#workspace", Input).value = workspace
    modal.query_one("#replay", Input).value = replay
    modal.query_one("#live", Switch).value = live
    modal.query_one("#replay", Input).focus()
    await pilot.press("enter")
    return modal


async def test_a_live_session_from_the_dashboard_asks_for_its_cost_even_after_a_flag(
    settings, url, alpha
):
    with ResponsesServer() as server:
        options = SessionOptions(
            memory=url,
            scope="tui",
            base_url=server.base_url,
            approve_live_cost=True,
            edits="auto",
            on_success="branch",
        )
        app = build_app(settings, options, None, embedder=HashEmbedder())
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_screen(pilot, MemoryBrowserScreen)
            await fill_new_session(pilot, str(alpha), live=True)
            await wait_for_screen(pilot, CostModal)
            await pilot.click("#cancel")
            await wait_for(pilot, lambda: app.sessions.finished)
        assert server.requests == []
    assert app.sessions.finished[0].report.status == "declined"


async def test_the_new_session_modal_stays_open_with_the_reason(settings, url, alpha):
    no_key = replace(settings, openai_api_key=None)
    app = build_app(no_key, SessionOptions(memory=url), None, embedder=HashEmbedder())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        modal = await fill_new_session(pilot, "~nosuchuser/project", str(REHEARSAL))
        await wait_for(pilot, lambda: "checking" not in str(modal.query_one("#problem").render()))
        unknown_home = str(modal.query_one("#problem").render())
        modal.query_one("#workspace", Input).value = str(alpha)
        modal.query_one("#live", Switch).value = True
        await pilot.press("enter")
        await wait_for(pilot, lambda: "OPENAI_API_KEY" in str(modal.query_one("#problem").render()))
        still_open = app.screen is modal
    assert "~nosuchuser/project is not a directory" in unknown_home
    assert still_open and app.sessions.plans == [] and app.sessions.finished == []


async def test_a_failing_session_does_not_stop_the_next(settings, url, alpha, monkeypatch):
    real_run = AstraAgent.run
    calls = []

    async def fails_once(self, prompt):
        calls.append(prompt)
        if len(calls) == 1:
            raise RuntimeError("an agent bug")
        return await real_run(self, prompt)

    monkeypatch.setattr(AstraAgent, "run", fails_once)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        await fill_new_session(pilot, str(alpha), str(REHEARSAL))
        await wait_for(pilot, lambda: len(calls) == 1 and not app.sessions.running)
        await fill_new_session(pilot, str(alpha), str(REHEARSAL))
        await wait_for_screen(pilot, StoreModal)
        await pilot.press("n")  # reject: this test is about running, not storing
        await wait_for(pilot, lambda: app.sessions.finished)
    assert len(calls) == 2 and app.sessions.finished[0].report.status == "completed"


async def test_stop_also_cancels_the_queued_sessions(settings, url, alpha, tmp_path):
    beta = tmp_path / "second"
    shutil.copytree(alpha, beta)
    options = SessionOptions(
        replay=REHEARSAL, memory=url, scope="tui", store="ask", edits="auto", on_success="branch"
    )
    plans = [SessionPlan(options, alpha, "first"), SessionPlan(options, beta, "second")]
    app = build_app(settings, options, None, embedder=HashEmbedder(), plans=plans)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, StoreModal)  # the first session waits on the operator
        titles = {command.title for command in app.get_system_commands(app.dashboard)}
        assert "Stop session" in titles and "New session" not in titles  # one at a time
        app.action_stop_session()
        queued_after_stop = app.sessions.queue.qsize()
        await pilot.press("n")  # reject the store; the session then stops
        await wait_for(pilot, lambda: app.sessions.finished and not app.sessions.running)
        await pilot.pause(0.2)
    assert queued_after_stop == 0
    assert [done.plan.session_id for done in app.sessions.finished] == ["first"]


async def test_reject_store_writes_nothing(settings, url, alpha):
    app = rehearsal_app(settings, url, alpha)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, StoreModal)
        await pilot.click("#reject")
        await wait_for(pilot, lambda: app.sessions.finished)
    assert app.sessions.finished[0].report.stored_memory_ids == []
    assert await stored_records(url) == []


async def test_the_store_modal_footer_shows_n_reject_and_n_rejects(settings, url, alpha):
    """The footer said `esc Reject` while the README says `n` rejects."""
    app = rehearsal_app(settings, url, alpha)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_screen(pilot, StoreModal)
        footer = " ".join(on_screen(app.screen.query_one(Footer)))
        await pilot.press("n")
        await wait_for(pilot, lambda: app.sessions.finished)
    assert "y Store" in footer and "n Reject" in footer and "esc" not in footer
    assert app.sessions.finished[0].report.stored_memory_ids == []
    assert await stored_records(url) == []


async def test_stop_is_in_the_footer_only_while_a_session_runs(settings, url, alpha):
    """Idle, the footer offered `s Stop`, which did nothing."""
    first = json.loads(REHEARSAL.read_text().splitlines()[0])["output"]
    with ResponsesServer() as server:
        server.enqueue(response_body(first, response_id="resp_1"), delay_s=1.0)
        app = live_app(settings, url, alpha, server)
        async with app.run_test(size=SIZE) as pilot:
            footer = app.dashboard.query_one(Footer)
            await wait_for_screen(pilot, CostModal)
            await pilot.click("#approve")
            await wait_for(pilot, lambda: server.requests)
            await pilot.pause()
            running = " ".join(on_screen(footer))
            await pilot.press("s")
            await wait_for(pilot, lambda: app.sessions.finished)
            await pilot.pause()
            ended = " ".join(on_screen(footer))
    idle = await idle_footer(settings, url)
    assert "s Stop" in running
    assert "s Stop" not in ended and "n New session" in ended
    assert "Stop" not in idle and "n New session" in idle


async def idle_footer(settings, url) -> str:
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        await leave_the_browser(pilot)
        await wait_for(pilot, lambda: app.sessions.status.startswith("idle"))
        await pilot.pause()
        return " ".join(on_screen(app.dashboard.query_one(Footer)))


def live_app(settings, url, workspace, server) -> AstraApp:
    options = SessionOptions(
        live=True,
        base_url=server.base_url,
        memory=url,
        scope="tui",
        store="yes",
        max_turns=3,
        edits="auto",
        on_success="branch",
    )
    return build_app(settings, options, workspace, embedder=HashEmbedder())


async def test_cancel_live_cost_sends_no_request(settings, url, alpha):
    with ResponsesServer() as server:
        app = live_app(settings, url, alpha, server)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_screen(pilot, CostModal)
            await pilot.click("#cancel")
            await wait_for(pilot, lambda: app.sessions.finished)
        assert server.requests == []
    report = app.sessions.finished[0].report
    assert report.status == "declined" and report.model_requests == 0


async def test_approve_live_cost_sends_the_requests(settings, url, alpha):
    turns = [json.loads(line) for line in REHEARSAL.read_text().splitlines()]
    with ResponsesServer() as server:
        for turn in turns[:2]:
            server.enqueue_response(turn["output"])
        server.enqueue_response(
            [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "done"}],
                }
            ]
        )
        app = live_app(settings, url, alpha, server)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_screen(pilot, CostModal)
            assert "worst case" in str(app.screen.query_one("#quote").render())
            await pilot.click("#approve")
            await wait_for(pilot, lambda: app.sessions.finished)
            budget = str(app.dashboard.query_one(BudgetPanel).render())
        assert len(server.requests) == 3
    report = app.sessions.finished[0].report
    assert report.model_requests == 3 and report.cost_usd > 0
    assert "turns          3 of 3" in budget


async def test_browser_deletes_a_record_after_confirmation(settings, any_url):
    [memory_id] = await seed(
        any_url, [("KeyError: 'port'", "KeyError", "read port with a default")]
    )
    app = idle_app(settings, any_url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        await wait_for(pilot, lambda: browser.records)
        assert browser.query_one(RecordView).record.memory_id == memory_id
        await pilot.press("delete")
        await wait_for_screen(pilot, ConfirmModal)
        await pilot.click("#yes")
        await wait_for(pilot, lambda: not browser.records)
        await pilot.press("escape")
        assert app.screen is app.dashboard
    assert await stored_records(any_url) == []


async def test_browser_shows_each_records_session_and_delivery_audit(settings, url):
    [memory_id] = await seed(url, [("KeyError: 'port'", "KeyError", "port default")])
    store = open_store(url)
    try:
        for session_id, green in [("later-1", True), ("later-2", False)]:
            service = MemoryService(store, HashEmbedder(), session_id=session_id, scope="tui")
            await service.search_codebase_memory("KeyError: 'port'")
            await service.end_session(green)
    finally:
        await store.close()
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        await wait_for(pilot, lambda: app.screen.records)
        table = app.screen.query_one(DataTable)
        names = [column.label.plain for column in table.columns.values()]
        row = dict(zip(names, table.get_row(memory_id), strict=True))
        shown = app.screen.query_one(RecordView).record
    assert "session" not in names and shown.session_id == "seed-port default"  # in the detail
    assert (row["sent"], row["green"]) == ("2", "1/2")  # delivered twice, one session green


def detail_text(browser) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(browser.query_one(RecordView).content)
    return console.export_text()


async def test_browser_marks_a_possibly_stale_record_and_ctrl_u_clears_it(settings, url):
    [memory_id] = await seed(url, [("KeyError: 'port'", "KeyError", "port default")])
    store = open_store(url)
    try:
        for number in range(3):
            service = MemoryService(store, HashEmbedder(), session_id=f"red-{number}", scope="tui")
            await service.search_codebase_memory("KeyError: 'port'")
            await service.end_session(False)
    finally:
        await store.close()
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        await wait_for(pilot, lambda: browser.records)
        table = browser.query_one(DataTable)
        fix = table.get_row(memory_id)[[c.label.plain for c in table.columns.values()].index("fix")]
        assert str(fix).startswith("⚠ stale · port default")  # a Text cell: data, not markup
        assert "POSSIBLY STALE" in detail_text(browser)
        await pilot.press("ctrl+u")
        await wait_for(pilot, lambda: not browser.stale)
        assert "POSSIBLY STALE" not in detail_text(browser)
    [record] = await stored_records(url)
    assert record.stale_cleared_red == 3


async def test_browser_exports_every_record(settings, any_url):
    ids = await seed(any_url, [("KeyError: 'port'", "KeyError", "read port with a default")])
    app = idle_app(settings, any_url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        await wait_for(pilot, lambda: browser.records)
        await pilot.press("ctrl+e")
        await wait_for_screen(pilot, ExportModal)
        await pilot.press("enter")  # the default: a new file in <data>/exports/
        await wait_for(pilot, lambda: browser.exported is not None)
        assert browser.exported.parent == settings.data_dir / "exports"
        exported = [json.loads(line) for line in browser.exported.read_text().splitlines()]
    assert [row["memory_id"] for row in exported] == ids
    assert browser.exported.stat().st_mode & 0o777 == 0o600  # as `memory export --out`


TWO_FIXES = [  # (symptom, error type, fix)
    ("KeyError: 'port' in config loader", "KeyError", "read port with a default"),
    ("AssertionError: origins list split wrong", "AssertionError", "strip origins"),
]


async def test_browser_searches_by_meaning_as_you_type(settings, any_url):
    ids = await seed(any_url, TWO_FIXES)
    app = idle_app(settings, any_url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        await wait_for(pilot, lambda: len(browser.records) == 2)
        browser.query_one(DataTable).focus()  # from the table, `/` goes to the search
        await pilot.press("slash", *"origins split")
        await wait_for(pilot, lambda: listed(browser, "origins split"))
        first = browser.selected()
        score = browser.query_one(DataTable).get_row_at(0)[1]
        why = browser.query_one("#why", Label)
        searched_why = (why.display, str(why.render()))
        browser.query_one("#search", Input).value = ""  # no query: the list, no why line
        title = browser.query_one("#browser-title", Label)
        await wait_for(pilot, lambda: str(title.render()).endswith("· 2 records"))
        listed_why = (why.display, str(why.render()))
    assert first is not None and first.memory_id == ids[1]
    assert searched_why[0] and searched_why[1].startswith("why: vector #")
    assert "terms origins, split" in searched_why[1]  # the words it shares with the query
    assert listed_why == (False, "")
    label, cosine = score.split()
    assert label in ("strong", "possible", "weak")  # the label beside the cosine
    assert len(cosine) == 6 and float(cosine) > 0  # four decimals


async def test_browser_title_says_when_the_list_shows_only_the_newest(
    settings, any_url, monkeypatch
):
    monkeypatch.setattr("app.dashboard.screens.memory_browser.LIST_LIMIT", 1)
    await seed(any_url, TWO_FIXES)
    app = idle_app(settings, any_url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        await wait_for(pilot, lambda: len(browser.records) == 1)
        title = str(browser.query_one("#browser-title", Label).render())
    assert title.endswith("· newest 1 of 2 records")  # not "1 record": the store holds two


@pytest.mark.parametrize("failure", [None, "no sentence-transformers model at /nowhere"])
async def test_browser_lists_while_the_model_loads_and_shows_why_it_failed(
    settings, url, monkeypatch, failure
):
    [memory_id] = await seed(url, [("KeyError: 'port'", "KeyError", "port default")])
    model = SlowModel(failure)
    monkeypatch.setattr("app.sessions.backend.ProcessEmbedder", lambda *_args, **_kwargs: model)
    app = build_app(settings, SessionOptions(memory=url, scope="tui"), None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        await wait_for(pilot, lambda: browser.records)
        title = str(browser.query_one("#browser-title").render())
        model.allowed.set()
        await wait_for(pilot, lambda: app.sessions.ready.is_set())
        await pilot.pause()
        after = str(browser.query_one("#browser-title").render())
    assert list(browser.records) == [memory_id]
    assert "1 record · search waits for the embedding model" in title
    if failure:
        assert after.endswith(f"1 record · search unavailable: {failure}")
        assert app.sessions.startup_error == failure
    else:
        assert after.endswith("· 1 record") and app.sessions.startup_error is None


async def test_stop_ends_the_session_at_the_next_safe_point(settings, url, alpha):
    first = json.loads(REHEARSAL.read_text().splitlines()[0])["output"]
    with ResponsesServer() as server:
        server.enqueue(response_body(first, response_id="resp_1"), delay_s=1.0)
        app = live_app(settings, url, alpha, server)
        messages: list[Message] = []
        async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
            await wait_for_screen(pilot, CostModal)
            await pilot.click("#approve")
            await wait_for(pilot, lambda: server.requests)
            await pilot.press("s")  # while the model's first answer is on its way
            await wait_for(pilot, lambda: app.sessions.finished)
            drawn = rows(app.dashboard.query_one(TestOutputLog))
        assert len(server.requests) == 1
    report = app.sessions.finished[0].report
    assert report.status == "stopped" and report.exit_code == 3
    assert report.tool_calls == 0 and posted_lines(messages) == [] and drawn == []


async def test_the_idle_dashboard_s_header_names_the_store(settings, url):
    """Idle, the header said `memory -` while the browser listed that store's records."""
    app = build_app(settings, SessionOptions(memory=url, scope="tui"), None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        await leave_the_browser(pilot)
        header = app.dashboard.query_one(SessionHeader)
        assert header.memory_url == url and f"memory {url}" in str(header.render())
