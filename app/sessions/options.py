"""A session's options, as the CLI's flags give them: light, so the dashboard starts fast."""

from __future__ import annotations

import argparse
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from app.config.file import default_env_file
from app.errors import CommandError

DEFAULT_MAX_OUTPUT_TOKENS = 25_000  # agent/turns.py's; repeated so the dashboard starts light
REQUEST_TIMEOUT_S = 600.0  # agent/transport.py's
DEFAULT_PROMPT = (
    "The tests in this workspace fail. Find the cause, fix the application code, and make "
    "the tests pass."
)
DEMO_PROJECTS = Path(__file__).resolve().parents[2] / "demo_projects"


def default_export_path(data_dir: Path) -> Path:
    """A new file in the data dir's exports folder, named by the time."""
    return data_dir / "exports" / f"memory-{datetime.now(UTC):%Y%m%d-%H%M%S}.jsonl"


@dataclass(frozen=True)
class SessionOptions:
    """The `session options` of DESIGN's CLI."""

    prompt: str = DEFAULT_PROMPT
    live: bool = False
    approve_live_cost: bool = False
    replay: Path | None = None
    model: str | None = None
    base_url: str | None = None
    allow_insecure_base_url: bool = False  # plain http to a host that is not loopback
    memory: str | None = None
    scope: str = "default"
    store: str = "ask"
    budget_usd: float | None = None
    max_turns: int = 12
    # the Responses API: issue 10
    reasoning_effort: str = "low"
    max_output_tokens: int | None = None  # None: the default cap, sized to the budget
    request_timeout_s: float = REQUEST_TIMEOUT_S
    no_store: bool = False
    # issue 11: the project's own tests, its git workspace, and the operator's edit approval
    test_cmd: str | None = None
    test_timeout_s: float = 120.0
    allow_dirty: bool = False
    on_success: str | None = None  # apply|branch|discard; None: headless keeps the branch,
    in_place: bool = False  # the dashboard asks
    no_sandbox: bool = False  # the test command runs unconfined (issue 14)
    demo_project: bool = False  # a copy of our demo_projects: without bwrap, runs unconfined
    edits: str | None = None  # ask|auto; None: ask where an operator is present
    min_relevance: str | None = None  # None: ASTRA_MIN_RELEVANCE


def options_from(args: argparse.Namespace) -> SessionOptions:
    return SessionOptions(
        prompt=args.prompt or DEFAULT_PROMPT,
        live=args.live,
        approve_live_cost=args.approve_live_cost,
        replay=args.replay,
        model=args.model,
        base_url=args.base_url,
        allow_insecure_base_url=args.allow_insecure_base_url,
        memory=args.memory,
        scope=args.scope or "default",
        store=args.store,
        budget_usd=args.budget_usd,
        max_turns=args.max_turns,
        reasoning_effort=args.reasoning_effort,
        max_output_tokens=args.max_output_tokens,
        request_timeout_s=args.request_timeout,
        no_store=args.no_store,
        test_cmd=args.test_cmd,
        test_timeout_s=args.test_timeout,
        allow_dirty=args.allow_dirty,
        on_success=args.on_success,
        in_place=args.in_place,
        no_sandbox=args.no_sandbox,
        edits=args.edits,
        min_relevance=args.min_relevance,
    )


def refuse_unstartable(options: SessionOptions, has_key: bool) -> None:
    """A CommandError (exit 2) for a session that cannot start, as far as light checks can
    tell (`tui` makes them before the first frame): a rehearsal without a script file, or
    live without a key. `session_builder.build_transport` reads the script and the price."""
    if not options.live:
        if options.replay is None:
            raise CommandError("a rehearsal needs --replay FILE (or --live for paid requests)", 2)
        if not options.replay.is_file():
            raise CommandError(f"cannot use rehearsal script: {options.replay} is not a file", 2)
    elif not has_key:
        raise CommandError(
            f"live mode needs OPENAI_API_KEY: set it in the environment or in "
            f"{default_env_file()} (or the file --env-file names)",
            2,
        )


def new_session_id(label: str = "session") -> str:
    return f"{label}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def require_demo_projects() -> None:
    if not (DEMO_PROJECTS / "rehearsals").is_dir():
        raise CommandError(f"demo projects not found at {DEMO_PROJECTS}", 2)
