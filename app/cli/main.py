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
from dataclasses import replace
from pathlib import Path

from app.cli.arguments import (
    OneLineParser,
    add_json,
    add_memory_id,
    add_memory_url,
    add_session_options,
    id_prefix,
    match_count,
    package_version,
    positive_int,
    query_text,
    scope_name,
    score,
    workspace_dir,
)
from app.cli.history_flags import report_flags, serve_flags, sessions_flags
from app.config.file import config_path, default_env_file, load_config
from app.config.settings import Settings
from app.config.store_url import resolve_memory_url
from app.errors import CommandError
from memory.errors import EmbedderUnavailableError, MemoryLayerError, MemoryStoreError
from memory.text import mask_url_passwords, shown


class VersionAction(argparse.Action):
    """`--version`: the installed version, looked up only when asked (`package_version`)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, **kwargs
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"{parser.prog} {package_version()}")
        parser.exit()


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command line. Every command is there by name and summary (for `--help`, and to
    tell a typo), but only those argv names get their flags and actions: all 38 parsers
    cost every launch 5 ms, a fortieth of the dashboard's first frame."""
    parser = OneLineParser(
        prog="astra-memory",
        description="Supervised Astra debugging sessions with a durable memory of confirmed fixes.",
        epilog="Environment: OPENAI_API_KEY, OPENAI_BASE_URL, ASTRA_MODEL, ASTRA_MEMORY_URL, "
        "ASTRA_DATA_DIR, ASTRA_BUDGET_USD, ASTRA_EMBEDDER, ASTRA_EMBEDDING_MODEL_PATH, "
        "ASTRA_RESPONSE_STORAGE=off, ASTRA_PRICE_{INPUT,CACHED_INPUT,OUTPUT}_PER_MILLION.",
    )
    parser.add_argument(
        "--version", action=VersionAction, help="show program's version number and exit"
    )
    parser.add_argument(
        "--env-file",
        type=Path,
        metavar="FILE",
        help="read settings from this .env file (default: the .env beside the config file; "
        "never the current folder's)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (summary, add_flags) in COMMANDS.items():
        command = commands.add_parser(name, help=summary)
        if name in argv:
            add_flags(command)
    return parser


def memory_flags(memory: argparse.ArgumentParser) -> None:
    actions = memory.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="records, newest first")
    add_memory_url(listing)
    add_json(listing)
    listing.add_argument("--scope", type=scope_name, help="only this scope")
    listing.add_argument(
        "--limit", type=positive_int, default=50, help="at most N records (0: all; default 50)"
    )

    show = actions.add_parser("show", help="one record with its evidence and audit")
    add_memory_url(show)
    add_json(show)
    add_memory_id(show)

    search = actions.add_parser("search", help="search as the agent's tool does")
    add_memory_url(search)
    add_json(search)
    search.add_argument(
        "query", metavar="QUERY", type=query_text, help="failure text to search for ('-' for stdin)"
    )
    where = search.add_mutually_exclusive_group()
    where.add_argument(
        "--scope", type=scope_name, default="default", help="scope to search (default: default)"
    )
    where.add_argument("--all-scopes", action="store_true", help="search every scope")
    search.add_argument(
        "--explain",
        action="store_true",
        help="show why each match ranked: shared terms, paths and signature, cosine, ranks "
        "(with --json: each match's 'why' and the query's 'reading')",
    )
    search.add_argument(
        "--error-type", help="lift records stored under this error type (a bonus, not a filter)"
    )
    search.add_argument(
        "--top-k", type=match_count, default=5, help="matches to show, 1..10 (default 5)"
    )
    search.add_argument(
        "--min-score", type=score, default=0.0, help="lowest cosine score shown, 0..1 (default 0)"
    )

    delete = actions.add_parser(
        "delete",
        help="delete one record",
        description="Asks first on a terminal; without one, --yes is required.",
    )
    add_memory_url(delete)
    add_memory_id(delete)
    delete.add_argument("--yes", action="store_true", help="delete without asking")

    unstale = actions.add_parser(
        "unstale",
        help="clear a record's possibly-stale mark",
        description="The red sessions counted so far no longer count; later ones do.",
    )
    add_memory_url(unstale)
    add_memory_id(unstale)

    pending = actions.add_parser(
        "pending", help="fixes MCP clients proposed, waiting for confirm or reject"
    )
    add_memory_url(pending)
    add_json(pending)
    confirm = actions.add_parser(
        "confirm",
        help="write a fix an MCP client proposed to memory",
        description="Shows the record, its diff and the nearest records, then asks; without "
        "a terminal, --yes is required.",
    )
    add_memory_url(confirm)
    confirm.add_argument("--yes", action="store_true", help="confirm without asking")
    reject = actions.add_parser("reject", help="drop a proposed fix")
    add_memory_url(reject)
    for decision in (confirm, reject):
        decision.add_argument(
            "proposal_id", metavar="ID", type=id_prefix, help="a proposal id or a unique prefix"
        )

    stats = actions.add_parser("stats", help="counts by scope and error type")
    add_memory_url(stats)
    add_json(stats)

    export = actions.add_parser("export", help="records as JSONL")
    add_memory_url(export)
    export.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    export.add_argument("--scope", type=scope_name, help="only this scope")

    imports = actions.add_parser(
        "import",
        help="records from JSONL: an export, or minimal post-mortem records",
        description="Import an export (ids kept) or minimal records with fix_description, "
        "error_type, file_paths and optionally memory_id, symptom, outcome, scope. Minimal "
        "records are marked as imported, not test-confirmed. All lines are checked first; "
        "nothing is written unless every line is valid.",
    )
    add_memory_url(imports)
    imports.add_argument("file", metavar="FILE", help="JSONL file to import ('-' for stdin)")
    imports.add_argument(
        "--scope",
        type=scope_name,
        default="default",
        help="scope for records that name none (default: default)",
    )

    evaluation = actions.add_parser(
        "eval",
        help="recall@1/@3 and MRR of labelled queries, beside plain BM25 and the vectors alone",
        description='Each line of QUERIES.jsonl: {"query": ..., "expect": MEMORY_ID or a unique '
        "prefix} and optionally error_type, scope and group (figures per group). Prints the "
        "memory's figures beside plain BM25 (bm25s) and the vectors alone on the same records, "
        "and how often each label of the top 3 was right.",
    )
    add_memory_url(evaluation)
    add_json(evaluation)
    evaluation.add_argument("queries", metavar="QUERIES.jsonl")
    evaluation.add_argument(
        "--scope",
        type=scope_name,
        default="default",
        help="scope for queries that name none (default: default)",
    )
    evaluation.add_argument(
        "--baseline",
        action="store_true",
        help="also rank by embeddings of the fix text alone, to compare (adds a 'baseline' key)",
    )
    evaluation.add_argument(
        "--bm25",
        action="store_true",
        help="plain BM25 (bm25s) is always ranked beside the memory now ('bm25' key); the flag "
        "is accepted for scripts that pass it",
    )

    migration = actions.add_parser(
        "migrate",
        help="copy every record from one store to another",
        description="Copy every record, ids kept, from one memory store to another, e.g. "
        "sqlite:///path/memory.sqlite3 to vectorai://localhost:6574. Vectors are copied; "
        "only records embedded by another model are embedded again. Running it twice "
        "duplicates nothing.",
    )
    migration.add_argument(
        "--from", dest="source", required=True, metavar="URL", help="the store to copy from"
    )
    migration.add_argument(
        "--to", dest="target", required=True, metavar="URL", help="the store to copy into"
    )


