"""Preflight checks against real SQLite files, a real unreachable VectorAI address, real
test commands and real git checkouts."""

from __future__ import annotations

import os
import sys
import time
import venv
from pathlib import Path

import pytest

from agent.budget import Price
from agent.preflight import (
    PROBE_ID,
    Check,
    check_embedder,
    check_git_tree,
    check_live,
    check_store,
    check_test_command,
    run_preflight,
)
from agent.project_tests import resolve_test_command
from agent.sandbox import find_sandbox
from agent.workspace_tools import WorkspaceTools
from memory.embedding.torch_embedder import SentenceTransformerEmbedder
from memory.stores.protocol import open_store
from tests.agent.gitrepo import isolate_git, repository
from tests.fakes import PASSING, HashEmbedder

BASE_ENV = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@pytest.fixture(autouse=True)
def git_identity(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    isolate_git(tmp_path_factory.mktemp("git"), monkeypatch)


def script_project(root: Path, body: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    script = root / "check.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return root


# The store


async def test_a_writable_sqlite_store_passes_and_keeps_nothing_of_the_probe(
    db_path: Path, service
):
    await service.store_fix_memory("Strip the key", "KeyError", ["app.py"], PASSING)

    check = await check_store(f"sqlite:///{db_path}")

    assert check == Check("store", True, f"sqlite:///{db_path}: 1 record(s), writable")
    store = open_store(f"sqlite:///{db_path}")
    try:
        assert await store.count() == 1 and await store.get(PROBE_ID) is None
    finally:
        await store.close()


async def test_an_unwritable_sqlite_path_fails(tmp_path: Path):
    (tmp_path / "a-file").write_text("")

    check = await check_store(f"sqlite:///{tmp_path}/a-file/memory.sqlite3")

    assert not check.ok and check.name == "store" and "\n" not in check.detail


async def test_an_unreachable_vectorai_server_fails_quickly():
    started = time.monotonic()

    check = await check_store("vectorai://127.0.0.1:1")

    assert not check.ok and "127.0.0.1:1" in check.detail and "\n" not in check.detail
    assert time.monotonic() - started < 20


async def test_a_malformed_memory_url_fails():
    check = await check_store("postgres://db/memory")

    assert not check.ok and "unsupported memory URL" in check.detail


# The embedding model, live use


async def test_the_embedder_check():
    assert await check_embedder(HashEmbedder()) == Check(
        "embedding model", True, "test/hash-embedder loaded"
    )


async def test_a_missing_embedding_model_fails(tmp_path: Path):
    check = await check_embedder(SentenceTransformerEmbedder(tmp_path / "no-model"))

    assert not check.ok and "no sentence-transformers model at" in check.detail


@pytest.mark.parametrize(
    ("model", "key", "override", "expected"),
    [
        (
            "gpt-6-astra",
            "sk-live-abcdef",
            None,
            [(True, "set"), (True, "gpt-6-astra: $10 / $50 per million in / out")],
        ),
        (
            "gpt-6-astra",
            None,
            None,
            [
                (
                    False,
                    "OPENAI_API_KEY is not set: set it in the environment or in the .env beside",
                ),
                (True, "gpt-6-astra"),
            ],
        ),
        ("mystery-model", "sk-x", None, [(True, "set"), (False, "no known price")]),
        ("mystery-model", "sk-x", Price(1.5, 2.0), [(True, "set"), (True, "$1.5 / $2 per")]),
    ],
)
def test_live_checks(model, key, override, expected):
    checks = check_live(model, key, override)

    assert [check.name for check in checks] == ["api key", "model price"]
    for check, (ok, detail) in zip(checks, expected, strict=True):
        assert check.ok is ok and detail in check.detail
    assert all(key is None or key not in check.detail for check in checks)


# The test command


async def test_a_failing_test_command_that_runs_passes_the_check(tmp_path: Path):
    project = script_project(tmp_path / "p", 'echo "1 passed, 2 failed"; exit 1')

    check = await check_test_command(project, "./check.sh", base_env=BASE_ENV, timeout_s=10)

    assert check == Check(
        "test command",
        True,
        "./check.sh (flag): ran, exit code 1, 1 passed, 2 failed (red: a session starts here)",
    )


async def test_a_passing_test_command_says_there_is_nothing_to_fix_yet(tmp_path: Path):
    """Both lines read `ok ... ran`: a newcomer could not tell red from green."""
    project = script_project(tmp_path / "p", 'echo "3 passed"; exit 0')

    check = await check_test_command(project, "./check.sh", base_env=BASE_ENV, timeout_s=10)

    assert check.ok and check.detail.endswith("(green: nothing to fix yet)")


async def test_a_test_command_that_collects_no_tests_fails(tmp_path: Path):
    """pytest in a folder without tests exits 5, which reads as red; but no edit can turn
    it green by fixing something, so no session should start from it."""
    project = script_project(tmp_path / "p", 'echo "no tests ran in 0.01s"; exit 5')

    check = await check_test_command(project, "./check.sh", base_env=BASE_ENV, timeout_s=10)

    assert not check.ok
    assert check.detail == (
        "./check.sh (flag): ran no tests (exit code 5, 0 passed, 0 failed); "
        "a session starts from a failing one"
    )


async def test_a_suite_that_fails_to_load_counts_no_tests_but_is_red(tmp_path: Path):
    """jest's suite with an import error: 0 tests counted, exit 1. A fix can turn it green."""
    report = "Test Suites: 1 failed, 1 total\nTests:       0 total"
    project = script_project(tmp_path / "p", f'printf "{report}\\n"; exit 1')

    check = await check_test_command(project, "./check.sh", base_env=BASE_ENV, timeout_s=10)

    assert check.ok and check.detail.endswith("(red: a session starts here)"), check.detail


async def test_the_test_command_runs_in_the_session_folder_when_given(tmp_path: Path):
    project = script_project(tmp_path / "p", "exit 1")
    session = script_project(tmp_path / "s", "touch ran-here; exit 0")

    check = await check_test_command(
        project, "./check.sh", base_env=BASE_ENV, timeout_s=10, run_in=session
    )

    assert check.ok and "exit code 0" in check.detail
    assert (session / "ran-here").exists() and not (project / "ran-here").exists()


@pytest.mark.parametrize(("timeout_s", "offered"), [(10, True), (11, False)])
async def test_the_sessions_own_tools_run_the_check_and_offer_it_to_the_session(
    tmp_path: Path, timeout_s: float, offered: bool
):
    project = script_project(tmp_path / "p", "exit 1")
    session = script_project(tmp_path / "s", 'echo run >> ../runs; echo "1 passed"; exit 1')
    command = resolve_test_command(project, "./check.sh")
    tools = WorkspaceTools(session, base_env=BASE_ENV, test_command=command, test_timeout_s=10)

    check = await check_test_command(
        project, "./check.sh", base_env=BASE_ENV, timeout_s=timeout_s, run_in=session, tools=tools
    )
    first = await tools.run_tests()

    assert check.ok and first.exit_code == 1
    # Only the same command, folder, sandbox and timeout may stand for the session's run.
    assert first.reused is offered
    assert (tmp_path / "runs").read_text() == "run\n" * (1 if offered else 2)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("no-such-runner-xyz --all", "no-such-runner-xyz is not found on PATH"),
        ("./missing.sh", "./missing.sh is not found in /"),
        ("no-such-runner-xyz && true", "not found"),
        ("sleep 30", "timed out after 1s"),
        ("", "the test command is empty"),
    ],
)
async def test_a_test_command_that_cannot_run_fails(tmp_path: Path, command: str, message: str):
    check = await check_test_command(tmp_path, command, base_env=BASE_ENV, timeout_s=1)

    assert not check.ok and message in check.detail and "\n" not in check.detail


