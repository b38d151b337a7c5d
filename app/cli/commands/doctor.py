"""`astra-memory doctor`: the checks every session runs before its first request, printed.

One line per check (and, without a workspace, one naming the checks left out); exit 2 when
one fails, as a session would stop (app/sessions/builder.py).
The test command runs where a session's would: in a worktree (or copy) of the workspace,
made for the check and removed after it, so that what the checkout has and a worktree lacks
shows here, not after a paid request.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from dataclasses import replace
from pathlib import Path

from agent.preflight import Check, run_preflight
from agent.sandbox import Sandbox, find_sandbox
from agent.worktree import SessionWorkspace, WorkspaceError, open_session_workspace
from app.config.settings import Settings
from app.errors import CommandError
from app.sessions.builder import is_demo_template, price_override
from app.sessions.options import SessionOptions, new_session_id, options_from
from memory.text import mask_url_passwords, shown


async def doctor(args: argparse.Namespace, settings: Settings) -> int:
    options = options_from(args)
    workspace = Path(args.workspace) if args.workspace else None
    if workspace is not None and not workspace.is_dir():
        raise CommandError(f"workspace {workspace} is not a directory", 2)
    home = None
    if workspace is not None:
        try:  # as a session's (the dirt is the git tree check's to report)
            home = await asyncio.to_thread(
                open_session_workspace,
                workspace,
                new_session_id("doctor"),
                settings.data_dir,
                allow_dirty=True,
                in_place=options.in_place,
                copy=is_demo_template(workspace),
            )
        except WorkspaceError as exc:
            raise CommandError(f"cannot make the session's workspace: {exc}", 2) from exc
    sandbox = None
    if home is not None and not options.no_sandbox:
        found = (await asyncio.to_thread(find_sandbox))[0]
        sandbox = found and replace(found, visible=home.shown_to_tests())
    try:
        checks = await _checks(options, settings, workspace, home, sandbox)
    finally:
        if home is not None and home.kind != "in-place":
            await asyncio.to_thread(home.discard)
    for check in checks:
        print(mask_url_passwords(shown(check.line())), flush=True)
    if workspace is None:
        print("not checked: a project's sandbox, git tree and tests (add --workspace DIR)")
    return 0 if all(check.ok for check in checks) else 2


async def _checks(
    options: SessionOptions,
    settings: Settings,
    workspace: Path | None,
    home: SessionWorkspace | None,
    sandbox: Sandbox | None,
) -> list[Check]:
    return await run_preflight(
        memory_url=options.memory or settings.memory_url,
        embedder=settings.embedder(),
        base_env=dict(os.environ),
        workspace=workspace,
        test_cmd=options.test_cmd,
        test_timeout_s=options.test_timeout_s,
        run_in=home.root if home else None,
        sandbox=sandbox,
        allow_dirty=options.allow_dirty,
        live=options.live,
        model=options.model or settings.astra_model,
        api_key=settings.api_key or None,
        price_override=price_override(settings),
        base_url=options.base_url or settings.openai_base_url,
        allow_insecure_base_url=options.allow_insecure_base_url,
        no_sandbox=options.no_sandbox,
    )