def run_flags(run: argparse.ArgumentParser) -> None:
    run.description = (
        "Exit codes: 0 final test run passed, 1 finished with tests not passing, "
        "2 usage or configuration error, 3 stopped by budget or a limit, 4 stopped by a gate."
    )
    add_session_options(run)
    add_json(run)
    run.add_argument(
        "--workspace", required=True, metavar="DIR", type=workspace_dir, help="the project to fix"
    )


def tui_flags(tui: argparse.ArgumentParser) -> None:
    tui.description = "Without --workspace, the dashboard opens idle on the memory browser."
    add_session_options(tui)
    tui.add_argument(
        "--workspace", metavar="DIR", type=workspace_dir, help="the project to fix in a session"
    )


def demo_flags(demo: argparse.ArgumentParser) -> None:
    demo.description = (
        "alpha fixes its bug on an empty memory scope and stores the fix; beta, a "
        "different project on a new response chain, must find that fix before its first edit. "
        "In the dashboard you confirm each store. Exit 0 when all five checks hold, 1 when one "
        "fails, 3 when the operator declined alpha's store (the experiment could not run)."
    )
    demo.add_argument(
        "--headless", action="store_true", help="print to the terminal instead of the dashboard"
    )
    add_memory_url(demo)


def mcp_flags(mcp: argparse.ArgumentParser) -> None:
    mcp.description = (
        "A Model Context Protocol server on stdin/stdout: search_fixes, get_fix, "
        "propose_fix (into the pending queue: `memory pending`, `memory confirm`), "
        "proposal_status, report_outcome. Nothing reaches memory without your confirmation."
    )
    add_memory_url(mcp)
    mcp.add_argument(
        "--scope", type=scope_name, help="the scope searched and proposed into (default: default)"
    )


def doctor_flags(doctor: argparse.ArgumentParser) -> None:
    doctor.description = (
        "One line per check, and without --workspace a last line naming the project's checks "
        "left out; exit 2 when one fails."
    )
    add_session_options(doctor)
    doctor.add_argument(
        "--workspace", metavar="DIR", type=workspace_dir, help="also check this project"
    )


def ledger_flags(ledger: argparse.ArgumentParser) -> None:
    ledger.description = (
        "Spend of each live session from the ledger in ASTRA_DATA_DIR, and the "
        "total against ASTRA_BUDGET_USD. Rehearsals cost nothing and are not listed."
    )
    add_json(ledger)


