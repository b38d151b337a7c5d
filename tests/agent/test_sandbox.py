"""The test command's sandbox (issue 14, finding 7) and its bounded output (finding 10):
code the tests run cannot write outside the workspace, reach the network or outlive the
run, and 50 MB of output leaves a tail in memory and the whole in the log file."""

from __future__ import annotations

import ctypes
import os
import shlex
import socket
import sys
import time
from pathlib import Path

import pytest

from agent.project_tests import TestCommand
from agent.sandbox import find_sandbox
from agent.workspace_tools import MAX_KEPT_CHARS, WorkspaceTools

SANDBOX, WHY_NOT = find_sandbox()
needs_sandbox = pytest.mark.skipif(SANDBOX is None, reason=WHY_NOT)


def tools_running(root, script: str, **options) -> WorkspaceTools:
    """The workspace's tests are `python -c script`."""
    argv = (sys.executable, "-c", script)
    command = TestCommand(argv, shlex.join(argv), "flag")
    return WorkspaceTools(root, base_env=dict(os.environ), test_command=command, **options)


@needs_sandbox
async def test_the_tests_cannot_write_outside_the_workspace(tmp_path):
    # in our own venv, which the sandbox always shows (read-only, even when it lies under
    # /tmp): a write to the sandbox's private /tmp would vanish without proving anything
    workspace, outside = tmp_path / "ws", Path(sys.prefix) / f"escaped-{os.getpid()}"
    workspace.mkdir()
    script = (
        "import pathlib, sys\n"
        "pathlib.Path('inside.txt').write_text('ok')\n"
        f"try:\n    pathlib.Path({str(outside)!r}).write_text('escaped')\n"
        "except OSError as e:\n    print('refused:', e.strerror); sys.exit(3)\n"
    )
    try:
        run = await tools_running(workspace, script, sandbox=SANDBOX).run_tests()
    finally:
        escaped = outside.exists()
        outside.unlink(missing_ok=True)
    assert not escaped and (workspace / "inside.txt").read_text() == "ok"
    assert run.exit_code == 3 and "Read-only" in run.output


@needs_sandbox
async def test_the_tests_reach_no_network(tmp_path):
    script = (
        "import socket\n"
        "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=3)\n"
        "except OSError as e:\n    print('unreachable:', e.strerror)\n"
    )
    run = await tools_running(tmp_path, script, sandbox=SANDBOX).run_tests()
    assert "unreachable: Network is unreachable" in run.output


CONNECT = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "address = sys.argv[1].replace('@', '\\0', 1)  # @: an abstract name\n"
    "try:\n    s.connect(address)\n    print('connected')\n"
    "except OSError as e:\n    print('refused:', e.strerror)\n"
)


@needs_sandbox
@pytest.mark.parametrize("where", ["~", "/var/tmp", "@"])
async def test_the_tests_reach_no_host_socket(tmp_path, where):
    """A unix socket under $HOME (so a docker.sock under /run), one under /var/tmp (so a
    database's under /var/lib) and an abstract one (@: no file at all) listen on the host;
    the tests' connect() reaches none."""
    name = f"astra-sandbox-{os.getpid()}"
    address = f"@{name}" if where == "@" else str(Path(where).expanduser() / f".{name}.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(address.replace("@", "\0", 1))
    listener.listen()
    try:
        argv = (sys.executable, "-c", CONNECT, address)
        command = TestCommand(argv, shlex.join(argv), "flag")
        tools = WorkspaceTools(
            tmp_path, base_env=dict(os.environ), test_command=command, sandbox=SANDBOX
        )
        confined = await tools.run_tests()
        unconfined = await WorkspaceTools(
            tmp_path, base_env=dict(os.environ), test_command=command
        ).run_tests()
    finally:
        listener.close()
        if where != "@":
            Path(address).unlink(missing_ok=True)
    assert "connected" in unconfined.output  # the socket is there to reach
    assert "refused:" in confined.output and "connected" not in confined.output


@needs_sandbox
async def test_home_is_an_empty_private_folder_and_ipc_is_private(tmp_path):
    secret = Path.home() / f".astra-sandbox-secret-{os.getpid()}"
    secret.write_text("the user's")
    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x0A57A000 + os.getpid() % 4096
    segment = libc.shmget(key, 4096, 0o1600)  # IPC_CREAT | 0600
    assert segment >= 0, os.strerror(ctypes.get_errno())
    script = (
        "import pathlib, sys\n"
        f"print('home shows secret:', pathlib.Path({str(secret)!r}).exists())\n"
        "rows = pathlib.Path('/proc/sysvipc/shm').read_text().splitlines()\n"
        f"print('ipc shows segment:', any(row.split()[:1] == ['{key}'] for row in rows))\n"
    )
    try:
        run = await tools_running(tmp_path, script, sandbox=SANDBOX).run_tests()
    finally:
        secret.unlink()
        libc.shmctl(segment, 0, None)  # IPC_RMID
    assert "home shows secret: False" in run.output
    assert "ipc shows segment: False" in run.output


@needs_sandbox
async def test_a_setsid_child_does_not_outlive_the_run(tmp_path):
    marker = tmp_path / "child.pid"
    script = (
        "import subprocess, time\n"
        "child = subprocess.Popen(['setsid', 'sh', '-c', 'echo $$ > child.pid; "
        "while true; do date > beat; sleep 0.1; done'])\n"
        "time.sleep(1)\n"
    )
    await tools_running(tmp_path, script, sandbox=SANDBOX).run_tests()
    assert marker.exists()
    beat = (tmp_path / "beat").stat().st_mtime
    time.sleep(0.6)
    assert (tmp_path / "beat").stat().st_mtime == beat  # nothing beats any more


async def test_fifty_megabytes_of_output_keep_a_bounded_tail_and_the_whole_log(tmp_path):
    script = (
        "import sys\n"
        "line = 'x' * 99 + '\\n'\n"
        "for _ in range(5):\n    sys.stdout.write(line * 100_000)\n"
        "sys.stdout.write('y' * 3_000_000)\n"  # one line with no end: cut, not held whole
        "print('\\n1 passed, 2 failed')\n"
    )
    tools = tools_running(tmp_path, script, log_dir=tmp_path / "logs")
    run = await tools.run_tests()
    assert len(run.output) <= MAX_KEPT_CHARS and run.dropped_lines > 400_000
    assert (run.passed, run.failed) == (1, 2)  # the counts are read from the tail
    assert os.path.getsize(run.log_file) == 5 * 100_000 * 100 + 3_000_000 + 20


@needs_sandbox
async def test_a_program_in_a_venv_under_tmp_still_runs_in_the_private_tmp(tmp_path):
    """A project's venv (or our own, in a checkout under /tmp) stays visible, read-only,
    through the sandbox's own /tmp: the command it names must still run."""
    assert tmp_path.is_relative_to("/tmp")  # pytest's tmp_path: the case in question
    program = tmp_path / "venv" / "bin" / "check"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\necho 'from the venv'\n")
    program.chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command = TestCommand((str(program),), str(program), "flag")
    tools = WorkspaceTools(
        workspace, base_env=dict(os.environ), test_command=command, sandbox=SANDBOX
    )
    run = await tools.run_tests()
    assert (run.exit_code, run.output.strip()) == (0, "from the venv")
