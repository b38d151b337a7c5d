"""`astra-memory doctor`: the checks every session runs before its first request, printed.

One line per check; exit 2 when one fails, as a session would stop (app/sessions/builder.py).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from agent.preflight import run_preflight
from app.config.settings import Settings
from app.errors import CommandError
from app.sessions.builder import price_override
from app.sessions.options import options_from
from memory.records import mask_url_passwords, shown


async def doctor(args: argparse.Namespace, settings: Settings) -> int:
    options = options_from(args)
    workspace = Path(args.workspace) if args.workspace else None
    if workspace is not None and not workspace.is_dir():
        raise CommandError(f"workspace {workspace} is not a directory", 2)
    key = settings.api_key or None
    checks = await run_preflight(
        memory_url=options.memory or settings.memory_url,
        embedder=settings.embedder(),
        base_env=dict(os.environ),
        workspace=workspace,
        test_cmd=options.test_cmd,
        test_timeout_s=options.test_timeout_s,
        allow_dirty=options.allow_dirty,
        live=options.live,
        model=options.model or settings.astra_model,
        api_key=key,
        price_override=price_override(settings),
        no_sandbox=options.no_sandbox,
    )
    for check in checks:
        print(mask_url_passwords(shown(check.line())), flush=True)
    return 0 if all(check.ok for check in checks) else 2
