"""The dashboard's sessions: open the memory once, then run queued sessions one at a time.

The app runs `SessionQueue.run` in a worker once its first frame is drawn. Opening the
backend (app/sessions/backend.py) imports the agent, memory and HTTP layers, so it runs
in a thread; so does waiting for the embedding model's child process. The sessions then
run on the app's loop, one after another, for as long as the app runs. The queue tells
the app what happens through `SessionView`, and gives the memory browser the backend once
it is open (the browser's `MemoryAccess`). Nothing here imports Textual or a heavy layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from app.errors import CommandError
from app.sessions.options import SessionOptions

if TYPE_CHECKING:
    from agent import events as ev
    from agent.loop import AstraAgent
    from agent.supervisor import Supervisor
    from agent.workspace_tools import WorkspaceTools
    from app.config.settings import Settings
    from app.sessions.backend import DashboardBackend
    from memory.embedding.embedder import Embedder


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


class SessionView(Protocol):
    """What the queue needs from the app: somewhere to say what happens, and the operator."""

    def show_status(self, status: str) -> None: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Literal["information", "warning", "error"] = "information",
        timeout: float | None = None,
    ) -> None: ...

    def forward_event(self, event: ev.Event) -> None:
        """The agent's event callback; called on the app's loop."""

    def supervisor(self, options: SessionOptions) -> Supervisor:
        """Who answers the session's questions (live cost, each edit, each store)."""

    async def choose_finish(self, source: str, branch: str) -> str:
        """apply, branch or discard: what becomes of a passing session's changes."""

    def sessions_changed(self) -> None:
        """A session started or ended, or one was queued: keys may show or hide."""


