"""Which command runs a project's tests, what its output counts, and runs of non-pytest
commands through the workspace tools (a shell script, the project's own interpreter)."""

from __future__ import annotations

import os
import sys
import textwrap
import venv
from pathlib import Path

import pytest

from agent.project_tests import (
    OURS,
    TestCommand,
    TestCommandError,
    read_counts,
    resolve_test_command,
)
from agent.workspace_tools import WorkspaceTools

BASE_ENV = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def make_venv_python(root: Path, venv: str) -> Path:
    """A stand-in interpreter at VENV/bin/python: a link to ours, as a real venv has."""
    python = root / venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    return python


# Resolution, highest source first


def test_the_flag_wins_over_config_and_detection(tmp_path: Path):
    write(tmp_path, "pyproject.toml", '[tool.astra-memory]\ntest-command = "make test"\n')
    make_venv_python(tmp_path, ".venv")

    command = resolve_test_command(tmp_path, "  ./run_tests.sh --fast ")

    assert command == TestCommand(("./run_tests.sh", "--fast"), "./run_tests.sh --fast", "flag")


def test_pyproject_tool_table_wins_over_detection(tmp_path: Path):
    write(tmp_path, "pyproject.toml", '[tool.astra-memory]\ntest-command = "tox -e py311"\n')
    make_venv_python(tmp_path, ".venv")

    command = resolve_test_command(tmp_path)

    assert command == TestCommand(("tox", "-e", "py311"), "tox -e py311", "pyproject.toml")


@pytest.mark.parametrize(
    "text",
    [
        'test-command = ["go", "test", "./..."]\n',
        '[tool.astra-memory]\ntest-command = "go test ./..."\n',
    ],
)
def test_astra_memory_toml_at_top_level_or_in_the_tool_table(tmp_path: Path, text: str):
    write(tmp_path, "pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path, ".astra-memory.toml", text)

    command = resolve_test_command(tmp_path)

    assert command.argv == ("go", "test", "./...")
    assert (command.display, command.source) == ("go test ./...", ".astra-memory.toml")


def test_shell_operators_run_through_sh(tmp_path: Path):
    command = resolve_test_command(tmp_path, "make build && make test | tee out.log")

    assert command.argv == ("/bin/sh", "-c", "make build && make test | tee out.log")


@pytest.mark.parametrize(
    ("venv", "source"), [(".venv", "detected: .venv"), ("venv", "detected: venv")]
)
def test_detection_uses_the_workspace_interpreter(tmp_path: Path, venv: str, source: str):
    python = make_venv_python(tmp_path, venv)

    command = resolve_test_command(tmp_path)

    # The venv's own path, not the interpreter its link points at: that is what makes it a venv.
    assert command.argv == (str(python.absolute()), "-m", "pytest", "-q")
    assert (command.display, command.source) == (f"{venv}/bin/python -m pytest -q", source)


def test_detection_falls_back_to_our_interpreter(tmp_path: Path):
    write(tmp_path, "pyproject.toml", "[tool.ruff]\nline-length = 100\n")

    assert resolve_test_command(tmp_path) == OURS
    assert OURS.argv[:2] == (sys.executable, "-c") and OURS.argv[-1] == "-q"
    assert (OURS.display, OURS.source) == (
        "python -m pytest -q",
        "detected: astra-memory's own Python, no venv in the project",
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"pyproject.toml": "[tool.astra-memory\n"}, "cannot read .*pyproject.toml: "),
        ({".astra-memory.toml": "test-command = 3\n"}, "must be a string or a non-empty list"),
        ({".astra-memory.toml": "test-command = []\n"}, "must be a string or a non-empty list"),
        ({"pyproject.toml": '[tool]\nastra-memory = "x"\n'}, "must be a table"),
        ({"pyproject.toml": '[tool.astra-memory]\ntest-command = "  "\n'}, "is empty"),
        ({".astra-memory.toml": 'test-command = "pytest \'unclosed"\n'}, "cannot parse"),
        (  # ignored without a word, and the default command ran instead
            {"pyproject.toml": '[tool.astra-memory]\ntest_command = "make test"\n'},
            "unknown key 'test_command' in \\[tool.astra-memory\\] of .*pyproject.toml: "
            "the one key read is 'test-command'",
        ),
        ({".astra-memory.toml": 'test_command = "make test"\n'}, "unknown key 'test_command' in"),
        (
            {
                "pyproject.toml": '[tool.astra-memory]\ntest-command = "a"\n',
                ".astra-memory.toml": 'test-command = "b"\n',
            },
            "set in both pyproject.toml and .astra-memory.toml",
        ),
    ],
)
def test_a_malformed_config_is_one_clear_line(tmp_path: Path, files: dict[str, str], message: str):
    for name, text in files.items():
        write(tmp_path, name, text)

    with pytest.raises(TestCommandError, match=message) as caught:
        resolve_test_command(tmp_path)

    assert "\n" not in str(caught.value)


