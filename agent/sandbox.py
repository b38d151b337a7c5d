"""Confinement for the project's test command, the one place the model's edits run as code.

Bubblewrap (Debian's `bubblewrap`) gives the command the workspace writable, the rest of the
filesystem read-only, a private /tmp, no network, and a PID namespace that ends with it:
once bwrap is killed (the process group kill in WorkspaceTools), --die-with-parent ends its
first child, and with it every process of the namespace, `setsid` ones included.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap), or pass --no-sandbox"
CONFINEMENT = "bwrap: the workspace writable, the rest read-only, no network"


@dataclass(frozen=True)
class Sandbox:
    bwrap: str

    def wrap(self, argv: tuple[str, ...], root: Path) -> tuple[str, ...]:
        """`argv` confined: only `root` writable, run from it."""
        folder = str(root)
        seen = [arg for path in _needed_under_tmp(argv, root) for arg in ("--ro-bind", path, path)]
        return (
            self.bwrap,
            *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"),
            *seen,
            *("--bind", folder, folder, "--chdir", folder),
            *("--unshare-net", "--unshare-pid", "--die-with-parent"),
            "--",
            *argv,
        )


def start_failure(output: str) -> str | None:
    """bwrap's own line when it could not start the command (a missing or non-executable
    program): it exits 1 then, as a failing test run does."""
    first = output.lstrip().partition("\n")[0]
    return first if first.startswith("bwrap: execvp ") else None


def _needed_under_tmp(argv: tuple[str, ...], root: Path) -> list[str]:
    """What the command must still see, read-only, through its private /tmp: our own
    interpreter's environment and the command's program's (a venv made under /tmp, or the
    one a session's folder links to)."""
    wanted = {Path(sys.prefix), Path(sys.base_prefix)}
    program = argv[0] if argv else ""
    found = root / program if os.sep in program else shutil.which(program)
    if found is not None:
        # .../bin/python: its venv, through the folder's links (not python's own link)
        wanted.add(Path(found).absolute().parent.resolve().parent)
    tmp = Path("/tmp")
    return sorted(str(p) for p in wanted if p.is_relative_to(tmp) and p != tmp and p.exists())


@functools.cache
def find_sandbox() -> tuple[Sandbox | None, str]:
    """The sandbox and what it gives, or None and why there is none. bwrap is tried once
    per process: in some containers it is installed but may not make namespaces."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, "no sandbox: bwrap is not installed"
    sandbox = Sandbox(bwrap)
    try:
        probe = subprocess.run(
            sandbox.wrap(("true",), Path("/")),
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"no sandbox: bwrap does not run here ({error})"
    if probe.returncode != 0:
        why = " ".join(probe.stderr.split()) or f"exit code {probe.returncode}"
        return None, f"no sandbox: bwrap does not run here ({why})"
    return sandbox, CONFINEMENT