class SessionQueue:
    """The dashboard's session state: the backend once open, the sessions waiting, the one
    running, the ones finished, and the latest status."""

    def __init__(
        self,
        settings: Settings,
        options: SessionOptions,
        plans: Sequence[SessionPlan],
        view: SessionView,
        embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings
        self.options = options  # the CLI's; a session started here takes them as defaults
        self.memory_url = options.memory or settings.memory_url
        self.scope = options.scope
        self.embedder = embedder
        self.view = view
        self.plans = list(plans)
        self.queue: asyncio.Queue[SessionPlan] = asyncio.Queue()
        for plan in plans:
            self.queue.put_nowait(plan)
        self.backend: DashboardBackend | None = None
        self.store_ready = asyncio.Event()  # set once the store is open (or failed to)
        self.ready = asyncio.Event()  # and the embedder loaded (or failed to)
        self.startup_error: str | None = None
        self.status = "starting…"
        self.agent: AstraAgent | None = None
        self.finished: list[FinishedSession] = []
        self.exit_code = 0

    @property
    def data_dir(self) -> Path:
        return self.settings.data_dir

    def set_status(self, status: str) -> None:
        self.status = status
        self.view.show_status(status)

    @property
    def running(self) -> bool:
        """A session runs or waits: the dashboard runs one at a time."""
        return self.agent is not None or not self.queue.empty()

    def add(self, plan: SessionPlan) -> None:
        self.plans.append(plan)
        self.queue.put_nowait(plan)
        self.view.sessions_changed()

    def cancel_queued(self) -> int:
        """Drop the sessions still waiting (the demo's beta needs alpha's fix)."""
        count = 0
        while not self.queue.empty():
            self.queue.get_nowait()
            count += 1
        return count

    def stop(self, *, cancel_request: bool = False) -> str:
        """Ask the running session to stop at its next safe point (`cancel_request`: now,
        cutting off a model request in flight); what is said about it."""
        if self.agent is None:
            return "no session is running"
        self.agent.request_stop(cancel_request=cancel_request)
        cancelled = self.cancel_queued()
        also = f"; {cancelled} queued session(s) will not start" if cancelled else ""
        when = (
            "now: a model request in flight is charged its worst case"
            if cancel_request
            else ("at the next safe point")
        )
        self.set_status(f"stopping {when}…{also}")
        return f"stopping {when}{also}"

    async def run(self) -> None:
        """Open the memory, then run the queued sessions one at a time for as long as the
        app runs. A session that fails is reported and the next one still runs."""
        try:
            await self._open()
        except Exception as exc:
            self.startup_error = str(exc)
            self.cancel_queued()
            raise  # the app's worker handler shows it
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
                self.exit_code = 1
                self.set_status(f"error: {exc}")
                self.view.notify(str(exc), title="The session failed", severity="error")
            ran += 1
            if self.queue.empty():
                if ran > 1:
                    self.view.notify(f"all {ran} sessions finished · q quits", timeout=10)
                ran = 0

    async def _open(self) -> None:
        self.set_status("opening the memory store…")
        self.backend = await asyncio.to_thread(
            open_backend,
            self.settings,
            self.memory_url,
            self.scope,
            self.embedder,
            self._model_says(asyncio.get_running_loop()),
        )
        problem = await self.backend.store_problem()
        if problem is not None:  # said in the header and the browser before any session
            self.set_status(problem)
            raise CommandError(problem, 2)
        self.store_ready.set()
        if self.backend.model_process is not None:
            self.set_status("loading the embedding model…")
            await asyncio.to_thread(self.backend.load_model)
        # Everything loaded so far lives as long as the app; frozen, the full collections
        # that a session's churn triggers skip it instead of stalling the loop 40-100 ms.
        gc.freeze()
        self.set_status("memory ready")

    def _model_says(self, loop: asyncio.AbstractEventLoop) -> Callable[[str], None]:
        """Show what the model process says (the first export's steps, the fallback's
        warning) in the status; it calls from its own thread, so hop onto the loop."""

        def show(message: str) -> None:
            self.set_status(f"embedding model: {message}")
            if message.startswith("warning:"):
                self.view.notify(message, title="Embedding model", severity="warning")

        def says(message: str) -> None:
            with contextlib.suppress(RuntimeError):  # the app has closed its loop
                loop.call_soon_threadsafe(show, message)

        return says

    async def _run_session(self, plan: SessionPlan) -> None:
        options = plan.options
        assert self.backend is not None
        try:  # a thread: it copies or branches the workspace and probes the sandbox
            agent = await asyncio.to_thread(
                self.backend.agent,
                options,
                plan.workspace,
                plan.session_id,
                self.view.supervisor(options),
                self.view.forward_event,
            )
        except CommandError as exc:
            self.exit_code = exc.code
            self.set_status(f"error: {exc}")
            self.view.notify(str(exc), title="Cannot start the session", severity="error")
            self.cancel_queued()
            return
        self.agent = agent
        self.view.sessions_changed()
        try:  # the session counts as running until it is finished and recorded
            try:
                await self.backend.preflight(options, agent)
                report = await agent.run(options.prompt)
            except CommandError as exc:  # the preflight failed: nothing was sent
                self.exit_code = exc.code
                self.set_status(f"error: {exc}")
                self.view.notify(str(exc), title="Preflight failed", severity="error")
                self.cancel_queued()
                return
            finally:
                await agent.transport.aclose()
            ended = await self.backend.finish(agent, report, options, self.view.choose_finish)
            if ended:
                self.view.notify(ended, timeout=10)
            self.finished.append(FinishedSession(plan, report, agent.tools))
            self.exit_code = report.exit_code
        finally:
            self.agent = None
            self.view.sessions_changed()

    async def when_ready(self, *, search: bool = False) -> DashboardBackend | None:
        """The backend once its store is open (with `search`, once the embedder is loaded
        too); None if opening failed, which the status then says."""
        await (self.ready if search else self.store_ready).wait()
        if search and self.startup_error is not None:
            return None
        return self.backend

    async def problem(self, options: SessionOptions) -> str | None:
        """What would stop a session with these options from starting (no key, no price,
        a bad script), once the backend is open."""
        await self.ready.wait()
        if self.backend is None or self.startup_error is not None:
            return f"the memory is not available: {self.startup_error}"
        return await asyncio.to_thread(self.backend.problem, options)

    async def close(self) -> None:
        if self.backend is not None:
            await self.backend.close()


def open_backend(
    settings: Settings,
    memory_url: str,
    scope: str,
    embedder: Embedder | None,
    progress: Callable[[str], None] | None = None,
) -> DashboardBackend:
    """Import and open the non-UI half; this blocks for ~0.5 s, so it runs in a thread."""
    from app.sessions.backend import DashboardBackend

    return DashboardBackend.open(settings, memory_url, scope, embedder, progress)
