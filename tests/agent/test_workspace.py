"""The workspace tools on real files, and run_tests on a real pytest run of a tiny project."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from agent.project_tests import TestCommand
from agent.workspace_tools import (
    TestRun,
    ToolError,
    WorkspaceTools,
)
from memory.safety import scrub_environment

# Child pytest runs skip third-party plugins so they start fast (passed by name: the child's
# environment is an allowlist).
BASE_ENV = {
    **os.environ,
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    "ASTRA_TEST_ENV_PASS": "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
}

# secrets a test subprocess once received (issue 14), before its environment was an allowlist
SECRETS_ONCE_PASSED_ON = {
    "DB_PASS": "hunter2",
    "REDIS_URL": "redis://:pw@cache:6379",
    "SENTRY_DSN": "https://abc@o1.ingest.sentry.io/1",
    "STRIPE_LIVE": "sk_live_abcdefghijklmnopqrstuvwx",
    "HF_HUB": "hf_abcdefghijklmnopqrstuvwxyz0123456789",
    "MY_AWS": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def project(root: Path, tests: str) -> Path:
    """A tiny pytest project whose only test module is `tests`."""
    write(root, "pytest.ini", "[pytest]\n")
    write(root, "test_project.py", tests)
    return root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def tools(workspace: Path) -> WorkspaceTools:
    return WorkspaceTools(workspace, base_env=BASE_ENV, test_timeout_s=30)


def test_root_must_be_an_existing_directory(tmp_path: Path):
    with pytest.raises(ValueError, match="not an existing directory"):
        WorkspaceTools(tmp_path / "missing", base_env={})


# Paths


@pytest.mark.parametrize("path", ["/etc/passwd", "~/.bashrc", "~", "../outside.txt", "a/../../x"])
def test_paths_outside_the_workspace_are_refused(tools, workspace, path):
    (workspace.parent / "outside.txt").write_text("secret\n")
    for call in (
        lambda: tools.read_file(path),
        lambda: tools.apply_edit(path, "secret", "x"),
        lambda: tools.list_files(path),
    ):
        with pytest.raises(ToolError, match="must be relative to the workspace") as refused:
            call()
        assert path in str(refused.value)


def test_symlinks_out_of_the_workspace_are_refused(tools, workspace):
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linked_dir").symlink_to(outside)

    for path in ("link.txt", "linked_dir/secret.txt"):
        with pytest.raises(ToolError, match="resolves outside the workspace"):
            tools.read_file(path)
        with pytest.raises(ToolError, match="resolves outside the workspace"):
            tools.apply_edit(path, "secret", "leaked")
    with pytest.raises(ToolError, match="resolves outside the workspace"):
        tools.list_files("linked_dir")
    assert (outside / "secret.txt").read_text() == "secret\n"


def test_symlinks_inside_the_workspace_and_inner_dotdot_are_allowed(tools, workspace):
    write(workspace, "src/real.py", "x = 1\n")
    (workspace / "alias.py").symlink_to(workspace / "src/real.py")

    assert tools.read_file("alias.py") == "x = 1\n"
    assert tools.read_file("src/../src/real.py") == "x = 1\n"


def test_missing_files_and_directories_are_refused(tools, workspace):
    (workspace / "pkg").mkdir()
    with pytest.raises(ToolError, match=r"^no such file: nope\.py$"):
        tools.read_file("nope.py")
    with pytest.raises(ToolError, match=r"^no such file: nope\.py$"):
        tools.apply_edit("nope.py", "a", "b")
    with pytest.raises(ToolError, match="is a directory"):
        tools.read_file("pkg")
    with pytest.raises(ToolError, match="is a directory"):
        tools.apply_edit("pkg", "a", "b")


# read_file


def test_binary_files_are_refused(tools, workspace):
    (workspace / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (workspace / "latin1.txt").write_bytes("café\n".encode("latin-1"))

    with pytest.raises(ToolError, match=r"image\.png is a binary file"):
        tools.read_file("image.png")
    with pytest.raises(ToolError, match=r"latin1\.txt is not UTF-8 text"):
        tools.read_file("latin1.txt")


def test_big_files_are_cut_at_a_line_end_with_a_note(tools, workspace):
    line = "x" * 99 + "\n"
    (workspace / "big.txt").write_text(line * 3000)  # 300,000 bytes

    text = tools.read_file("big.txt")

    body, note = text.rsplit("\n", 1)[0], text.rsplit("\n", 1)[1]
    assert note == "[truncated: showed 262100 of 300000 bytes of big.txt]"
    assert body + "\n" == line * 2621
    assert len(body.encode()) <= 256 * 1024


# apply_edit


def test_apply_edit_replaces_the_unique_occurrence_and_shows_its_diff(tools, workspace):
    write(workspace, "calc.py", "def add(a, b):\n    return a - b\n")

    answer = tools.apply_edit("calc.py", "a - b", "a + b")

    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert answer.startswith("Edited calc.py.\n")
    assert "--- a/calc.py\n+++ b/calc.py\n" in answer
    assert "-    return a - b\n+    return a + b\n" in answer
    assert tools.edited_files == ["calc.py"]


def test_apply_edit_refuses_missing_repeated_and_empty_old_text(tools, workspace):
    original = "x = 1\nx = 1\ny = 2\n"
    write(workspace, "m.py", original)

    with pytest.raises(ToolError, match=r"^old_text not found in m\.py$"):
        tools.apply_edit("m.py", "z = 3", "z = 4")
    with pytest.raises(
        ToolError,
        match=r"^old_text occurs 2 times in m\.py; include more context so it is unique$",
    ):
        tools.apply_edit("m.py", "x = 1", "x = 9")
    with pytest.raises(ToolError, match="old_text must not be empty"):
        tools.apply_edit("m.py", "", "z = 3\n")

    assert (workspace / "m.py").read_text() == original
    assert tools.edited_files == []
    assert tools.diff() == ""


def test_apply_edit_is_atomic_and_keeps_the_file_mode(tools, workspace):
    script = write(workspace, "run.sh", "#!/bin/sh\necho old\n")
    script.chmod(0o751)
    inode = script.stat().st_ino

    tools.apply_edit("run.sh", "echo old", "echo new")

    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert script.stat().st_ino != inode  # replaced by a new file, not rewritten in place
    assert sorted(p.name for p in workspace.iterdir()) == ["run.sh"]  # no temp file left


def test_diff_covers_every_edit_since_the_first(tools, workspace):
    write(workspace, "a.py", "one = 1\ntwo = 2\nthree = 3\n")
    write(workspace, "pkg/b.py", "name = 'b'")

    tools.apply_edit("a.py", "one = 1", "one = 10")
    tools.apply_edit("pkg/b.py", "'b'", "'bee'")
    tools.apply_edit("a.py", "three = 3", "three = 30")

    assert tools.edited_files == ["a.py", "pkg/b.py"]
    assert tools.diff() == (
        "--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n"
        "-one = 1\n+one = 10\n two = 2\n-three = 3\n+three = 30\n"
        "--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -1 +1 @@\n"
        "-name = 'b'\n\\ No newline at end of file\n"
        "+name = 'bee'\n\\ No newline at end of file\n"
    )


# list_files


def test_list_files_skips_junk_and_sorts(tools, workspace):
    for relative in (
        "README.md",
        "src/app.py",
        "src/__pycache__/app.cpython-311.pyc",
        "src/stale.pyc",
        ".git/config",
        ".venv/bin/python",
        ".pytest_cache/v/cache",
        "node_modules/left-pad/index.js",
        "tests/test_app.py",
    ):
        write(workspace, relative, "")

    assert tools.list_files() == "README.md\nsrc/app.py\ntests/test_app.py"
    assert tools.list_files("src") == "src/app.py"


def test_list_files_stops_at_500_entries(tools, workspace):
    for number in range(503):
        (workspace / f"f{number:03}.txt").write_text("")

    lines = tools.list_files().splitlines()

    assert len(lines) == 501
    assert lines[0] == "f000.txt" and lines[499] == "f499.txt"
    assert lines[500] == "... and 3 more files"


# run_tests


async def test_run_tests_passing_gives_a_confirmed_outcome(tools, workspace):
    project(
        workspace,
        """
        def test_one():
            assert 1 + 1 == 2

        def test_two():
            assert "a" in "abc"
        """,
    )

    run = await tools.run_tests()

    assert (run.exit_code, run.passed, run.failed, run.timed_out) == (0, 2, 0, False)
    assert run.command == "python -m pytest -q"
    assert run.confirmed_outcome == "python -m pytest -q passed with exit code 0 (2 passed)"
    answer = json.loads(run.for_model())
    assert answer["summary"] == "2 passed, 0 failed"
    assert answer["confirmed_outcome"] == run.confirmed_outcome
    assert "2 passed" in answer["output_tail"]


async def test_run_tests_failing_counts_failures_and_errors(tools, workspace):
    project(
        workspace,
        """
        import pytest

        @pytest.fixture
        def broken():
            raise RuntimeError("fixture broke")

        def test_ok():
            pass

        def test_bad():
            assert 1 == 2

        def test_uses_broken(broken):
            pass
        """,
    )

    run = await tools.run_tests()

    assert run.exit_code == 1
    assert (run.passed, run.failed, run.timed_out) == (1, 2, False)
    assert run.confirmed_outcome is None
    answer = json.loads(run.for_model())
    assert "confirmed_outcome" not in answer
    assert answer["summary"] == "1 passed, 2 failed"
    assert "assert 1 == 2" in run.output


def process_gone(pid: int) -> bool:
    """True when pid has exited; a zombie nobody has reaped yet counts as exited."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().rsplit(")", 1)[1].split()[0] == "Z"


