"""`astra-memory run`: one session on a workspace, without the dashboard.

Flags answer the operator's questions, or the terminal does (app/sessions/headless.py);
events print as they happen, as lines or JSON. The preflight runs first; at the end
`--on-success` (default: branch) says what becomes of the changes. The exit code is the
report's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.config.settings import Settings
from app.sessions.builder import build_agent, finish, finish_choice, preflight
from app.sessions.headless import EventPrinter, HeadlessSupervisor
from app.sessions.options import new_session_id, options_from
from memory.stores.protocol import open_store


async def run(args: argparse.Namespace, settings: Settings) -> int:
    options = options_from(args)
    store = open_store(options.memory or settings.memory_url)
    try:
        agent = build_agent(
            settings,
            options,
            workspace=Path(args.workspace),
            store=store,
            supervisor=HeadlessSupervisor(
                approve_live_cost=options.approve_live_cost, store=options.store
            ),
            emit=EventPrinter(as_json=args.json),
            session_id=new_session_id(),
            operator_present=sys.stdin.isatty(),
        )
        try:
            await preflight(settings, options, agent)
            report = await agent.run(options.prompt)
        finally:
            await agent.transport.aclose()
        ended = await finish(agent, finish_choice(report, options.on_success or "branch"))
        if ended:  # on stderr: with --json, the report stays the last line of stdout
            print(f"astra-memory: {ended}", file=sys.stderr)
    finally:
        await store.close()
    return report.exit_code