@pytest.mark.parametrize("confined", [True, False])
async def test_a_program_that_cannot_start_fails_in_one_line(tmp_path: Path, confined: bool):
    """bwrap reports a program it cannot start with exit code 1, as a red test run ends:
    the check must not call that a run. Without bwrap, the exec itself fails."""
    sandbox = find_sandbox()[0] if confined else None
    if confined and sandbox is None:
        pytest.skip("bwrap is not usable here")
    project = script_project(tmp_path / "p", "exit 0")
    (project / "check.sh").write_text("#!/no/such/interpreter\n")
    session = tmp_path / "session"
    session.mkdir()
    (session / "tests.sh").write_text("exit 0\n")

    bad = await check_test_command(
        project, "./check.sh", base_env=BASE_ENV, timeout_s=10, sandbox=sandbox
    )
    elsewhere = await check_test_command(
        project, "./check.sh", base_env=BASE_ENV, timeout_s=10, run_in=session
    )

    assert not bad.ok and "\n" not in bad.detail
    assert ("could not start" if confined else "cannot start") in bad.detail
    assert not elsewhere.ok
    assert elsewhere.detail == (
        f"./check.sh (flag): ./check.sh is not found in the session's copy of {project}"
    )


async def test_a_project_venv_without_pytest_fails(tmp_path: Path):
    venv.create(tmp_path / ".venv", with_pip=False)

    check = await check_test_command(tmp_path, None, base_env=BASE_ENV, timeout_s=30)

    assert not check.ok
    assert check.detail.startswith(".venv/bin/python -m pytest -q (detected: .venv): ")
    assert check.detail.endswith("No module named pytest")