async def test_run_tests_timeout_kills_the_whole_process_group(workspace):
    project(
        workspace,
        """
        import subprocess, time
        from pathlib import Path

        def test_hangs():
            child = subprocess.Popen(["sleep", "60"])
            Path("child.pid").write_text(str(child.pid))
            time.sleep(60)
        """,
    )
    tools = WorkspaceTools(workspace, base_env=BASE_ENV, test_timeout_s=2)

    run = await tools.run_tests()

    assert run.timed_out and run.exit_code != 0
    assert run.confirmed_outcome is None
    assert json.loads(run.for_model())["summary"].startswith("timed out after 2")
    child = int((workspace / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while not process_gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_gone(child)


async def test_run_tests_hides_secrets_from_the_tests(workspace):
    project(
        workspace,
        """
        import os

        def test_environment():
            for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASS", "REDIS_URL",
                         "SENTRY_DSN", "STRIPE_LIVE", "HF_HUB", "MY_AWS", "UNNAMED"):
                assert name not in os.environ
            assert os.environ["VISIBLE_SETTING"] == "kept"
            assert os.environ["PYTHONDONTWRITEBYTECODE"] == "1"
        """,
    )
    base_env = BASE_ENV | {
        "ASTRA_TEST_ENV_PASS": "PYTEST_DISABLE_PLUGIN_AUTOLOAD,VISIBLE_SETTING",
        "OPENAI_API_KEY": "sk-test",
        "GITHUB_TOKEN": "ghp-test",
        **SECRETS_ONCE_PASSED_ON,
        "UNNAMED": "nothing secret, but not asked for",
        "VISIBLE_SETTING": "kept",
    }
    tools = WorkspaceTools(workspace, base_env=base_env, test_timeout_s=30)

    run = await tools.run_tests()

    assert run.exit_code == 0, run.output
    assert run.passed == 1


async def test_run_tests_streams_lines_as_they_arrive(workspace):
    # The child prints one line, then waits until on_output has seen it; buffering
    # the output until the end would deadlock and time out.
    script = (
        "import pathlib, time\n"
        "print('first', flush=True)\n"
        "while not pathlib.Path('seen').exists(): time.sleep(0.01)\n"
        "print('second')\n"
    )
    command = TestCommand((sys.executable, "-c", script), "python -c SCRIPT", "flag")
    tools = WorkspaceTools(workspace, base_env=BASE_ENV, test_command=command, test_timeout_s=10)
    received: list[str] = []

    def on_output(line: str) -> None:
        received.append(line)
        if line == "first":
            (workspace / "seen").touch()

    run = await tools.run_tests(on_output)

    assert not run.timed_out and run.exit_code == 0
    assert received == ["first", "second"]
    assert run.output == "first\nsecond\n"
    assert run.command == "python -c SCRIPT"


async def test_run_tests_reports_a_command_that_cannot_start(workspace):
    command = TestCommand(("no-such-runner-xyz",), "no-such-runner-xyz", "flag")
    tools = WorkspaceTools(workspace, base_env=BASE_ENV, test_command=command)

    with pytest.raises(ToolError, match="cannot start the test command no-such-runner-xyz"):
        await tools.run_tests()


# Pure helpers


def test_scrub_environment_keeps_only_the_core_allowlist():
    env = {
        "PATH": "/usr/bin",
        "HOME": "/home/dev",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp",
        "TERM": "xterm",
        "VIRTUAL_ENV": "/home/dev/.venv",
        # what the issue found kept, and more that no pattern would call secret
        **SECRETS_ONCE_PASSED_ON,
        "OPENAI_API_KEY": "sk",
        "PLAIN_URL": "https://example.com/docs",
    }

    kept = scrub_environment(env)

    assert kept == {
        name: env[name]
        for name in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM", "VIRTUAL_ENV")
    }
    assert "OPENAI_API_KEY" in env  # a copy; the input is untouched


def test_scrub_environment_passes_what_the_user_names():
    env = {
        "PATH": "/usr/bin",
        "ASTRA_TEST_ENV_PASS": " DATABASE_URL, PYTEST_* ,",
        "DATABASE_URL": "postgresql://localhost/test",
        "PYTEST_ADDOPTS": "-x",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "DATABASE_URL_ADMIN": "postgresql://admin:pw@localhost/test",
        "OPENAI_API_KEY": "sk",
    }

    assert scrub_environment(env) == {
        "PATH": "/usr/bin",
        "DATABASE_URL": "postgresql://localhost/test",
        "PYTEST_ADDOPTS": "-x",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


@pytest.mark.parametrize("name", [".env", ".env.local", "deploy/id_rsa", "certs/server.pem"])
def test_secrets_files_are_not_read_or_edited(tools, workspace, name):
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz\n")
    with pytest.raises(ToolError, match="secrets file"):
        tools.read_file(name)
    with pytest.raises(ToolError, match="secrets file"):
        tools.apply_edit(name, "OPENAI", "X")


def test_a_fifo_is_refused_without_blocking(tools, workspace):
    os.mkfifo(workspace / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        tools.read_file("pipe")


def test_tail_starts_at_a_line_start():
    run = TestRun("t", 1, 0, 0, False, 0.1, "alpha\nbravo\ncharlie\n", None)

    assert run.tail(12) == "charlie\n"
    assert run.tail(100) == run.output
    assert TestRun("t", 1, 0, 0, False, 0.1, "x" * 50, None).tail(10) == "x" * 10


def counting_command(workspace: Path) -> TestCommand:
    """A test command that counts its runs in a file outside the workspace and fails."""
    script = (
        "import pathlib, sys\n"
        "count = pathlib.Path(sys.argv[1])\n"
        "count.write_text(str(int(count.read_text() or 0) + 1) if count.exists() else '1')\n"
        "print('1 passed, 1 failed')\n"
        "sys.exit(1)\n"
    )
    runs = workspace.parent / "runs"
    return TestCommand((sys.executable, "-c", script, str(runs)), "count", "flag")


def runs_made(workspace: Path) -> int:
    return int((workspace.parent / "runs").read_text())


async def test_an_offered_run_answers_the_next_call_once_if_no_file_changed(workspace):
    write(workspace, "app.py", "x = 1\n")
    tools = WorkspaceTools(workspace, base_env=BASE_ENV, test_command=counting_command(workspace))
    offered = await tools.run_tests(offer=True)
    received: list[str] = []

    taken = await tools.run_tests(received.append)
    again = await tools.run_tests()

    assert runs_made(workspace) == 2  # the offer, then the third call: the second took it
    assert taken == replace(offered, reused=True) and not offered.reused
    assert received == ["1 passed, 1 failed"]
    assert not again.reused


async def test_a_call_that_takes_an_offered_run_and_offers_passes_it_on(workspace):
    """The demo's run made ahead, taken by the preflight, then by the session's first call."""
    write(workspace, "app.py", "x = 1\n")
    tools = WorkspaceTools(workspace, base_env=BASE_ENV, test_command=counting_command(workspace))
    await tools.run_tests(offer=True)

    by_preflight = await tools.run_tests(offer=True)
    by_session = await tools.run_tests()

    assert by_preflight.reused and by_session.reused and runs_made(workspace) == 1


async def test_a_taken_run_whose_output_was_cut_says_so_before_its_kept_lines(workspace):
    script = "import sys\nfor n in range(30000): print(f'line {n:05d} ' + 'x' * 40)\nsys.exit(1)"
    command = TestCommand((sys.executable, "-c", script), "long", "flag")
    tools = WorkspaceTools(workspace, base_env=BASE_ENV, test_command=command)
    offered = await tools.run_tests(offer=True)
    received: list[str] = []

    taken = await tools.run_tests(received.append)

    assert taken.reused and offered.dropped_lines > 0
    assert received[0] == f"… {offered.dropped_lines} earlier lines not kept"
    assert received[1:] == offered.output.splitlines()
    assert received[-1].startswith("line 29999")


def same_size_and_time_edit(tools: WorkspaceTools, path: Path) -> None:
    """An edit of the same size whose file keeps its old mtime, as on a clock too coarse to
    tick between the test run and the edit."""
    before = path.stat()
    tools.apply_edit(path.name, "x = 1", "x = 2")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


@pytest.mark.parametrize(
    "change",
    [
        lambda tools, root: tools.apply_edit("app.py", "x = 1", "x = 2"),
        lambda tools, root: (root / "new.py").write_text("y = 1\n"),
        lambda tools, root: (root / "app.py").unlink(),
        lambda tools, root: same_size_and_time_edit(tools, root / "app.py"),
        lambda tools, root: (root / "pkg").mkdir() or (root / "pkg" / "m.py").write_text(""),
    ],
    ids=["an edit", "a new file", "a removed file", "an edit a coarse clock hides", "a subfolder"],
)
async def test_an_offered_run_is_not_taken_once_a_file_changed(workspace, change):
    write(workspace, "app.py", "x = 1\n")
    tools = WorkspaceTools(workspace, base_env=BASE_ENV, test_command=counting_command(workspace))
    await tools.run_tests(offer=True)

    change(tools, workspace)
    run = await tools.run_tests()

    assert runs_made(workspace) == 2 and not run.reused
