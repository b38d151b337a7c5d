"""`astra-memory sessions list|show ID`: past sessions from their summaries, the ledger and
the transcripts (app/sessions/history.py), as lines or JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from app.config.settings import Settings
from app.console import make_console
from app.sessions.history import SessionEntry, find_session, load_history
from app.text_fit import counted
from memory.text import as_markup, shown

console = make_console()


async def sessions(args: argparse.Namespace, settings: Settings) -> int:
    entries = await read_history(settings)
    if args.action == "show":
        entry = find_session(entries, args.session_id)
        if args.json:
            print(json.dumps(entry.as_json()))
            return 0
        for name, value in detail_rows(entry):
            console.print(f"{name:<14} {as_markup(value)}")
        return 0
    if args.json:
        print(json.dumps([entry.as_json() for entry in entries]))
        return 0
    if not entries:
        console.print(f"No sessions recorded in {settings.data_dir}.")
    for entry in entries:
        console.print(list_line(entry), no_wrap=True, overflow="ellipsis")
    return 0


async def read_history(settings: Settings) -> list[SessionEntry]:
    """The sessions, with one warning line on stderr for each summary skipped."""
    unreadable: list[str] = []
    entries = await asyncio.to_thread(load_history, settings.data_dir, unreadable)
    for problem in unreadable:
        print(
            f"astra-memory: warning: skipped the session summary {shown(problem)}", file=sys.stderr
        )
    return entries


def when(entry: SessionEntry) -> str:
    return (entry.started_at or "?")[:19].replace("T", " ")


def list_line(entry: SessionEntry) -> str:
    return (
        f"{when(entry)}  {as_markup(entry.session_id)}  {entry.status or 'unknown'}  "
        f"{entry.tests_shown}  "
        f"{counted(entry.turns, 'turn', 'turns')}  ${entry.cost_usd:.4f}  "
        f"{counted(entry.matches_delivered, 'match', 'matches')}  "
        f"{len(entry.stored_memory_ids)} stored  {as_markup(entry.model or '?')}  "
        f"{as_markup(entry.workspace or '?')}"
    )


def detail_rows(entry: SessionEntry) -> list[tuple[str, str]]:
    def text(value: object) -> str:
        return "unknown" if value is None else str(value)

    green = "never" if entry.seconds_to_green is None else f"{entry.seconds_to_green:.1f} s"
    return [
        ("session", entry.session_id),
        ("started", text(entry.started_at)),
        ("mode", text(entry.mode)),
        ("model", text(entry.model)),
        ("workspace", text(entry.workspace)),
        ("status", text(entry.status) + ("" if entry.summarised else " (no summary)")),
        ("tests", entry.tests_shown),
        ("exit code", text(entry.exit_code)),
        ("turns", text(entry.turns)),
        ("tool calls", text(entry.tool_calls)),
        ("cost", f"${entry.cost_usd:.4f}"),
        ("time to green", green),
        ("delivered", ", ".join(entry.delivered_memory_ids) or "none"),
        ("stored", ", ".join(entry.stored_memory_ids) or "none"),
        ("transcript", entry.transcript_shown),
    ]
