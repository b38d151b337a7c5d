"""`astra-memory run`: one session on a workspace, without the dashboard.

Flags answer the operator's questions, or the terminal does (app/headless_session.py);
events print as they happen, as lines or JSON. The exit code is the report's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from app.headless_session import EventPrinter, HeadlessSupervisor
from app.options import new_session_id, options_from
from app.session_builder import build_agent
from app.settings import Settings
from memory.store import open_store


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
        )
        try:
            report = await agent.run(options.prompt)
        finally:
            await agent.transport.aclose()
    finally:
        await store.close()
    return report.exit_code
