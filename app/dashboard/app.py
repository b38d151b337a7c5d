"""The dashboard app: wires the screens and owns the session state (a `SessionQueue`).

`build_app` is the one factory the CLI and the tests share. This module imports only
Textual, the memory browser and the session queue, so the first frame comes quickly (the
session's screen and modals load when first used); the queue then opens the non-UI half
(agent, memory, HTTP) in a thread. The sessions run in a worker on the app's loop, so the
agent's `emit` hands its events straight to the dashboard (`DashboardScreen.forward`),
which posts them to itself as messages.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from app.config.file import set_value
from app.config.settings import Settings
from app.dashboard.screens.browsing import BrowsingScreen
from app.errors import CommandError
from app.sessions.options import DEFAULT_PROMPT, SessionOptions, new_session_id
from app.sessions.queue import SessionPlan, SessionQueue

if TYPE_CHECKING:
    from agent import events as ev
    from app.dashboard.screens.dashboard import DashboardScreen
    from app.dashboard.screens.new_session_modal import NewSession
    from app.dashboard.supervisor import DashboardSupervisor
    from app.sessions.history import SessionEntry
    from memory.embedding.embedder import Embedder
    from widgets.matches_log import MatchesLog


BROWSER_CSS = "screens/memory_browser.tcss"
DASHBOARD_CSS = "screens/dashboard.tcss"


class AstraApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "astra-memory"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "new_session", "New session", id="app.new"),
        Binding("m", "browse_memory", "Memory", id="app.memory"),
        Binding("s", "stop_session", "Stop", id="app.stop"),
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("h", "history", "History", id="app.history", show=False),
    ]

    def __init__(
        self,
        settings: Settings,
        plans: Sequence[SessionPlan],
        *,
        options: SessionOptions,
        embedder: Embedder | None = None,
        browse: bool = False,
    ) -> None:
        # the first screen's rules come with the first frame's, the other's when it first
        # opens (its CSS_PATH): each first frame styles its widgets once, with no more rules
        super().__init__(css_path=[self.CSS_PATH, BROWSER_CSS if browse else DASHBOARD_CSS])
        self.sessions = SessionQueue(settings, options, plans, self, embedder)
        self.browse_first = browse
        self.quitting = False
        self.config_path: Path | None = None

    @cached_property
    def dashboard(self) -> DashboardScreen:
        """The session's screen, made on first use: the idle browser's first frame needs
        none of its panes."""
        from app.dashboard.screens.dashboard import DashboardScreen

        return DashboardScreen(self.sessions.memory_url, self.size.width)

    def get_default_screen(self) -> Screen:
        """The first screen itself, the browser (idle) or the session's dashboard: pushed
        over an empty one, it cost its first frame about 4 ms. Left, the idle browser stays
        under the dashboard (`leave_browser`)."""
        return self.memory_browser() if self.browse_first else self.dashboard

    def on_mount(self) -> None:
        self.call_after_refresh(self.run_sessions)  # its imports would slow the first frame
        if self.config_path is not None:
            self.theme_changed_signal.subscribe(self, self._save_theme)

    def leave_browser(self, browser: Screen) -> None:
        """Back from a browser: to the screen under it, or over the idle app's first one to
        the dashboard."""
        if browser is self.screen_stack[0]:
            self.push_screen(self.dashboard)
        else:
            browser.dismiss()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand(
            "Memory browser", "Browse, search and delete memory records", self.action_browse_memory
        )
        if not self.sessions.running:  # one at a time, as `check_action` says
            yield SystemCommand(
                "New session",
                "Start a session on a workspace: rehearsed, or live",
                self.action_new_session,
            )
        yield SystemCommand(
            "Session history",
            "Past sessions, memory's effect, and a replay of any transcript",
            self.action_history,
        )
        if self.sessions.agent is not None:
            yield SystemCommand(
                "Stop session",
                "Stop the running session now (a model request in flight is cut off)",
                self.action_stop_session,
            )

    # -- the session queue's view --------------------------------------------------------

    @work(exclusive=True, group="session", exit_on_error=False, description="session")
    async def run_sessions(self) -> None:
        await self.sessions.run()

    def show_status(self, status: str) -> None:
        """Say what the app is doing: in the dashboard's header and the browser's title."""
        self.dashboard.set_status(status)
        for screen in self.screen_stack:
            if isinstance(screen, BrowsingScreen):
                screen.show_status()

    def forward_event(self, event: ev.Event) -> None:
        """The agent's event callback; it runs on the app's loop, as the agent does."""
        self.dashboard.forward(event)

    def supervisor(self, options: SessionOptions) -> DashboardSupervisor:
        from app.dashboard.supervisor import DashboardSupervisor  # a session's, not idle's

        return DashboardSupervisor(
            self, approve_live_cost=options.approve_live_cost, store=options.store
        )

    async def choose_finish(self, source: str, branch: str) -> str:
        return await self.supervisor(self.sessions.options).choose_finish(source, branch)

    def sessions_changed(self) -> None:
        self.refresh_bindings()

    def on_matches_log_record_requested(self, message: MatchesLog.RecordRequested) -> None:
        self.show_record(message.memory_id)

    @work(group="record", exit_on_error=False, description="open record")
    async def show_record(self, memory_id: str) -> None:
        backend = await self.sessions.when_ready()
        if backend is None:
            return  # the store did not open; the header says why
        record = await backend.store.get(memory_id)
        if record is None:
            self.notify(f"record {memory_id[:8]} is no longer in memory", severity="warning")
            return
        from app.dashboard.screens.record_modal import RecordModal  # not the first frame's

        self.push_screen(RecordModal(record))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            if event.worker.group == "session":
                self.sessions.exit_code = self.sessions.exit_code or 1
            self.sessions.set_status(f"error: {error}")
            self.notify(str(error), title=f"{event.worker.description} failed", severity="error")

    # -- actions -----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Stop hides while no session runs (it would do nothing). New session hides while
        one runs or waits (one at a time), and Memory inside the memory browser and its
        review of proposals."""
        if action == "browse_memory" and isinstance(self.screen, BrowsingScreen):
            return False
        if action == "new_session" and self.sessions.running:
            return False
        return not (action == "stop_session" and self.sessions.agent is None)

    def action_new_session(self) -> None:
        if self.sessions.startup_error is not None:
            self.notify(f"no sessions: {self.sessions.startup_error}", severity="error")
            return
        if self.sessions.running:
            self.notify("a session is running or queued; s stops it")
            return

        def start(choice: NewSession | None) -> None:
            if choice is None:
                return
            from app.dashboard.screens.memory_browser import MemoryBrowserScreen

            # the dashboard first: the session's own modals must land on top of it
            if isinstance(self.screen, MemoryBrowserScreen):
                self.leave_browser(self.screen)
            if self.dashboard not in self.screen_stack:
                self.push_screen(self.dashboard)
            self.sessions.add(
                SessionPlan(self.options_for(choice), choice.workspace, new_session_id())
            )

        from app.dashboard.screens.new_session_modal import NewSessionModal

        self.push_screen(NewSessionModal(self.new_session_problem), callback=start)

    def options_for(self, choice: NewSession) -> SessionOptions:
        """A session started here: the command line's model, endpoint, memory, scope and
        limits; the default prompt; the cost approved in the modal; each store confirmed."""
        return replace(
            self.sessions.options,
            prompt=DEFAULT_PROMPT,
            replay=choice.replay,
            live=choice.live,
            approve_live_cost=False,
            store="ask",
        )

    async def new_session_problem(self, choice: NewSession) -> str | None:
        """What would stop this session from starting (no key, no price, a bad script)."""
        return await self.sessions.problem(self.options_for(choice))

    def action_browse_memory(self) -> None:
        if not isinstance(self.screen, BrowsingScreen):
            self.push_screen(self.memory_browser())

    def memory_browser(self) -> BrowsingScreen:
        """A new memory browser; its module loads on first use, as the dashboard's does."""
        from app.dashboard.screens.memory_browser import MemoryBrowserScreen

        return MemoryBrowserScreen(self.sessions)

    def action_history(self) -> None:
        from app.dashboard.screens.history_screen import HistoryScreen  # not the first frame's

        if not isinstance(self.screen, HistoryScreen):
            self.push_screen(HistoryScreen(self.sessions.data_dir), callback=self.replay)

    def replay(self, entry: SessionEntry | None) -> None:
        """A recorded transcript played again in the dashboard: offline, free, no store."""
        if entry is None or entry.transcript is None or entry.workspace is None:
            return
        if self.sessions.running:
            self.notify("a session is running or queued; s stops it")
            return
        if self.dashboard not in self.screen_stack:
            self.push_screen(self.dashboard)
        options = replace(
            self.sessions.options,
            replay=Path(entry.transcript),
            live=False,
            approve_live_cost=False,
            store="no",
        )
        self.sessions.add(SessionPlan(options, Path(entry.workspace), new_session_id("replay")))

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """A screenshot (the palette's), saved in the data dir's screenshots folder: Textual's
        default, the user's Downloads folder, is missing on many servers, and it failed there."""
        folder = Path(path) if path else self.sessions.settings.data_dir / "screenshots"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.notify(
                f"cannot save a screenshot in {folder}: {exc.strerror or exc}", severity="error"
            )
            return None
        return super().deliver_screenshot(filename, str(folder), time_format)

    def action_stop_session(self) -> None:
        """Stop now: a model request in flight is cut off (and charged its worst case)."""
        from app.dashboard.supervisor import answer_open_question  # loaded: a session runs

        said = self.sessions.stop(cancel_request=True)
        answered = answer_open_question(self)
        self.notify(f"{said}; {answered}" if answered else said)

    async def action_quit(self) -> None:
        """Quit; mid-session, ask first, then stop it at its next safe point, show the
        summary, and quit once that is closed."""
        if self.sessions.agent is None:
            self.exit(self.sessions.exit_code)
            return
        if self.quitting:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                from app.dashboard.supervisor import answer_open_question

                self.quitting = True
                self.sessions.stop()
                if answer := answer_open_question(self):
                    self.notify(answer)
                self.quit_after_session()

        from app.dashboard.screens.confirm_modal import ConfirmModal  # not the first frame's

        self.push_screen(
            ConfirmModal(
                "Quit while a session runs?",
                "The session stops at its next safe point (no request is cut off, the "
                "workspace keeps its edits so far, an open question is answered no); then "
                "its summary shows, then the app quits.",
                yes="Stop and quit",
            ),
            callback=answered,
        )

    @work(group="quit", exit_on_error=False, description="quit")
    async def quit_after_session(self) -> None:
        while self.sessions.agent is not None:
            await asyncio.sleep(0.05)
        from app.dashboard.screens.dashboard import report_line
        from app.dashboard.screens.summary_modal import SummaryModal

        lines = [report_line(done.report) for done in self.sessions.finished]
        await self.push_screen_wait(SummaryModal(lines))
        self.exit(self.sessions.exit_code)

    def keep_theme(self, theme: str | None, config_file: Path) -> None:
        """Start in the config file's theme (if Textual has it, else say so); save the one
        chosen."""
        self.config_path = config_file
        if theme in self.available_themes:
            self.theme = theme
        elif theme is not None:
            self.notify(
                f"no theme {theme!r} (from the config file {config_file}); using {self.theme}",
                severity="warning",
                markup=False,  # the file's text, not markup
            )

    def _save_theme(self, theme: object) -> None:
        if self.config_path is not None:
            self.save_theme(self.theme)

    @work(thread=True, exclusive=True, group="config", exit_on_error=False, description="config")
    def save_theme(self, name: str) -> None:
        """In a thread: the UI never waits on the disk."""
        assert self.config_path is not None
        set_value(self.config_path, "theme", name)

    def action_help(self) -> None:
        from app.dashboard.screens.help_screen import HelpScreen  # Markdown: 30 ms of a launch

        if isinstance(self.screen, HelpScreen):
            return
        settings = self.sessions.settings
        self.push_screen(
            HelpScreen(
                [
                    ("memory store", self.sessions.memory_url),
                    ("data (ledger, transcripts, demo workspaces)", str(settings.data_dir)),
                    ("transcripts", str(settings.data_dir / "transcripts")),
                    ("exports", str(settings.data_dir / "exports")),
                    ("screenshots", str(settings.data_dir / "screenshots")),
                    ("config file", str(self.config_path) if self.config_path else "none"),
                ]
            )
        )

    async def on_unmount(self) -> None:
        await self.sessions.close()


def require_terminal(instead: str) -> None:
    """One line and exit 2 where no terminal can show the dashboard (a pipe, a cron or CI
    job): Textual would draw into the pipe and wait for keys that never come."""
    if os.environ.get("TEXTUAL_DRIVER"):  # a browser tab of `serve`: the driver is a pipe
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CommandError(f"the dashboard needs a terminal (stdin and stdout); {instead}", 2)


def build_app(
    settings: Settings,
    options: SessionOptions,
    workspace: Path | None,
    *,
    embedder: Embedder | None = None,
    plans: Sequence[SessionPlan] | None = None,
) -> AstraApp:
    """The dashboard for one session on `workspace`, for `plans`, or idle on memory."""
    if plans is None:
        plans = [] if workspace is None else [SessionPlan(options, workspace, new_session_id())]
    return AstraApp(
        settings,
        plans,
        options=options,
        embedder=embedder,
        browse=workspace is None and not plans,
    )
