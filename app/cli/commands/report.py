"""`astra-memory report`: memory's effect. Live sessions that received a match against those
that did not (turns, tool calls, cost, time to green; one that never searched memory is in
neither), and how often each record's deliveries ended green. Too few sessions on a side,
and it says so instead of comparing."""

from __future__ import annotations

import argparse
import json

from app.cli.commands.sessions import read_history
from app.config.settings import Settings
from app.console import make_console
from app.sessions.history import memory_effect
from memory.stores.protocol import open_store
from memory.text import as_markup

console = make_console()


async def report(args: argparse.Namespace, settings: Settings) -> int:
    effect = memory_effect(await read_history(settings))
    store = open_store(args.memory or settings.memory_url)
    try:
        records = await store.list_records()
        stats = await store.delivery_stats([r.memory_id for r in records])
    finally:
        await store.close()
    delivered = [
        {
            "memory_id": r.memory_id,
            "error_type": r.error_type,
            "delivered": stats[r.memory_id].delivered,
            "sessions_ended": stats[r.memory_id].sessions_ended,
            "sessions_green": stats[r.memory_id].sessions_green,
        }
        for r in records
        if stats[r.memory_id].delivered
    ]
    delivered.sort(key=lambda row: row["delivered"], reverse=True)
    if args.json:
        print(json.dumps({"sessions": effect.as_json(), "records": delivered}))
        return 0
    for line in effect.lines():
        console.print(line)
    console.print()
    if not delivered:
        console.print("No record has been delivered to a session yet.")
    for row in delivered:
        ended = row["sessions_ended"]
        console.print(
            f"{row['memory_id'][:8]}  {as_markup(row['error_type'])}  delivered "
            f"{row['delivered']}x; of {ended} session(s) ended, {row['sessions_green']} green",
            no_wrap=True,
            overflow="ellipsis",
        )
    return 0
