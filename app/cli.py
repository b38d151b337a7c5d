"""The `astra-memory` command line: parses flags, builds the settings once, runs a command.

Every failure a user can cause (a bad flag, URL, id or file) ends as one line on stderr
and a non-zero exit: 2 for usage and configuration, 1 for a command that could not do
its work.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from app.errors import CommandError
from app.settings import Settings
from memory.errors import EmbedderUnavailableError, MemoryLayerError, MemoryStoreError


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="astra-memory",
        description="Supervised Astra debugging sessions with a durable memory of confirmed fixes.",
        epilog="Environment: OPENAI_API_KEY, OPENAI_BASE_URL, ASTRA_MODEL, ASTRA_MEMORY_URL, "
        "ASTRA_DATA_DIR, ASTRA_BUDGET_USD, ASTRA_EMBEDDING_MODEL_PATH.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    store_options = argparse.ArgumentParser(add_help=False)
    store_options.add_argument(
        "--memory",
        metavar="URL",
        help="memory store URL, e.g. sqlite:///path/memory.sqlite3 (default: ASTRA_MEMORY_URL, "
        "else memory.sqlite3 in ASTRA_DATA_DIR)",
    )
    json_option = argparse.ArgumentParser(add_help=False)
    json_option.add_argument("--json", action="store_true", help="print JSON instead of tables")

    memory = commands.add_parser("memory", help="browse, search, audit and prune memory records")
    actions = memory.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = actions.add_parser(
        "list", parents=[store_options, json_option], help="records, newest first"
    )
    listing.add_argument("--scope", help="only this scope")
    listing.add_argument(
        "--limit", type=_positive_int, default=50, help="at most N records (0: all; default 50)"
    )

    show = actions.add_parser(
        "show", parents=[store_options, json_option], help="one record with its evidence and audit"
    )
    show.add_argument("memory_id", metavar="ID", help="a memory id, or a unique prefix of one")

    search = actions.add_parser(
        "search", parents=[store_options, json_option], help="search as the agent's tool does"
    )
    search.add_argument("query", metavar="QUERY", help="failure text to search for")
    search.add_argument("--scope", default="default", help="scope to search (default: default)")
    search.add_argument("--error-type", help="only records of this error type")
    search.add_argument("--top-k", type=int, default=5, help="matches to show, 1..10 (default 5)")
    search.add_argument(
        "--min-score", type=float, default=0.0, help="lowest cosine score shown (default 0)"
    )

    delete = actions.add_parser("delete", parents=[store_options], help="delete one record")
    delete.add_argument("memory_id", metavar="ID", help="a memory id, or a unique prefix of one")

    actions.add_parser(
        "stats", parents=[store_options, json_option], help="counts by scope and error type"
    )

    export = actions.add_parser("export", parents=[store_options], help="records as JSONL")
    export.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    export.add_argument("--scope", help="only this scope")

    imports = actions.add_parser(
        "import",
        parents=[store_options],
        help="records from JSONL: an export, or minimal post-mortem records",
        description="Import an export (ids kept) or minimal records with fix_description, "
        "error_type, file_paths and optionally memory_id, symptom, outcome, scope. Minimal "
        "records are marked as imported, not test-confirmed. All lines are checked first; "
        "nothing is written unless every line is valid.",
    )
    imports.add_argument("file", metavar="FILE", help="JSONL file to import ('-' for stdin)")
    imports.add_argument(
        "--scope", default="default", help="scope for records that name none (default: default)"
    )

    evaluation = actions.add_parser(
        "eval",
        parents=[store_options, json_option],
        help="recall@1/@3 and MRR of labelled queries",
        description='Each line of QUERIES.jsonl: {"query": ..., "expect": MEMORY_ID or a unique '
        "prefix} and optionally error_type, scope and group (figures per group).",
    )
    evaluation.add_argument("queries", metavar="QUERIES.jsonl")
    evaluation.add_argument(
        "--scope", default="default", help="scope for queries that name none (default: default)"
    )
    evaluation.add_argument(
        "--baseline",
        action="store_true",
        help="also rank by embeddings of the fix text alone, to compare (adds a 'baseline' key)",
    )
    evaluation.add_argument(
        "--bm25",
        action="store_true",
        help="also rank by plain BM25 over the same fields, to compare (adds a 'bm25' key)",
    )

    migration = actions.add_parser(
        "migrate",
        help="copy every record from one store to another",
        description="Copy every record, ids kept, from one memory store to another, e.g. "
        "sqlite:///path/memory.sqlite3 to vectorai://localhost:6574. Vectors are copied; "
        "only records embedded by another model are embedded again. Running it twice "
        "duplicates nothing.",
    )
    migration.add_argument("--from", dest="source", required=True, metavar="URL")
    migration.add_argument("--to", dest="target", required=True, metavar="URL")

    session_options = argparse.ArgumentParser(add_help=False)
    group = session_options.add_argument_group("session options")
    group.add_argument("--prompt", help="the task for Astra (default: fix the failing tests)")
    group.add_argument("--live", action="store_true", help="send paid requests to the model")
    group.add_argument(
        "--approve-live-cost",
        action="store_true",
        help="approve the session's worst-case cost up front (else asked on a terminal)",
    )
    group.add_argument("--replay", type=Path, metavar="FILE", help="rehearsal script (JSONL)")
    group.add_argument("--model", help="model name (default: ASTRA_MODEL, gpt-6-astra)")
    group.add_argument("--base-url", metavar="URL", help="Responses API base URL")
    group.add_argument("--memory", metavar="URL", help="memory store URL")
    group.add_argument("--scope", default="default", help="memory scope (default: default)")
    group.add_argument(
        "--store",
        choices=("ask", "yes", "no"),
        default="ask",
        help="confirm memory writes: ask on a terminal (declines without one), yes, or no",
    )
    group.add_argument(
        "--budget-usd", type=float, metavar="X", help="spending limit for this session"
    )
    group.add_argument(
        "--max-turns", type=_positive_int, default=12, metavar="N", help="model turn limit"
    )

    run = commands.add_parser(
        "run",
        parents=[session_options, json_option],
        help="one session on a workspace, without the dashboard",
        description="Exit codes: 0 final test run passed, 1 finished with tests not passing, "
        "2 usage or configuration error, 3 stopped by budget or a limit, 4 stopped by a gate.",
    )
    run.add_argument("--workspace", required=True, metavar="DIR", help="the project to fix")

    tui = commands.add_parser(
        "tui",
        parents=[session_options],
        help="the dashboard (the default command)",
        description="Without --workspace, the dashboard opens idle on the memory browser.",
    )
    tui.add_argument("--workspace", metavar="DIR", help="the project to fix in a session")

    demo = commands.add_parser("demo", help="the two-session experiment on demo_projects, offline")
    demo.add_argument(
        "--headless", action="store_true", help="print to the terminal instead of the dashboard"
    )
    demo.add_argument("--memory", metavar="URL", help="memory store URL")

    commands.add_parser("ledger", help="live spend by session")

    smoke = commands.add_parser(
        "smoke", help="check the store end to end: store a temporary fix, then verify it"
    )
    steps = smoke.add_subparsers(dest="step", metavar="STEP", required=True)
    steps.add_parser(
        "store", parents=[store_options], help="store and find a temporary fix; prints its id"
    )
    verify = steps.add_parser(
        "verify", parents=[store_options], help="confirm a smoke record persisted, then delete it"
    )
    verify.add_argument("--memory-id", required=True, metavar="ID")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["tui"])
    try:
        settings = Settings.from_environment()
        return asyncio.run(command_for(args)(args, settings))
    except CommandError as exc:
        return _fail(str(exc), exc.code)
    except (MemoryStoreError, EmbedderUnavailableError) as exc:
        return _fail(str(exc), 2)
    except MemoryLayerError as exc:
        return _fail(str(exc), 1)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        return _fail(f"{exc.strerror or exc}{where}", 1)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


def command_for(args: argparse.Namespace) -> Callable[..., Awaitable[int]]:
    """The command's function: `app.commands.<command>.<command>`. Its module loads only
    now: the dashboard's first frame must not wait for the agent, memory and HTTP layers
    that the other commands import (see tests/test_layers.py)."""
    module = importlib.import_module(f"app.commands.{args.command}")
    return getattr(module, args.command)


def _fail(message: str, code: int) -> int:
    print(f"astra-memory: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