def test_an_empty_flag_is_an_error(tmp_path: Path):
    with pytest.raises(TestCommandError, match="--test-cmd: the test command is empty"):
        resolve_test_command(tmp_path, "")


# Counts, from real output of each runner

PYTEST_FAILING = """\
..F.E                                                                    [100%]
==================================== ERRORS ====================================
____________________ ERROR at setup of test_uses_broken ________________________
=========================== short test summary info ============================
FAILED test_project.py::test_bad - assert 1 == 2
ERROR test_project.py::test_uses_broken - RuntimeError: fixture broke
================= 1 failed, 3 passed, 1 error, 2 warnings in 0.05s =================
"""
UNITTEST_FAILING = """\
.FEsx
======================================================================
ERROR: test_c (test_u.T.test_c)
----------------------------------------------------------------------
RuntimeError: x

----------------------------------------------------------------------
Ran 5 tests in 0.010s

FAILED (failures=1, errors=1, skipped=1, expected failures=1)
"""
CARGO_FAILING = """\
     Running unittests src/lib.rs (target/debug/deps/ct-c4066ebb79ee0019)

running 3 tests
test tests::ok ... ok
test tests::slow ... ignored
test tests::bad ... FAILED

failures:
    tests::bad

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.26s

error: test failed, to rerun pass `--lib`
"""
CARGO_PASSING_TWO_TARGETS = """\
     Running unittests src/lib.rs (target/debug/deps/ct-c4066ebb79ee0019)

running 2 tests
test tests::ok ... ok
test tests::other ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests ct

running 1 test
test src/lib.rs - add (line 3) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.21s
"""
JEST_FAILING = """\
 FAIL  src/sum.test.js
  \u25cf sum \u203a adds negatives

    expect(received).toBe(expected) // Object.is equality

 PASS  src/format.test.js

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 4 passed, 5 total
Snapshots:   0 total
Time:        0.512 s, estimated 1 s
Ran all test suites.
"""
DIM, BOLD, OFF = "\x1b[2m", "\x1b[1m", "\x1b[0m"
RED, GREEN, GREY = "\x1b[31m", "\x1b[32m", "\x1b[90m"
VITEST_FAILING = (
    f" {RED}\u276f{OFF} src/sum.test.ts  (3 tests | 1 failed) 4ms\n"
    f"   {RED}\u00d7{OFF} sum > adds negatives\n\n"
    f"{DIM} Test Files {OFF} {BOLD}{RED}1 failed{OFF}{DIM} | {OFF}{BOLD}{GREEN}1 passed{OFF}"
    f"{GREY} (2){OFF}\n"
    f"{DIM}      Tests {OFF} {BOLD}{RED}1 failed{OFF}{DIM} | {OFF}{BOLD}{GREEN}5 passed{OFF}"
    f"{GREY} (6){OFF}\n"
    f"{DIM}   Start at {OFF} 10:12:01\n"
    f"{DIM}   Duration {OFF} 402ms\n"
)
GO_VERBOSE = """\
=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestSplit
=== RUN   TestSplit/empty
    split_test.go:21: got [""], want []
--- FAIL: TestSplit (0.00s)
    --- FAIL: TestSplit/empty (0.00s)
=== RUN   TestJoin
--- PASS: TestJoin (0.00s)
FAIL
FAIL\texample.com/strs\t0.002s
FAIL
"""
GO_QUIET_FAILING = """\
--- FAIL: TestSplit (0.00s)
    split_test.go:21: got [""], want []
FAIL
FAIL\texample.com/strs\t0.002s
ok  \texample.com/nums\t(cached)
FAIL
"""
GO_QUIET_PASSING = "ok  \texample.com/strs\t0.002s\n?   \texample.com/cmd\t[no test files]\n"
GO_BUILD_FAILED = """\
# example.com/strs
./split.go:9:2: undefined: strings.Spilt
FAIL\texample.com/strs [build failed]
FAIL
"""


