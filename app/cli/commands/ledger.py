"""`astra-memory ledger`: live spend by session, and the total against ASTRA_BUDGET_USD.

Money first, then tokens: a narrow terminal cuts the end of the line. Requests whose outcome
was unknown (a timeout after sending) are charged their worst case and counted apart."""

from __future__ import annotations

import argparse
import json
import sys

from app.config.settings import Settings
from app.console import make_console
from app.sessions.builder import ledger_for
from memory.text import shown

console = make_console()


async def ledger(args: argparse.Namespace, settings: Settings) -> int:
    book = ledger_for(settings)
    lines = book.read()
    if lines.refused:  # printed, still: what it can count is what the operator needs
        print(
            f"astra-memory: warning: {len(lines.refused)} line(s) of the ledger "
            f"{shown(str(book.path))} cannot be counted and are not in the total "
            f"({shown(lines.refused[0])})",
            file=sys.stderr,
        )
    sessions = book.by_session()
    total = book.total()
    limit = settings.astra_budget_usd
    if args.json:
        print(
            json.dumps(
                {
                    "sessions": sessions,
                    "total_usd": total,
                    "limit_usd": limit,
                    "refused_lines": lines.refused,
                }
            )
        )
        return 0
    for session_id, row in sessions.items():
        console.print(
            f"{session_id}  {int(row['requests'])} requests  ${row['cost_usd']:.4f}"
            + (f" ({int(row['unknown'])} unknown outcome)" if row["unknown"] else "")
            + f"  {int(row['input_tokens'])} in ({int(row['cached_input_tokens'])} cached) / "
            f"{int(row['output_tokens'])} out ({int(row['reasoning_tokens'])} reasoning) tokens",
            no_wrap=True,
            overflow="ellipsis",
        )
    if not sessions:
        console.print(f"No live spend recorded in {book.path}.")
    console.print(
        f"total ${total:.4f}"
        + (
            f" of ${limit:.2f} (ASTRA_BUDGET_USD), ${limit - total:.4f} left"
            if limit is not None
            else ""
        )
    )
    return 0
