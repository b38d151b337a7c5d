"""Wiring one session from settings and flags: transport, guard, memory, workspace, agent.

The headless CLI, the demo and the dashboard all build sessions here, so a live session
gets the same checks everywhere: a key, a known price, a transcript without the key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from agent import events as ev
from agent.budget import CostGuard, Ledger, Price, UnknownPriceError, price_for
from agent.loop import AgentLimits, AstraAgent
from agent.supervisor import Supervisor
from agent.transport import (
    HttpResponsesTransport,
    RecordingTransport,
    ReplayTransport,
    ResponsesTransport,
)
from agent.turns import RequestOptions
from agent.workspace import WorkspaceTools
from app.errors import CommandError
from app.options import SessionOptions
from app.settings import Settings
from memory.embedder import Embedder, shared_embedder
from memory.service import MemoryService
from memory.store import MemoryStore


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
    if not options.live:
        if options.replay is None:
            raise CommandError("a rehearsal needs --replay FILE (or --live for paid requests)", 2)
        try:
            return ReplayTransport(options.replay), None
        except (OSError, ValueError) as exc:  # ReplayScriptError, UnicodeDecodeError
            raise CommandError(f"cannot use rehearsal script: {exc}", 2) from exc
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
    if not key:
        raise CommandError("live mode needs OPENAI_API_KEY (in the environment or .env)", 2)
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
    http = HttpResponsesTransport(
        options.base_url or settings.openai_base_url,
        key,
        request_timeout_s=options.request_timeout_s,
        on_retry=lambda notice: emit(
            ev.RequestRetried(attempt=notice.attempt, delay_s=notice.delay_s, reason=notice.reason)
        ),
    )
    transcript = settings.data_dir / "transcripts" / f"{session_id}.jsonl"
    return RecordingTransport(http, transcript, secrets=[key]), guard


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
) -> AstraAgent:
    """A session ready to run; `embedder` defaults to the process-wide real model."""
    if not workspace.is_dir():
        raise CommandError(f"workspace {workspace} is not a directory", 2)
    transport, guard = build_transport(settings, options, session_id, emit)
    memory = MemoryService(
        store,
        embedder
        or shared_embedder(
            settings.astra_embedding_model_path,
            kind=settings.astra_embedder,
            data_dir=settings.data_dir,
        ),
        session_id=session_id,
        scope=options.scope,
        min_relevance=options.min_relevance or settings.astra_min_relevance,
    )
    tools = WorkspaceTools(workspace, base_env=dict(os.environ))
    return AstraAgent(
        transport,
        memory,
        tools,
        supervisor,
        model=options.model or settings.astra_model,
        limits=AgentLimits(max_turns=options.max_turns),
        request_options=RequestOptions(
            max_output_tokens=options.max_output_tokens,
            reasoning_effort=options.reasoning_effort,
            store=not options.no_store and settings.astra_response_storage != "off",
        ),
        guard=guard,
        emit=emit,
        memory_url=store.url,
    )
