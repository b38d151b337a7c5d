"""The dashboard's non-UI half: one store, one embedder, the agents it runs, the exports.

Importing this pulls in the agent, memory and HTTP layers (numpy, pydantic, httpx), which
takes longer than the dashboard's whole first frame, so the session queue imports and opens
it in a thread (app/sessions/queue.py). The embedding model runs in a child process: loading
torch (the fallback, and the first-use export) holds the GIL for hundreds of milliseconds,
and even the ONNX embedder loaded in a thread stalled the loop about three times longer
than the child does (bench/bench_model_process.py, figures in the README).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from agent import events as ev
from agent.loop import AstraAgent
from agent.supervisor import Supervisor
from app.config.settings import Settings
from app.errors import CommandError
from app.sessions.builder import (
    build_agent,
    check_session_options,
    finish,
    finish_choice,
    preflight,
)
from app.sessions.options import SessionOptions, default_export_path
from memory import review
from memory.embedding.embedder import Embedder
from memory.embedding.process import ProcessEmbedder
from memory.records import Proposal
from memory.review import Review
from memory.service import MemoryService
from memory.stores.pending import PendingQueue, queue_path
from memory.stores.protocol import MemoryStore, open_store
from memory.transfer import export_to_file


class DashboardBackend:
    """What the dashboard drives. `open` and `load_model` block: call them in a thread."""

    def __init__(
        self,
        settings: Settings,
        store: MemoryStore,
        scope: str,
        embedder: Embedder | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.scope = scope
        self.model_process = (
            ProcessEmbedder(
                settings.astra_embedding_model_path,
                kind=settings.astra_embedder,
                data_dir=settings.data_dir,
                progress=progress,
            )
            if embedder is None
            else None
        )
        self.embedder: Embedder = embedder or self.model_process

    @classmethod
    def open(
        cls,
        settings: Settings,
        memory_url: str,
        scope: str,
        embedder: Embedder | None,
        progress: Callable[[str], None] | None = None,
    ) -> DashboardBackend:
        """Open the store; the embedder is the one given, else the model in a child process,
        whose news for the operator (the export's steps, a fallback) go to `progress`."""
        return cls(settings, open_store(memory_url), scope, embedder, progress)

    def load_model(self) -> None:
        """Start the child process and wait until it has loaded the model."""
        if self.model_process is not None:
            self.model_process.load()

    def agent(
        self,
        options: SessionOptions,
        workspace: Path,
        session_id: str,
        supervisor: Supervisor,
        emit: Callable[[ev.Event], None],
    ) -> AstraAgent:
        return build_agent(
            self.settings,
            options,
            workspace=workspace,
            store=self.store,
            supervisor=supervisor,
            emit=emit,
            session_id=session_id,
            embedder=self.embedder,
            operator_present=True,
        )

    async def store_problem(self) -> str | None:
        """Why the store cannot take a write (unreachable, read-only), or None: the header
        and the browser say so at once rather than at the session's end."""
        from agent.preflight import check_store

        check = await check_store(self.store.url)
        return None if check.ok else f"memory store unavailable: {check.detail}"

    async def preflight(self, options: SessionOptions, agent: AstraAgent) -> None:
        """The session's checks before its first request; CommandError on a failure."""
        await preflight(self.settings, options, agent)

    async def finish(
        self,
        agent: AstraAgent,
        report: ev.SessionReport,
        options: SessionOptions,
        choose: Callable[[str, str], Awaitable[str]],
    ) -> str | None:
        """The operator's choice (asked through `choose` unless --on-success gave it) for a
        session that fixed its tests; apply, keep or discard; the line saying what happened."""
        fixed = report.edits_approved > 0 and report.exit_code == 0
        if options.on_success is None and fixed and agent.workspace is not None:
            chosen = await choose(str(agent.workspace.source), agent.branch or "")
            return await finish(agent, finish_choice(report, chosen))  # type: ignore[arg-type]
        return await finish(agent, finish_choice(report, options.on_success or "branch"))  # type: ignore[arg-type]

    def problem(self, options: SessionOptions) -> str | None:
        """Why a session with these options could not start (no key, no known price, a bad
        rehearsal script), or None. Blocks: it reads the script."""
        try:
            asyncio.run(check_session_options(self.settings, options))
        except CommandError as exc:
            return str(exc)
        return None

    def browser_service(self) -> MemoryService:
        return MemoryService(
            self.store,
            self.embedder,
            session_id="memory-browser",
            scope=self.scope,
            stale_after=self.settings.astra_stale_after,
        )

    @contextlib.asynccontextmanager
    async def _pending_queue(self) -> AsyncIterator[PendingQueue]:
        """The queue of fixes MCP clients proposed, opened and closed in threads, never on
        the UI's loop (closing may checkpoint the WAL)."""
        path = queue_path(self.store.url, self.settings.data_dir)
        queue = await asyncio.to_thread(PendingQueue, path)
        try:
            yield queue
        finally:
            await queue.close()

    async def pending_count(self) -> int:
        """How many proposals wait for the operator."""
        async with self._pending_queue() as queue:
            return await queue.count_pending()

    async def pending_proposals(self) -> list[Proposal]:
        """The proposals waiting for the operator, oldest first."""
        async with self._pending_queue() as queue:
            return await queue.listing("pending")

    async def review_proposal(self, proposal_id: str) -> Review:
        """What confirming this proposal would write, beside its nearest records;
        ProposalDecidedError if it was decided meanwhile."""
        async with self._pending_queue() as queue:
            proposal = await review.pending_proposal(queue, proposal_id)
        return await review.review_of(self.store, self.embedder, proposal)

    async def confirm_proposal(self, seen: Review) -> str:
        """Write the reviewed proposal's record and mark it confirmed; the record's id."""
        async with self._pending_queue() as queue:
            return await review.confirm(queue, self.store, self.embedder, seen)

    async def reject_proposal(self, proposal: Proposal) -> None:
        async with self._pending_queue() as queue:
            await review.reject(queue, proposal)

    async def export(self, path: Path | None = None) -> tuple[Path, int]:
        """Every record as JSONL, as `memory export` writes it, to `path` (default: a new
        file in the data dir's exports folder); returns the file and how many records it
        holds. Only the exports folder is made if missing."""
        path = path or default_export_path(self.settings.data_dir)
        if path.parent == self.settings.data_dir / "exports":
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
        return path, await export_to_file(self.store, path)

    async def close(self) -> None:
        try:
            await self.store.close()
        finally:
            if self.model_process is not None:
                await asyncio.to_thread(self.model_process.close)
