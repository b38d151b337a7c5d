"""`astra-memory` (no command), `tui` and `demo`: the commands that open the dashboard.

Only light modules load before the first frame; the agent, memory and HTTP layers load in
the dashboard's worker thread (see app/tui.py).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from app.errors import CommandError
from app.options import (
    DEMO_PROJECTS,
    SessionOptions,
    new_session_id,
    options_from,
    require_demo_projects,
)
from app.session_queue import SessionPlan
from app.settings import Settings
from app.tui import build_app


async def tui(args: argparse.Namespace, settings: Settings) -> int:
    """The dashboard: a session on --workspace, or idle on the memory browser."""
    options = options_from(args)
    workspace = Path(args.workspace) if args.workspace else None
    if workspace is not None:
        if not workspace.is_dir():
            raise CommandError(f"workspace {workspace} is not a directory", 2)
        if not options.live and options.replay is None:
            raise CommandError("a rehearsal needs --replay FILE (or --live for paid requests)", 2)
    code = await build_app(settings, options, workspace).run_async()
    return code or 0


async def demo(args: argparse.Namespace, settings: Settings) -> int:
    """alpha then beta in the dashboard; the same checks as the headless demo after it."""
    require_demo_projects()
    run_id = new_session_id("demo")
    root = settings.data_dir / "demo" / run_id
    plans = []
    for name in ("alpha", "beta"):
        shutil.copytree(DEMO_PROJECTS / f"scenario_{name}", root / name)
        options = SessionOptions(
            replay=DEMO_PROJECTS / "rehearsals" / f"scenario_{name}.jsonl",
            memory=args.memory,
            scope=run_id,
            store="ask",  # the operator confirms each memory write
        )
        plans.append(SessionPlan(options, root / name, f"{run_id}-{name}"))
    app = build_app(settings, SessionOptions(memory=args.memory, scope=run_id), None, plans=plans)
    code = await app.run_async()
    from app.session_commands import (  # the headless demo's checks; loaded once it closed
        DemoSession,
        console,
        print_demo_summary,
        verify_against_original_tests,
    )

    if len(app.sessions.finished) < len(plans):
        console.print("the demo did not finish both sessions")
        return code or 1
    sessions = [
        DemoSession(done.plan.workspace.name, done.plan.workspace, done.report, done.tools)
        for done in app.sessions.finished
    ]
    verified = await verify_against_original_tests(sessions[1], root / "beta-original-tests")
    return print_demo_summary(sessions, verified, app.sessions.memory_url)
