"""`astra-memory` (no command) and `tui`: the dashboard, idle or on one session.

Only light modules load before the first frame; the agent, memory and HTTP layers load in
the session queue's thread (see app/sessions/queue.py).
"""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

from app.config.file import config_path
from app.config.settings import Settings
from app.dashboard.app import build_app, require_terminal
from app.errors import CommandError
from app.sessions.options import options_from, refuse_unstartable


async def tui(args: argparse.Namespace, settings: Settings) -> int:
    """The dashboard: a session on --workspace, or idle on the memory browser."""
    options = options_from(args)
    workspace = Path(args.workspace) if args.workspace else None
    if workspace is None:
        refuse_session_flags(args)
    else:
        if not workspace.is_dir():
            raise CommandError(f"workspace {workspace} is not a directory", 2)
        # before the dashboard opens, as `run` does: one line and exit 2, not a toast; only
        # what light checks tell, so the first frame still comes before the session's layers
        refuse_unstartable(options, has_key=bool(settings.api_key))
    require_terminal(
        "`astra-memory run --workspace DIR` runs a session without it, "
        "`astra-memory memory list` shows the memory"
    )
    app = build_app(settings, options, workspace)
    app.keep_theme(args.config.theme, config_path())
    # what the imports built lives as long as the process: freezing it keeps the
    # collector's full passes over it out of the first frame
    gc.freeze()
    code = await app.run_async()
    return code or 0


# what only a session on --workspace uses: the idle dashboard's sessions start from its
# `n` modal, which asks for these itself
SESSION_ONLY = {
    "replay": "--replay",
    "live": "--live",
    "prompt": "--prompt",
    "approve_live_cost": "--approve-live-cost",
}


def refuse_session_flags(args: argparse.Namespace) -> None:
    """One line and exit 2 for a flag that would be silently dropped without --workspace."""
    given = [flag for name, flag in SESSION_ONLY.items() if getattr(args, name, None)]
    if given:
        raise CommandError(
            f"{given[0]} needs --workspace DIR (the project the session fixes); without one "
            "the dashboard opens idle, and n starts a session",
            2,
        )
