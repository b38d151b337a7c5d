"""`astra-memory ledger`: live spend by session, and the total against ASTRA_BUDGET_USD."""

from __future__ import annotations

import argparse

from app.console import make_console
from app.session_builder import ledger_for
from app.settings import Settings

console = make_console()


async def ledger(args: argparse.Namespace, settings: Settings) -> int:
    book = ledger_for(settings)
    sessions = book.by_session()
    for session_id, row in sessions.items():
        console.print(
            f"{session_id}  {int(row['requests'])} requests  {int(row['input_tokens'])} in / "
            f"{int(row['output_tokens'])} out tokens  ${row['cost_usd']:.4f}",
            no_wrap=True,
            overflow="ellipsis",
        )
    if not sessions:
        console.print(f"No live spend recorded in {book.path}.")
    total = book.total()
    limit = settings.astra_budget_usd
    console.print(
        f"total ${total:.4f}"
        + (
            f" of ${limit:.2f} (ASTRA_BUDGET_USD), ${limit - total:.4f} left"
            if limit is not None
            else ""
        )
    )
    return 0
