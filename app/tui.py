"""The dashboard app: wires the screens and owns the session state.

`build_app` is the one factory the CLI and the tests share. This module imports only
Textual and the screens, so the first frame comes quickly; the session worker then
imports and opens the non-UI half (`SessionHost`: agent, memory, HTTP) in a thread and
waits, in a thread, for the embedding model's child process. The sessions run in that
asyncio worker on the app's loop, so the agent's `emit` hands its events straight to the
dashboard (`DashboardScreen.forward`), which posts them to itself as messages.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from app.errors import CommandError
from app.options import DEFAULT_PROMPT, SessionOptions, new_session_id
from app.screens.dashboard import DashboardScreen
from app.screens.memory_browser import MemoryBrowserScreen
from app.screens.new_session_modal import NewSession, NewSessionModal
from app.screens.record_modal import RecordModal
from app.settings import Settings
from app.supervisor import TextualSupervisor
from widgets import MatchesLog

if TYPE_CHECKING:
    from agent import events as ev
    from agent.loop import AstraAgent
    from agent.workspace import WorkspaceTools
    from app.session_host import SessionHost
    from memory.embedder import Embedder


@dataclass(frozen=True)
class SessionPlan:
    """One session for the dashboard to run: queued at launch, or started with `n`."""

    options: SessionOptions
    workspace: Path
    session_id: str


@dataclass(frozen=True)
class FinishedSession:
    plan: SessionPlan
    report: ev.SessionReport
    tools: WorkspaceTools


class AstraApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "astra-memory"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "new_session", "New session", id="app.new"),
        Binding("m", "browse_memory", "Memory", id="app.memory"),
        Binding("s", "stop_session", "Stop", id="app.stop"),
        Binding("q", "quit", "Quit", id="app.quit"),
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
        super().__init__()
        self.settings = settings
        self.plans = list(plans)
        self.queue: asyncio.Queue[SessionPlan] = asyncio.Queue()
        for plan in plans:
            self.queue.put_nowait(plan)
        self.options = options  # the CLI's; a session started here takes them as defaults
        self.memory_url = options.memory or settings.memory_url
        self.scope = options.scope
        self.embedder = embedder
        self.browse_first = browse
        self.host: SessionHost | None = None
        self.store_ready = asyncio.Event()  # set once the store is open (or failed to)
        self.ready = asyncio.Event()  # and the embedder loaded (or failed to)
        self.startup_error: str | None = None
        self.agent: AstraAgent | None = None
        self.finished: list[FinishedSession] = []
        self.session_exit_code = 0
        self.dashboard = DashboardScreen()

    def on_mount(self) -> None:
        if self.browse_first:  # idle: the browser first; the dashboard once it is left
            self.push_screen(MemoryBrowserScreen(), callback=self._show_dashboard)
        else:
            self.push_screen(self.dashboard)
        self.call_after_refresh(self.run_sessions)  # its imports would slow the first frame

    def _show_dashboard(self, _result: object = None) -> None:
        self.push_screen(self.dashboard)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand(
            "Memory browser", "Browse, search and delete memory records", self.action_browse_memory
        )
        yield SystemCommand(
            "New session",
            "Start a session on a workspace: rehearsed, or live",
            self.action_new_session,
        )
        yield SystemCommand(
            "Stop session",
            "Stop the running session at its next safe point",
            self.action_stop_session,
        )

    # -- the work ----------------------------------------------------------------------

    @work(exclusive=True, group="session", exit_on_error=False, description="session")
    async def run_sessions(self) -> None:
        """Open the memory, then run the queued sessions one at a time for as long as the
        app runs. A session that fails is reported and the next one still runs."""
        try:
            await self._open_host()
        except Exception as exc:
            self.startup_error = str(exc)
            self._cancel_queued()
            raise  # on_worker_state_changed shows it
        finally:
            self.store_ready.set()
            self.ready.set()
        if not self.plans:
            self.set_status("idle · n starts a session · m opens the memory browser")
        ran = 0
        while True:
            plan = await self.queue.get()
            try:
                await self._run_session(plan)
            except Exception as exc:  # an agent bug must not stop the sessions after it
                self.session_exit_code = 1
                self.set_status(f"error: {exc}")
                self.notify(str(exc), title="The session failed", severity="error")
            ran += 1
            if self.queue.empty():
                if ran > 1:
                    self.notify(f"all {ran} sessions finished · q quits", timeout=10)
                ran = 0

    def _cancel_queued(self) -> int:
        """Drop the sessions still waiting (the demo's beta needs alpha's fix)."""
        count = 0
        while not self.queue.empty():
            self.queue.get_nowait()
            count += 1
        return count

    async def _open_host(self) -> None:
        self.set_status("opening the memory store…")
        self.host = await asyncio.to_thread(
            open_host, self.settings, self.memory_url, self.scope, self.embedder
        )
        self.store_ready.set()
        if self.host.model_process is not None:
            self.set_status("loading the embedding model…")
            await asyncio.to_thread(self.host.load_model)
        # Everything loaded so far lives as long as the app; frozen, the full collections
        # that a session's churn triggers skip it instead of stalling the loop 40-100 ms.
        gc.freeze()
        self.set_status("memory ready")

    def set_status(self, status: str) -> None:
        """Say what the app is doing: in the dashboard's header and the browser's title."""
        self.dashboard.set_status(status)
        for screen in self.screen_stack:
            if isinstance(screen, MemoryBrowserScreen):
                screen.show_title()

    async def _run_session(self, plan: SessionPlan) -> None:
        options = plan.options
        supervisor = TextualSupervisor(
            self, approve_live_cost=options.approve_live_cost, store=options.store
        )
        assert self.host is not None
        try:
            agent = self.host.agent(
                options, plan.workspace, plan.session_id, supervisor, self.forward_event
            )
        except CommandError as exc:
            self.session_exit_code = exc.code
            self.set_status(f"error: {exc}")
            self.notify(str(exc), title="Cannot start the session", severity="error")
            self._cancel_queued()
            return
        self.agent = agent
        self.refresh_bindings()
        try:
            report = await agent.run(options.prompt)
        finally:
            self.agent = None
            self.refresh_bindings()
            await agent.transport.aclose()
        self.finished.append(FinishedSession(plan, report, agent.tools))
        self.session_exit_code = report.exit_code

    def forward_event(self, event: ev.Event) -> None:
        """The agent's event callback; it runs on the app's loop, as the agent does."""
        self.dashboard.forward(event)

    def on_matches_log_record_requested(self, message: MatchesLog.RecordRequested) -> None:
        self.show_record(message.memory_id)

    @work(group="record", exit_on_error=False, description="open record")
    async def show_record(self, memory_id: str) -> None:
        await self.store_ready.wait()
        if self.host is None:
            return  # the store did not open; the header says why
        record = await self.host.store.get(memory_id)
        if record is None:
            self.notify(f"record {memory_id[:8]} is no longer in memory", severity="warning")
            return
        self.push_screen(RecordModal(record))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            if event.worker.group == "session":
                self.session_exit_code = self.session_exit_code or 1
            self.set_status(f"error: {error}")
            self.notify(str(error), title=f"{event.worker.description} failed", severity="error")

    # -- actions -----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Stop shows dimmed while no session runs. New session hides while one runs or
        waits (one at a time), and Memory inside the memory browser."""
        if action == "browse_memory" and isinstance(self.screen, MemoryBrowserScreen):
            return False
        if action == "new_session" and self.session_running:
            return False
        if action == "stop_session" and self.agent is None:
            return None
        return True

    @property
    def session_running(self) -> bool:
        return self.agent is not None or not self.queue.empty()

    def action_new_session(self) -> None:
        if self.startup_error is not None:
            self.notify(f"no sessions: {self.startup_error}", severity="error")
            return
        if self.session_running:
            self.notify("a session is running or queued; s stops it")
            return

        def start(choice: NewSession | None) -> None:
            if choice is None:
                return
            # the dashboard first: the session's own modals must land on top of it
            if isinstance(self.screen, MemoryBrowserScreen):
                self.pop_screen()
            if self.dashboard not in self.screen_stack:
                self.push_screen(self.dashboard)
            plan = SessionPlan(self.options_for(choice), choice.workspace, new_session_id())
            self.plans.append(plan)
            self.queue.put_nowait(plan)
            self.refresh_bindings()

        self.push_screen(NewSessionModal(self.new_session_problem), callback=start)

    def options_for(self, choice: NewSession) -> SessionOptions:
        """A session started here: the command line's model, endpoint, memory, scope and
        limits; the default prompt; the cost approved in the modal; each store confirmed."""
        return replace(
            self.options,
            prompt=DEFAULT_PROMPT,
            replay=choice.replay,
            live=choice.live,
            approve_live_cost=False,
            store="ask",
        )

    async def new_session_problem(self, choice: NewSession) -> str | None:
        """What would stop this session from starting (no key, no price, a bad script)."""
        await self.ready.wait()
        if self.host is None or self.startup_error is not None:
            return f"the memory is not available: {self.startup_error}"
        return await asyncio.to_thread(self.host.problem, self.options_for(choice))

    def action_browse_memory(self) -> None:
        if not isinstance(self.screen, MemoryBrowserScreen):
            self.push_screen(MemoryBrowserScreen())

    def action_stop_session(self) -> None:
        if self.agent is None:
            self.notify("no session is running")
            return
        self.agent.request_stop()
        cancelled = self._cancel_queued()
        also = f"; {cancelled} queued session(s) will not start" if cancelled else ""
        self.set_status(f"stopping at the next safe point…{also}")
        self.notify(f"stopping at the next safe point{also}")

    async def action_quit(self) -> None:
        self.exit(self.session_exit_code)

    async def on_unmount(self) -> None:
        if self.host is not None:
            await self.host.close()


def open_host(
    settings: Settings, memory_url: str, scope: str, embedder: Embedder | None
) -> SessionHost:
    """Import and open the non-UI half; this blocks for ~0.5 s, so it runs in a thread."""
    from app.session_host import SessionHost

    return SessionHost.open(settings, memory_url, scope, embedder)


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
