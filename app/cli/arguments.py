"""The command line's grammar shared by several commands: the one-line usage errors, the
checks each flag's value gets, and the session options of run, tui, demo and doctor."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from app.config.settings import budget_usd
from app.sessions.options import DEFAULT_MAX_OUTPUT_TOKENS, REQUEST_TIMEOUT_S


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line on stderr and exit 2, as every other error is, pointing to
    the help of the (sub)command that refused it. An unknown flag is named first: argparse
    would say that ACTION is missing, or leave it to the top parser's help."""

    given: Sequence[str] = ()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.given = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        unknown = [
            arg
            for arg in self.given
            if arg.startswith("-") and arg.split("=")[0] not in self._option_string_actions
        ]
        if message.startswith("the following arguments are required") and unknown:
            message = f"unrecognized arguments: {' '.join(unknown)}"
        self.exit(2, f"astra-memory: error: {message} (see {self.prog} --help)\n")


def whole_number(text: str) -> int:
    """An int, or a usage error saying what was wanted (argparse would say 'invalid
    positive_int value', naming our function)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    value = whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def at_least_one(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def match_count(text: str) -> int:
    """--top-k: 1 to 10, as the search tools take."""
    value = whole_number(text)
    if not 1 <= value <= 10:
        raise argparse.ArgumentTypeError(f"must be from 1 to 10, got {value}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text!r}")
    return value


def dollars(text: str) -> float:
    try:
        return budget_usd(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def score(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:  # nan fails both comparisons
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def is_utf8(text: str) -> bool:
    """False when `text` came from bytes that are not UTF-8: Python hands argv's undecodable
    bytes over as lone surrogates, which no file, database or terminal can take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(text: str, what: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"the {what} is empty")
    if not is_utf8(text):
        raise argparse.ArgumentTypeError(f"the {what} holds bytes that are not UTF-8 text")
    return text


def query_text(text: str) -> str:
    return _text(text, "query")


def scope_name(text: str) -> str:
    """A scope: not blank, UTF-8 (a usage error, exit 2, as every other flag's)."""
    return _text(text, "scope")


def workspace_dir(text: str) -> str:
    """The project's folder, absolute: the reports and the history name it as the user would
    find it again from anywhere, not as `.`."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the workspace is empty")
    return str(Path(text).resolve())


def id_prefix(text: str) -> str:
    """A memory or session id, or a prefix of one: not blank, since an empty prefix would
    match every id (`memory delete '' --yes` would delete whatever record is there)."""
    return _text(text, "id")


def add_memory_url(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--memory URL`, the one flag every command that opens the memory takes."""
    parser.add_argument(
        "--memory",
        metavar="URL",
        help="memory store URL, e.g. sqlite:///path/memory.sqlite3 (default: ASTRA_MEMORY_URL, "
        "else memory.sqlite3 in ASTRA_DATA_DIR)",
    )


def add_memory_id(parser: argparse.ArgumentParser) -> None:
    """The record an action works on, by its id or a unique prefix of it."""
    parser.add_argument(
        "memory_id", metavar="ID", type=id_prefix, help="a memory id, or a unique prefix of one"
    )


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def add_session_options(parser: argparse.ArgumentParser) -> None:
    """DESIGN's `session options`, shared by the commands that run sessions."""
    group = parser.add_argument_group("session options")
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
    group.add_argument(
        "--allow-insecure-base-url",
        action="store_true",
        help="send the key to a base URL that is not https (loopback needs no flag)",
    )
    add_memory_url(group)
    group.add_argument(
        "--scope", type=scope_name, help="memory scope (default: the config file's, else default)"
    )
    group.add_argument(
        "--store",
        choices=("ask", "yes", "no"),
        default="ask",
        help="confirm memory writes: ask on a terminal (declines without one), yes, or no",
    )
    group.add_argument(
        "--budget-usd",
        type=dollars,
        metavar="X",
        help="spending limit for this session (default: the config file's)",
    )
    group.add_argument(
        "--max-turns", type=at_least_one, default=12, metavar="N", help="model turn limit"
    )
    # the Responses API (issue 10)
    group.add_argument(
        "--reasoning-effort",
        choices=("minimal", "low", "medium", "high"),
        default="low",
        help="how hard the model reasons before answering (default: low)",
    )
    group.add_argument(
        "--max-output-tokens",
        type=at_least_one,
        metavar="N",
        help="output cap of each response, reasoning included; it sets each request's "
        f"worst-case cost (default: {DEFAULT_MAX_OUTPUT_TOKENS}, lowered to what the budget "
        "leaves)",
    )
    group.add_argument(
        "--request-timeout",
        type=seconds,
        default=REQUEST_TIMEOUT_S,
        metavar="SECONDS",
        help="give up on a request after this long; it is charged its worst case, not "
        f"retried (default: {REQUEST_TIMEOUT_S:g}; connecting: 5)",
    )
    group.add_argument(
        "--no-store",
        action="store_true",
        help="the model's server keeps no responses (also ASTRA_RESPONSE_STORAGE=off): every "
        "request resends the conversation; not memory writes, which --store decides",
    )
    group.add_argument(
        "--test-cmd",
        metavar="CMD",
        help="the project's test command (default: [tool.astra-memory] test-command, else "
        "pytest through the workspace's own venv, else ours)",
    )
    group.add_argument(
        "--test-timeout",
        type=seconds,
        default=120.0,
        metavar="S",
        help="seconds one test run may take (default 120)",
    )
    group.add_argument(
        "--allow-dirty",
        action="store_true",
        help="start from a git checkout's uncommitted changes instead of refusing it",
    )
    group.add_argument(
        "--on-success",
        choices=("apply", "branch", "discard"),
        help="at the end: apply the diff to the checkout, keep branch astra/<session>, or "
        "discard it (headless default: branch; the dashboard asks)",
    )
    group.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the test command unconfined: needed where bubblewrap (bwrap) is missing",
    )
    group.add_argument(
        "--in-place",
        action="store_true",
        help="edit the workspace itself, with no worktree or copy and no undo",
    )
    group.add_argument(
        "--edits",
        choices=("ask", "auto"),
        help="ask the operator before each edit, or apply them (default: ask in the "
        "dashboard and on a terminal, auto without one)",
    )

    group.add_argument(
        "--min-relevance",
        choices=("strong", "possible", "weak"),
        help="weakest match label the model is given from memory (default: "
        "ASTRA_MIN_RELEVANCE, else possible)",
    )


def package_version() -> str:
    """The installed version, as `--version` and the MCP server's handshake say it; looked
    up only when asked (importlib.metadata costs every other command about 15 ms)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("astra-codebase-memory")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
