"""The project's own tests: which command runs them, and what its output says they counted.

A user's project may have its own virtualenv, a `make test`, `go test`, `cargo test` or
`npm test`, so the command comes from the operator first, then the project's config, and
only then from detection. Its exit code alone decides pass or fail; the counts are read
from the output where a known runner printed them, and are None (unknown) otherwise.
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from memory.text import without_terminal_codes

CONFIG_FILE = ".astra-memory.toml"
CONFIG_KEY = "test-command"
SHELL_OPERATORS = frozenset("();<>|&")


class TestCommandError(ValueError):
    """The test command could not be resolved; the message is one line for the operator."""

    __test__ = False  # not a pytest test class


@dataclass(frozen=True)
class TestCommand:
    """What runs the tests, how to show it, and where it came from."""

    __test__ = False  # not a pytest test class

    argv: tuple[str, ...]
    display: str
    source: str  # "flag", "pyproject.toml", ".astra-memory.toml", "detected: .venv", ...


OUR_PACKAGES = ("agent", "app", "memory", "widgets")
OUR_ROOT = Path(__file__).resolve().parents[1]  # the folder that holds our packages
# `python -m pytest` with our four packages hidden: a project's own `app/` (or one it expects
# installed in another environment) must never resolve to ours, while the project's folder
# stays first on sys.path as `-m` puts it there.
HIDE_OURS_THEN_PYTEST = """
import os, sys
from importlib.machinery import PathFinder

OURS, ROOT = frozenset(sys.argv[1].split(",")), os.path.realpath(sys.argv[2])


class HideOurs:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if path is not None or name not in OURS:
            return None
        elsewhere = [p for p in sys.path if os.path.realpath(p or ".") != ROOT]
        spec = PathFinder.find_spec(name, elsewhere)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return spec


if os.path.realpath(os.getcwd()) != ROOT:  # else the project is ours, and so are they
    sys.meta_path.insert(0, HideOurs)
sys.argv = ["pytest", *sys.argv[3:]]
import runpy

runpy.run_module("pytest", run_name="__main__", alter_sys=True)  # `python -m pytest`
"""
OURS = TestCommand(
    (sys.executable, "-c", HIDE_OURS_THEN_PYTEST, ",".join(OUR_PACKAGES), str(OUR_ROOT), "-q"),
    "python -m pytest -q",
    "detected: astra-memory's own Python, no venv in the project",
)


def resolve_test_command(workspace: Path, explicit: str | None = None) -> TestCommand:
    """The command from the flag, else the workspace's config, else detection.

    Resolve against the user's own workspace, not a session copy of it: a virtualenv is
    rarely tracked by git, and one with absolute paths only works where it was made.
    """
    if explicit is not None:
        return TestCommand(_split(explicit, "--test-cmd"), explicit.strip(), "flag")
    root = Path(workspace).resolve()
    configured = [
        (name, command)
        for name, command in (
            ("pyproject.toml", _configured(root / "pyproject.toml", in_tool_table=True)),
            (CONFIG_FILE, _configured(root / CONFIG_FILE, in_tool_table=False)),
        )
        if command is not None
    ]
    if len(configured) > 1:
        raise TestCommandError(
            f"{CONFIG_KEY} is set in both pyproject.toml and {CONFIG_FILE} in {root}; keep one"
        )
    if configured:
        source, (argv, display) = configured[0]
        return TestCommand(argv, display, source)
    for venv in (".venv", "venv"):
        python = root / venv / "bin" / "python"
        if python.is_file():
            return TestCommand(
                (str(python), "-m", "pytest", "-q"),
                f"{venv}/bin/python -m pytest -q",
                f"detected: {venv}",
            )
    return OURS


def _configured(path: Path, *, in_tool_table: bool) -> tuple[tuple[str, ...], str] | None:
    """(argv, display) of test-command in a TOML file, None when it is not set there."""
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise TestCommandError(f"cannot read {path}: {_one_line(error)}") from error
    tool = data.get("tool")
    table = tool.get("astra-memory") if isinstance(tool, dict) else None
    if not in_tool_table and set(data) - {"tool"}:
        table = data  # .astra-memory.toml may also set the key at its top level
    if table is None:
        return None
    if not isinstance(table, dict):
        raise TestCommandError(f"[tool.astra-memory] in {path} must be a table")
    unknown = sorted(set(table) - {CONFIG_KEY} - ({"tool"} if table is data else set()))
    if unknown:  # `test_command` was ignored without a word, and the default ran instead
        where = "" if table is data else " [tool.astra-memory] of"
        raise TestCommandError(
            f"unknown key {unknown[0]!r} in{where} {path}: the one key read is {CONFIG_KEY!r}"
        )
    where = f"{CONFIG_KEY} in {path}"
    value = table.get(CONFIG_KEY)
    if value is None:
        return None
    if isinstance(value, str):
        return _split(value, where), value.strip()
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        return tuple(value), shlex.join(value)
    raise TestCommandError(f"{where} must be a string or a non-empty list of strings")


def _split(command: str, where: str) -> tuple[str, ...]:
    """argv of a command line; one with shell operators (&&, |, ;, >) runs through sh -c."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError as error:
        raise TestCommandError(f"{where}: cannot parse {command!r}: {error}") from error
    if not tokens:
        raise TestCommandError(f"{where}: the test command is empty")
    if any(token and set(token) <= SHELL_OPERATORS for token in tokens):
        return ("/bin/sh", "-c", command)
    return tuple(shlex.split(command))


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