async def test_a_malformed_config_fails_the_test_command_check(tmp_path: Path):
    (tmp_path / ".astra-memory.toml").write_text("test-command = 3\n")

    check = await check_test_command(tmp_path, None, base_env=BASE_ENV, timeout_s=5)

    assert not check.ok and "must be a string or a non-empty list" in check.detail


# The git tree


def test_git_tree_checks(tmp_path: Path):
    checkout = repository(tmp_path / "repo")
    plain = tmp_path / "plain"
    plain.mkdir()

    clean = check_git_tree(checkout, allow_dirty=False)
    (checkout / "app.py").write_text("changed\n")
    dirty = check_git_tree(checkout, allow_dirty=False)
    allowed = check_git_tree(checkout, allow_dirty=True)

    assert clean == Check("git tree", True, f"{checkout.resolve()} is clean")
    assert not dirty.ok and "1 uncommitted change (M app.py); commit" in dirty.detail
    assert allowed.ok and allowed.detail.endswith("allowed by --allow-dirty")
    assert check_git_tree(plain, allow_dirty=False).ok


# All of them


async def test_run_preflight_runs_every_check_in_order(tmp_path: Path, db_path: Path):
    checkout = repository(tmp_path / "repo")

    checks = await run_preflight(
        memory_url=f"sqlite:///{db_path}",
        embedder=HashEmbedder(),
        base_env=BASE_ENV,
        workspace=checkout,
        test_cmd=f"{sys.executable} -m pytest -q -p no:cacheprovider",
        test_timeout_s=60,
        live=True,
        api_key="sk-abcdef",
    )

    names = [check.name for check in checks]
    assert names == [
        "store",
        "embedding model",
        "api key",
        "model price",
        "sandbox",
        "git tree",
        "test command",
    ]
    assert all(check.ok for check in checks), [check.line() for check in checks]
    assert checks[-1].detail.endswith(
        "exit code 1, 0 passed, 1 failed (red: a session starts here)"
    )
    assert checks[0].line().startswith("ok     store: sqlite:///")


async def test_run_preflight_reports_an_unreachable_store(tmp_path: Path):
    checks = await run_preflight(
        memory_url="vectorai://127.0.0.1:1", embedder=HashEmbedder(), base_env=BASE_ENV
    )

    assert [check.name for check in checks] == ["store", "embedding model"]
    assert not checks[0].ok and checks[0].line().startswith("FAILED store: ")
