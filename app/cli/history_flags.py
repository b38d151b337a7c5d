"""The flags of `sessions`, `report` and `serve`: kept apart from app/cli/main.py, which holds
the session and memory commands."""

from __future__ import annotations

import argparse

from app.cli.arguments import add_json, add_memory_url, id_prefix, whole_number


def port(text: str) -> int:
    value = whole_number(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 1 to 65535, got {value}")
    return value


def sessions_flags(history: argparse.ArgumentParser) -> None:
    history.description = (
        "Sessions from their summaries, the ledger and the transcripts in "
        "ASTRA_DATA_DIR, newest first."
    )
    actions = history.add_subparsers(dest="action", metavar="ACTION", required=True)
    add_json(actions.add_parser("list", help="every session, newest first"))
    show = actions.add_parser("show", help="one session")
    add_json(show)
    show.add_argument(
        "session_id", metavar="ID", type=id_prefix, help="a session id, or a unique prefix of one"
    )


def report_flags(report: argparse.ArgumentParser) -> None:
    report.description = (
        "Live sessions that received a match against those that did not (green, "
        "turns, tool calls, cost, time to green, as medians), and how often each record's "
        "deliveries ended green. With fewer than 5 sessions a side it says so instead."
    )
    add_memory_url(report)
    add_json(report)


def serve_flags(serve: argparse.ArgumentParser) -> None:
    serve.description = (
        "Serves the dashboard at http://HOST:PORT; each browser tab runs its "
        "own `astra-memory tui`. Only a loopback host unless --allow-remote: anyone who "
        "reaches the port drives the dashboard, with your key and your memory."
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=port, default=8000, help="port (default 8000)")
    serve.add_argument(
        "--allow-remote", action="store_true", help="allow a host other than loopback"
    )
    add_memory_url(serve)