def config_flags(configuration: argparse.ArgumentParser) -> None:
    configuration.description = (
        "The config file keeps the theme, memory_url, scope and budget_usd (each live "
        "session's limit, as --budget-usd; ASTRA_BUDGET_USD is another: all live sessions' "
        "together) between runs. The environment and flags override it."
    )
    actions = configuration.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("path", help="where the config file is")
    add_json(actions.add_parser("show", help="each value in force and where it comes from"))
    setter = actions.add_parser("set", help="keep one value (or --unset it)")
    setter.add_argument("key", choices=("theme", "memory_url", "scope", "budget_usd"))
    setter.add_argument("value", nargs="?", help="the value (none with --unset)")
    setter.add_argument("--unset", action="store_true", help="remove the key")


def model_flags(model: argparse.ArgumentParser) -> None:
    actions = model.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser(
        "prepare",
        help="export the embedding model to ONNX now (else done on first use), with progress",
    )


def smoke_flags(smoke: argparse.ArgumentParser) -> None:
    steps = smoke.add_subparsers(dest="step", metavar="STEP", required=True)
    store = steps.add_parser("store", help="store and find a temporary fix; prints its id")
    add_memory_url(store)
    verify = steps.add_parser("verify", help="confirm a smoke record persisted, then delete it")
    add_memory_url(verify)
    verify.add_argument("--memory-id", required=True, metavar="ID", type=id_prefix)


# name: (its line in `--help`, what adds its flags and actions)
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "memory": ("browse, search, audit and prune memory records", memory_flags),
    "run": ("one session on a workspace, without the dashboard", run_flags),
    "tui": ("the dashboard (the default command)", tui_flags),
    "demo": ("the two-session experiment on demo_projects, offline", demo_flags),
    "mcp": ("serve the memory to MCP clients (Claude Code, Codex, ...) over stdio", mcp_flags),
    "doctor": (
        "the checks every session runs first: store, model, sandbox, git tree, tests "
        "(--live: the key and the base URL too)",
        doctor_flags,
    ),
    "ledger": ("live spend by session", ledger_flags),
    "sessions": (
        "past sessions: when, workspace, model, status, turns, cost, matches, stored ids",
        sessions_flags,
    ),
    "report": (
        "memory's effect: sessions that received a match against those that did not",
        report_flags,
    ),
    "serve": ("the dashboard in a web browser (textual-serve), on this machine", serve_flags),
    "config": ("the config file: its path, the values in force, one value set", config_flags),
    "model": ("the embedding model", model_flags),
    "smoke": ("check the store end to end: store a temporary fix, then verify it", smoke_flags),
}


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(given or ["tui"]).parse_args(given or ["tui"])  # bare: the dashboard
    if args.command is None:  # `astra-memory --env-file FILE`: the dashboard too
        args = build_parser(["tui"]).parse_args([*given, "tui"])
    try:
        settings = exact_urls(args, with_config(args, settings_from(args.env_file)))
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


def settings_from(env_file: Path | None) -> Settings:
    """The environment over a `.env` file: the one named, which must exist, else the config
    dir's. The current folder's is never read (it may be the project under test)."""
    if env_file is not None and not env_file.is_file():
        raise CommandError(f"--env-file {env_file}: no such file", 2)
    return Settings.from_environment(env_file=env_file or default_env_file())


def with_config(args: argparse.Namespace, settings: Settings) -> Settings:
    """The config file's values where neither a flag nor the environment gives one."""
    if args.command == "config":
        return settings  # it reports the file; a broken file must not stop it
    path = config_path()
    config = load_config(path)
    args.config = config
    if hasattr(args, "budget_usd") and args.budget_usd is None:
        args.budget_usd = config.budget_usd
    if args.command in ("tui", "run", "mcp") and args.scope is None:
        args.scope = config.scope
    if settings.astra_memory_url is None and config.memory_url:
        try:  # a bad URL must say where it came from, or no command says what to fix
            url = resolve_memory_url(config.memory_url)
        except CommandError as exc:
            raise CommandError(f"memory_url in the config file {path}: {exc}", 2) from None
        settings = replace(settings, astra_memory_url=url)
    return settings


def exact_urls(args: argparse.Namespace, settings: Settings) -> Settings:
    """Every memory URL given, by flag or environment, with its SQLite path resolved."""
    for name in ("memory", "source", "target"):
        if getattr(args, name, None) is not None:  # given, if only as '': refused, not unset
            setattr(args, name, resolve_memory_url(getattr(args, name)))
    if settings.astra_memory_url:
        settings = replace(settings, astra_memory_url=resolve_memory_url(settings.astra_memory_url))
    return settings


def command_for(args: argparse.Namespace) -> Callable[..., Awaitable[int]]:
    """The command's function: `app.cli.commands.<command>.<command>`. Its module loads only
    now: the dashboard's first frame must not wait for the agent, memory and HTTP layers
    that the other commands import (see tests/test_layers.py)."""
    module = importlib.import_module(f"app.cli.commands.{args.command}")
    return getattr(module, args.command)


def _fail(message: str, code: int) -> int:
    print(f"astra-memory: error: {mask_url_passwords(shown(message))}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