@pytest.mark.parametrize(
    ("output", "counts"),
    [
        (PYTEST_FAILING, (3, 2)),
        ("....\n4 passed in 0.01s\n", (4, 0)),
        ("1 passed, 2 xfailed, 1 skipped in 65.30s (0:01:05)\n", (1, 0)),
        ("print says 9 passed, 1 failed\nno tests ran in 0.01s\n", (0, 0)),
        (UNITTEST_FAILING, (1, 2)),
        ("...\n" + "-" * 70 + "\nRan 3 tests in 0.001s\n\nOK\n", (3, 0)),
        (CARGO_FAILING, (1, 1)),
        (CARGO_PASSING_TWO_TARGETS, (3, 0)),
        (JEST_FAILING, (4, 1)),
        ("Tests:       3 passed, 3 total\n", (3, 0)),
        (VITEST_FAILING, (5, 1)),
        (GO_VERBOSE, (2, 1)),
        (GO_QUIET_FAILING, (None, 1)),
        (GO_QUIET_PASSING, (None, 0)),
        (GO_BUILD_FAILED, (None, None)),
        ("checking parser...\nsummary: 7 passed, 2 failed\n", (7, 2)),
        ("Traceback (most recent call last):\n", (None, None)),
        ("make: *** [Makefile:4: test] Error 2\n", (None, None)),
        ("", (None, None)),
    ],
)
def test_read_counts(output: str, counts: tuple[int | None, int | None]):
    assert read_counts(output) == counts


# Runs through the workspace tools


async def test_a_shell_script_runner_decides_by_exit_code_and_counts_plain_lines(tmp_path: Path):
    script = write(
        tmp_path,
        "check.sh",
        """\
        #!/bin/sh
        if grep -q fixed app.txt; then echo "3 passed, 0 failed"; exit 0; fi
        echo "2 passed, 1 failed"; exit 1
        """,
    )
    script.chmod(0o755)
    write(tmp_path, "app.txt", "broken\n")
    command = resolve_test_command(tmp_path, "./check.sh")
    tools = WorkspaceTools(tmp_path, base_env=BASE_ENV, test_command=command, test_timeout_s=10)

    red = await tools.run_tests()
    tools.apply_edit("app.txt", "broken", "fixed")
    green = await tools.run_tests()

    assert (red.exit_code, red.passed, red.failed, red.confirmed_outcome) == (1, 2, 1, None)
    assert (green.exit_code, green.passed, green.failed) == (0, 3, 0)
    assert green.command == "./check.sh"
    assert green.confirmed_outcome == "./check.sh passed with exit code 0 (3 passed)"


async def test_unknown_counts_are_shown_as_unknown(tmp_path: Path):
    command = resolve_test_command(tmp_path, "sh -c 'echo all good'")
    tools = WorkspaceTools(tmp_path, base_env=BASE_ENV, test_command=command, test_timeout_s=10)

    run = await tools.run_tests()

    assert (run.exit_code, run.passed, run.failed) == (0, None, None)
    assert run.summary == "exit code 0, counts unknown"
    assert run.confirmed_outcome == "sh -c 'echo all good' passed with exit code 0"
    assert '"passed": null' in run.for_model()


async def test_the_detected_venv_interpreter_runs_the_tests(tmp_path: Path):
    # A real venv of the project's own, which finds pytest through a .pth file.
    venv.create(tmp_path / ".venv", with_pip=False)
    (site,) = (tmp_path / ".venv" / "lib").glob("python3*/site-packages")
    (site / "ours.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")))
    write(tmp_path, "pytest.ini", "[pytest]\n")
    write(
        tmp_path,
        "test_one.py",
        f"""\
        import sys

        def test_runs_in_the_project_venv():
            assert sys.prefix == {str(tmp_path / ".venv")!r}
        """,
    )
    command = resolve_test_command(tmp_path)
    tools = WorkspaceTools(tmp_path, base_env=BASE_ENV, test_command=command, test_timeout_s=60)

    run = await tools.run_tests()

    assert run.exit_code == 0, run.output
    assert (run.passed, run.failed, run.command) == (1, 0, ".venv/bin/python -m pytest -q")
