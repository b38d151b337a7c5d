"""What the dashboard's tests share: building the app, waiting in Pilot, reading what it
posted and drew, and seeding the store."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import RichLog

from agent import events as ev
from app.dashboard.app import AstraApp, build_app
from app.dashboard.screens.memory_browser import MemoryBrowserScreen
from app.dashboard.screens.messages import SessionEvent, TestOutputBatch
from app.sessions.options import DEMO_PROJECTS, SessionOptions
from memory.errors import EmbedderUnavailableError
from memory.records import Proposal
from memory.service import MemoryService
from memory.stores.pending import PendingQueue, queue_path
from memory.stores.protocol import open_store
from memory.transfer import import_records, parse_import
from tests.fakes import EVIDENCE, PASSING, HashEmbedder
from widgets import MatchesLog

REHEARSAL = DEMO_PROJECTS / "rehearsals" / "scenario_alpha.jsonl"
KEY = "sk-live-test-0123456789abcdefghij"
SIZE = (120, 40)


def idle_app(settings, url) -> AstraApp:
    """The dashboard with no session: it opens on the memory browser of scope `tui`."""
    return build_app(
        settings,
        SessionOptions(memory=url, scope="tui", edits="auto", on_success="branch"),
        None,
        embedder=HashEmbedder(),
    )


def rehearsal_app(settings, url, workspace, **options) -> AstraApp:
    """Edits applied and the branch kept without asking, unless a test says otherwise."""
    options = {"edits": "auto", "on_success": "branch", **options}
    options = SessionOptions(replay=REHEARSAL, memory=url, scope="tui", **options)
    return build_app(settings, options, workspace, embedder=HashEmbedder())


async def wait_for(pilot, condition: Callable[[], object], timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await pilot.pause(0.05)


def listed(browser: MemoryBrowserScreen, query: str) -> bool:
    """The browser has shown what it found for `query` in its scope: no load under way."""
    running = [w for w in browser.app.workers if w.group == "browser" and not w.is_finished]
    return browser.query_text == query and not running and browser.loaded is not None


async def wait_for_screen(pilot, kind: type) -> None:
    """Until a screen of this kind is on top and composed."""
    app = pilot.app
    await wait_for(
        pilot, lambda: isinstance(app.screen, kind) and app.screen.query("Footer, Button")
    )
    await pilot.pause()


def rows(pane: RichLog) -> list[str]:
    """What a pane draws, row by row."""
    return [strip.text.rstrip() for strip in pane.lines]


def drawn(widget: Widget) -> list[str]:
    """What a widget draws, row by row, at its size on the screen."""
    return [strip.text.rstrip() for strip in widget.render_lines(widget.region.reset_offset)]


def on_screen(widget: Widget) -> list[str]:
    """What the screen shows where a widget is, its children and overlays included."""
    region = widget.region
    strips = widget.screen._compositor.render_strips()
    return [
        strips[y].crop(region.x, region.right).text.rstrip()
        for y in range(region.y, min(region.bottom, len(strips)))
    ]


def option_texts(matches: MatchesLog) -> list[str]:
    """The plain text of each entry the matches pane lists."""
    return [
        prompt.plain
        if isinstance(prompt := option.prompt, Content)
        else Content.from_markup(prompt).plain
        for option in matches.options
    ]


def posted_events(messages: list[Message]) -> dict[str, list[ev.Event]]:
    """The session's events the dashboard handled, by kind, in order."""
    by_kind: dict[str, list[ev.Event]] = {}
    for message in messages:
        if isinstance(message, SessionEvent):
            by_kind.setdefault(message.event.event, []).append(message.event)
    return by_kind


def posted_lines(messages: list[Message]) -> list[str]:
    """The test-output lines the dashboard handled, in order."""
    return [e.line for m in messages if isinstance(m, TestOutputBatch) for e in m.events]


async def seed_imported(url: str, lines: list[dict[str, object]]) -> list[str]:
    """Post-mortem records, as `memory import` writes them (not test-confirmed); their ids."""
    records = parse_import(
        [json.dumps(line) for line in lines], default_scope="tui", now=datetime.now(UTC)
    )
    store = open_store(url)
    try:
        await import_records(store, HashEmbedder(), records)
    finally:
        await store.close()
    return [record.memory_id for record in records]


async def stored_records(url: str):
    store = open_store(url)
    try:
        return await store.list_records()
    finally:
        await store.close()


async def seed(url: str, fixes: list[tuple[str, str, str]]) -> list[str]:
    """Store (symptom, error type, fix) records in scope `tui`; returns their ids."""
    store = open_store(url)
    ids = []
    try:
        for symptom, error_type, fix in fixes:
            service = MemoryService(store, HashEmbedder(), session_id=f"seed-{fix}", scope="tui")
            service.confirm_outcome(PASSING, EVIDENCE)
            service.last_query = symptom
            ids.append(await service.store_fix_memory(fix, error_type, ["app/x.py"], PASSING))
    finally:
        await store.close()
    return ids


async def propose(url: str, data_dir, count: int, **fields: str) -> list[Proposal]:
    """`count` fixes proposed over MCP in scope `tui`, queued as `propose_fix` queues them."""
    store = open_store(url)
    queue = PendingQueue(queue_path(url, data_dir))
    service = MemoryService(store, HashEmbedder(), session_id="mcp", scope="tui")
    proposals = []
    try:
        for i in range(count):
            proposal = service.propose(
                **{
                    "client": "claude-code",
                    "symptom": f"E   KeyError: 'k{i}'",
                    "fix_description": "Read the key with a default.",
                    "error_type": "KeyError",
                    "file_paths": ["app/config.py"],
                    "diff": "--- a/app/config.py\n+++ b/app/config.py\n",
                    "test_command": "pytest -q",
                    "test_output": "3 passed",
                    **fields,
                }
            )
            await queue.add(proposal)
            proposals.append(proposal)
    finally:
        await queue.close()
        await store.close()
    return proposals


class SlowModel(HashEmbedder):
    """Stands in for the model's child process: `load` waits until the test allows it
    (at once if `ready`), then fails with `failure` if given."""

    def __init__(self, failure: str | None = None, *, ready: bool = False) -> None:
        super().__init__()
        self.allowed = threading.Event()
        self.failure = failure
        if ready:
            self.allowed.set()

    def load(self) -> None:
        self.allowed.wait(30)
        if self.failure:
            raise EmbedderUnavailableError(self.failure)

    def close(self) -> None:
        self.allowed.set()


class Loaded:
    """Stands in for the model's child process with a model already loaded in this one."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self.model_name, self.dimension = embedder.model_name, embedder.dimension
        self.embed, self.embed_many = embedder.embed, embedder.embed_many
        self.embed_many_sync = embedder.embed_many_sync

    def load(self) -> None:
        self.embedder.load()

    def close(self) -> None:
        """The shared model stays loaded for the tests after this one."""


async def leave_the_browser(pilot) -> None:
    """`esc` from the memory browser, where letters type into the search, to the dashboard."""
    if isinstance(pilot.app.screen, MemoryBrowserScreen):
        await pilot.press("escape")
        await wait_for(pilot, lambda: pilot.app.screen is pilot.app.dashboard)
        await pilot.pause()
