"""Wiring one session from settings and flags: transport, guard, memory, workspace, agent.

The headless CLI, the demo and the dashboard all build sessions here, so a live session
gets the same checks everywhere: a key, a known price, a transcript without the key, the
preflight before the first request, and a workspace of its own (a git worktree or a copy)
whose changes reach the user's checkout only when the operator chooses so at the end.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from agent import events as ev
from agent.approval import resolve_edit_policy
from agent.books import AgentLimits
from agent.budget import (
    CostGuard,
    Ledger,
    LedgerUnreadableError,
    Price,
    UnknownPriceError,
    price_for,
)
from agent.loop import AstraAgent
from agent.preflight import run_preflight
from agent.project_tests import TestCommandError, resolve_test_command
from agent.sandbox import INSTALL_HINT, Sandbox, find_sandbox
from agent.supervisor import EditProposal, Supervisor
from agent.transport import (
    HttpResponsesTransport,
    RecordingTransport,
    ReplayTransport,
    ResponsesTransport,
    insecure_base_url,
)
from agent.turns import DEFAULT_MAX_OUTPUT_TOKENS, RequestOptions
from agent.workspace_tools import WorkspaceTools
from agent.worktree import Finish, SessionWorkspace, WorkspaceError, open_session_workspace
from app.config.settings import Settings
from app.errors import CommandError
from app.sessions.history import SummaryRecorder
from app.sessions.options import DEMO_PROJECTS, SessionOptions, refuse_unstartable
from memory.embedding.embedder import Embedder
from memory.service import MemoryService
from memory.stores.protocol import MemoryStore
from memory.text import mask_url_passwords


def price_override(settings: Settings) -> Price | None:
    """Prices given in the environment, for a model whose price we do not know; cached input
    left unset is billed at the input rate."""
    given = (settings.astra_price_input_per_million, settings.astra_price_output_per_million)
    if None in given:
        return None
    return Price(*given, cached_input_per_million=settings.astra_price_cached_input_per_million)


def ledger_for(settings: Settings) -> Ledger:
    return Ledger(settings.data_dir / "ledger.jsonl")


def build_transport(
    settings: Settings,
    options: SessionOptions,
    session_id: str,
    emit: Callable[[ev.Event], None],
) -> tuple[ResponsesTransport, CostGuard | None]:
    """A live HTTP transport with its cost guard, or the offline replay of a script."""
    model = options.model or settings.astra_model
    key = settings.api_key
    refuse_unstartable(options, has_key=bool(key))
    if not options.live:
        try:
            return ReplayTransport(options.replay), None
        except (OSError, ValueError) as exc:  # ReplayScriptError, UnicodeDecodeError
            raise CommandError(f"cannot use rehearsal script: {exc}", 2) from exc
    try:
        price = price_for(model, price_override(settings))
    except UnknownPriceError as exc:
        raise CommandError(str(exc), 2) from exc
    guard = CostGuard(
        price,
        ledger_for(settings),
        session_id=session_id,
        model=model,
        session_limit_usd=options.budget_usd,
        total_limit_usd=settings.astra_budget_usd,
    )
    try:  # a ledger with lines it cannot count: no quote, nothing sent
        guard.remaining_total()
    except LedgerUnreadableError as exc:
        raise CommandError(str(exc), 2) from None
    base_url = options.base_url or settings.openai_base_url
    if insecure_base_url(base_url) and not options.allow_insecure_base_url:
        raise CommandError(
            f"base URL {mask_url_passwords(base_url)} is not https: the key would cross the "
            "network in clear text (--allow-insecure-base-url sends it anyway)",
            2,
        )
    http = HttpResponsesTransport(
        base_url,
        key,
        request_timeout_s=options.request_timeout_s,
        on_retry=lambda notice: emit(
            ev.RequestRetried(attempt=notice.attempt, delay_s=notice.delay_s, reason=notice.reason)
        ),
    )
    transcript = settings.data_dir / "transcripts" / f"{session_id}.jsonl"
    return RecordingTransport(http, transcript, secrets=[key]), guard


async def check_session_options(settings: Settings, options: SessionOptions) -> None:
    """The dashboard's check of a session's options before it starts, as `run`'s
    `build_transport` makes it (a readable rehearsal script; for --live the key, a known
    price and https), with nothing sent or written: a CommandError (exit 2) on a problem."""
    transport, _ = build_transport(settings, options, "check", lambda _event: None)
    await transport.aclose()


def build_agent(
    settings: Settings,
    options: SessionOptions,
    *,
    workspace: Path,
    store: MemoryStore,
    supervisor: Supervisor,
    emit: Callable[[ev.Event], None],
    session_id: str,
    embedder: Embedder | None = None,
    operator_present: bool = False,
) -> AstraAgent:
    """A session ready to run, in a workspace of its own; `embedder` defaults to the
    process-wide real model. `operator_present`: someone can approve edits (--edits)."""
    if not workspace.is_dir():
        raise CommandError(f"workspace {workspace} is not a directory", 2)
    try:
        command = resolve_test_command(workspace, options.test_cmd)  # the user's venv, config
        edits = resolve_edit_policy(options.edits, operator_present=operator_present)
    except (TestCommandError, ValueError) as exc:
        raise CommandError(str(exc), 2) from exc
    emit = SummaryRecorder(settings.data_dir / "transcripts", emit)  # for `sessions`
    transport, guard = build_transport(settings, options, session_id, emit)
    memory = MemoryService(
        store,
        embedder or settings.embedder(),
        session_id=session_id,
        scope=options.scope,
        min_relevance=options.min_relevance or settings.astra_min_relevance,
        stale_after=settings.astra_stale_after,
    )
    try:
        home = open_session_workspace(
            workspace,
            session_id,
            settings.data_dir,
            allow_dirty=options.allow_dirty,
            in_place=options.in_place,
            copy=is_demo_template(workspace),
        )
    except WorkspaceError as exc:
        raise CommandError(str(exc), 2) from exc
    if home.warning:
        emit(ev.SessionNote(level="warning", message=home.warning))
    tools = WorkspaceTools(
        home.root,
        base_env=dict(os.environ),
        test_command=command,
        test_timeout_s=options.test_timeout_s,
        sandbox=test_sandbox(options, workspace, home),
        log_dir=settings.data_dir / "test-output" / session_id,
    )
    return AstraAgent(
        transport,
        memory,
        tools,
        supervisor,
        model=options.model or settings.astra_model,
        limits=AgentLimits(max_turns=options.max_turns),
        request_options=RequestOptions(
            max_output_tokens=options.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS,
            sized_to_budget=options.max_output_tokens is None,
            reasoning_effort=options.reasoning_effort,
            store=not options.no_store and settings.astra_response_storage != "off",
        ),
        guard=guard,
        emit=emit,
        memory_url=mask_url_passwords(store.url),
        edits=edits,
        workspace=home if home.kind != "in-place" else None,
    )


def test_sandbox(
    options: SessionOptions, workspace: Path, home: SessionWorkspace
) -> Sandbox | None:
    """The test command's confinement, showing it the session's folder and the user's
    checkout; None only with --no-sandbox, or for our own demo projects where bwrap is
    missing. Anything else without one is refused (exit 2)."""
    if options.no_sandbox:
        return None
    sandbox, why = find_sandbox()
    if sandbox is None and not runs_our_code(options, workspace):
        raise CommandError(f"{why}: the test command would run unconfined; {INSTALL_HINT}", 2)
    return sandbox and replace(sandbox, visible=home.shown_to_tests())


def is_demo_template(workspace: Path) -> bool:
    """A folder of our demo_projects: always copied, never edited."""
    return workspace.resolve().is_relative_to(DEMO_PROJECTS.resolve())


def runs_our_code(options: SessionOptions, workspace: Path) -> bool:
    """A demo project, or the demo's copy of one: our own code, so its tests may run
    unconfined where bwrap is missing (the demo has no --no-sandbox to ask for it)."""
    return options.demo_project or is_demo_template(workspace)


async def preflight(settings: Settings, options: SessionOptions, agent: AstraAgent) -> None:
    """The checks `doctor` prints, before the session's first request; each is a note, and
    a failure stops the session with exit 2 (its workspace discarded) before any request."""
    key = settings.api_key or None
    home = agent.workspace
    source = home.source if home else agent.tools.root
    checks = await run_preflight(
        memory_url=agent.memory_url,
        embedder=agent.memory.embedder,
        base_env=dict(os.environ),
        workspace=source,
        test_cmd=options.test_cmd,
        test_timeout_s=options.test_timeout_s,
        run_in=agent.tools.root,
        allow_dirty=options.allow_dirty or is_demo_template(source),
        sandbox=agent.tools.sandbox,
        tools=agent.tools,
        no_sandbox=options.no_sandbox or runs_our_code(options, source),
        unconfined_why="--no-sandbox" if options.no_sandbox else "a demo project, our own code",
        live=options.live,
        model=agent.model,
        api_key=key,
        price_override=price_override(settings),
    )
    for check in checks:
        agent.emit(ev.SessionNote(level="info" if check.ok else "error", message=check.line()))
    if isinstance(agent.transport, ReplayTransport):  # off the loop: it looks at files
        missing = await asyncio.to_thread(missing_reads, agent.transport, agent.tools.root)
        if missing:
            agent.emit(another_projects_script(missing, source))
    failed = [check.name for check in checks if not check.ok]
    if failed:
        if home is not None:
            home.discard()
        # each failed check's own line was just said, above this one: name them, once
        raise CommandError(f"preflight failed ({', '.join(failed)}): nothing was sent", 2)


def missing_reads(script: ReplayTransport, root: Path) -> list[str]:
    """The files the rehearsal reads that the workspace lacks."""
    return [path for path in script.scripted_reads() if not (root / path).is_file()]


def another_projects_script(missing: list[str], source: Path) -> ev.SessionNote:
    """The warning for a script that reads files the workspace lacks: the demo's script on
    your own project ran to its scripted "all tests pass" without a word."""
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    return ev.SessionNote(
        level="warning",
        message=f"the rehearsal script reads {missing[0]}{more}, which {source} lacks: "
        "it was written for another project, and its turns will not fit this one",
    )


def finish_choice(report: ev.SessionReport, on_success: Finish) -> Finish:
    """What becomes of the session's changes: `on_success` after a fix; nothing to keep
    when no edit was made; else the branch, so that the work can be looked at."""
    if report.edits_approved == 0:
        return "discard"
    return on_success if report.exit_code == 0 else "branch"


async def finish(agent: AstraAgent, choice: Finish) -> str | None:
    """Apply, keep or discard the session's changes, what the tests wrote only if approved;
    the line saying what happened (None in place). A diff that no longer applies is kept on
    the branch, and said so."""
    if agent.workspace is None:
        return None
    try:
        written = "" if choice == "discard" else await only_approved(agent)
        return written + await asyncio.to_thread(agent.workspace.finish, choice)
    except WorkspaceError as exc:
        return str(exc)


async def only_approved(agent: AstraAgent) -> str:
    """Leave out each file the tests wrote (no approved edit did) unless the operator
    approves it, as an edit is approved (`--edits auto` approves them, and says so); the
    start of the finish line, saying what became of them."""
    workspace = agent.workspace
    assert workspace is not None
    written = await asyncio.to_thread(workspace.unapproved, agent.tools.approved)
    auto = agent.session.edits == "auto"
    kept = list(written) if auto else []
    for path, diff in {} if auto else written.items():
        decision = await agent.supervisor.approve_edit(EditProposal(path, diff, by_tests=True))
        if decision.approved:
            kept.append(path)
    left = [path for path in written if path not in kept]
    await asyncio.to_thread(workspace.leave_out, left, agent.tools.approved)
    said = []
    if kept:
        why = "--edits auto approves them" if auto else "approved"
        said.append(f"kept {len(kept)} file(s) the tests wrote ({why}): {', '.join(kept)}")
    if left:
        said.append(
            f"left out {len(left)} file(s) the tests wrote, not approved: {', '.join(left)}"
        )
    return "".join(f"{line}; " for line in said)