# Counts

Counts = tuple[int | None, int | None]  # (passed, failed); None where the output did not say

_PYTEST = re.compile(
    r"^=*\s*\d+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b"
    r".* in \d+(\.\d+)?s\b"
)
_PYTEST_NONE = re.compile(r"^=*\s*no tests ran\b.* in \d+(\.\d+)?s\b")
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?)\b")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ")
_UNITTEST_END = re.compile(r"^(OK|FAILED)(?: \((.*)\))?\s*$")
_CARGO = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed;")
_JEST = re.compile(r"^Tests:\s+(.*\d+ total)")
_VITEST = re.compile(r"^\s*Tests\s{2,}(.*)\(\d+\)")
_GO_TEST = re.compile(r"^--- (PASS|FAIL): ")
_GO_PACKAGE = re.compile(
    r"^(ok|FAIL)\s+\S+\s+(\d+(\.\d+)?s|\(cached\)|\[(no test files|build failed|setup failed)\])"
)
_PASSED = re.compile(r"\b(\d+) passed\b")
_FAILED = re.compile(r"\b(\d+) failed\b")


def read_counts(output: str) -> Counts:
    """(passed, failed) as the runner reported them: pytest (errors count as failed),
    unittest, cargo test, jest, vitest, go test, or a plain 'N passed, N failed' line."""
    lines = [line.rstrip() for line in without_terminal_codes(output).splitlines()]
    for reader in (_pytest, _unittest, _cargo, _jest, _vitest, _go, _plain):
        counts = reader(lines)
        if counts is not None:
            return counts
    return None, None


def _pytest(lines: list[str]) -> Counts | None:
    for line in reversed(lines):
        if _PYTEST_NONE.match(line):
            return 0, 0
        if _PYTEST.match(line):
            found = {"passed": 0, "failed": 0, "error": 0}
            for number, kind in _PYTEST_COUNT.findall(line):
                found[kind.removesuffix("s")] += int(number)
            return found["passed"], found["failed"] + found["error"]
    return None


def _unittest(lines: list[str]) -> Counts | None:
    for index in range(len(lines) - 1, -1, -1):
        ran = _UNITTEST_RAN.match(lines[index])
        if not ran:
            continue
        for after in lines[index + 1 :]:
            end = _UNITTEST_END.match(after)
            if end:
                details = dict(
                    (key.strip(), int(value))
                    for key, value in re.findall(r"([a-z ]+)=(\d+)", end.group(2) or "")
                )
                failed = sum(details.get(k, 0) for k in ("failures", "errors"))
                failed += details.get("unexpected successes", 0)
                not_passed = failed + details.get("skipped", 0)
                not_passed += details.get("expected failures", 0)
                return int(ran.group(1)) - not_passed, failed
        return None
    return None


def _cargo(lines: list[str]) -> Counts | None:
    results = [match.groups() for line in lines if (match := _CARGO.match(line))]
    if not results:
        return None
    return sum(int(passed) for passed, _ in results), sum(int(failed) for _, failed in results)


def _jest(lines: list[str]) -> Counts | None:
    return _last_tally(lines, _JEST)


def _vitest(lines: list[str]) -> Counts | None:
    return _last_tally(lines, _VITEST)


def _last_tally(lines: list[str], pattern: re.Pattern[str]) -> Counts | None:
    for line in reversed(lines):
        match = pattern.match(line)
        if match:
            passed = _PASSED.search(match.group(1))
            failed = _FAILED.search(match.group(1))
            return int(passed[1]) if passed else 0, int(failed[1]) if failed else 0
    return None


def _go(lines: list[str]) -> Counts | None:
    """go test: -v prints every test (=== RUN); without it only failures are listed."""
    results = [match[1] for line in lines if (match := _GO_TEST.match(line))]
    packages = [match[1] for line in lines if (match := _GO_PACKAGE.match(line))]
    if not results and not packages:
        return None
    verbose = any(line.startswith("=== RUN") for line in lines)
    failed: int | None = results.count("FAIL")
    if not failed and "FAIL" in packages:
        failed = None  # a package failed to build or set up: no test said so
    return (results.count("PASS") if verbose else None), failed


def _plain(lines: list[str]) -> Counts | None:
    for line in reversed(lines):
        passed, failed = _PASSED.search(line), _FAILED.search(line)
        if passed and failed:
            return int(passed[1]), int(failed[1])
    return None
