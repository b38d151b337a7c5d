"""Confinement for the project's test command, the one place the model's edits run as code.

Bubblewrap (Debian's `bubblewrap`) gives the command the workspace writable, the rest of the
filesystem read-only, and no way to the host's sockets or IPC: a network namespace of its
own (no network, no abstract unix sockets), an IPC namespace, and the folders where hosts
keep unix sockets (`SOCKET_FOLDERS`, and $HOME) replaced by empty private folders: a socket
on a read-only mount still takes a connect(). What the tests need from those folders is
shown again read-only: the interpreters, the session's folder and the user's checkout
(`visible`). A PID namespace ends with it:
once bwrap is killed (the process group kill in WorkspaceTools), --die-with-parent ends its
first child, and with it every process of the namespace, `setsid` ones included.
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap), or pass --no-sandbox"
CONFINEMENT = "bwrap: the workspace writable, the rest read-only, no network, no host sockets"


@dataclass(frozen=True)
class Sandbox:
    bwrap: str
    visible: tuple[Path, ...] = ()  # shown read-only even inside a private folder

    def wrap(self, argv: tuple[str, ...], root: Path) -> tuple[str, ...]:
        """`argv` confined: only `root` writable, run from it."""
        folder = str(root)
        private = _private_folders()
        masks = [arg for path in private for arg in ("--tmpfs", str(path))]
        wanted = _needed(argv, root) | {Path(p).resolve() for p in self.visible}
        shown = sorted(str(p) for p in wanted if p.exists() and _inside_any(p, private))
        return (
            self.bwrap,
            *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"),
            *masks,
            *[arg for path in shown for arg in ("--ro-bind", path, path)],
            *("--bind", folder, folder, "--chdir", folder),
            *("--unshare-net", "--unshare-ipc", "--unshare-pid", "--die-with-parent"),
            "--",
            *argv,
        )


# Where hosts keep unix sockets: docker's and the desktop bus's under /run, a database's
# under /var/lib, anyone's under /tmp, /var/tmp, /srv or a home. Services put none under
# /usr, /etc or /opt, which stay visible (read-only) for the tools the tests may run.
SOCKET_FOLDERS = ("/tmp", "/run", "/var", "/srv", "/mnt", "/media", "/home", "/root")


def _private_folders() -> list[Path]:
    """Where the host's unix sockets live: replaced by empty folders inside."""
    folders = [Path(folder) for folder in SOCKET_FOLDERS]
    home = Path(os.environ.get("HOME") or "/")
    if home.is_dir() and home != Path("/"):
        folders.append(home.resolve())
    folders = [f for f in folders if f.is_dir() and not f.is_symlink()]
    return [f for f in folders if not _inside_any(f, folders)]  # /home/me: in /home


def _inside_any(path: Path, folders: list[Path]) -> bool:
    return any(path.is_relative_to(folder) and path != folder for folder in folders)


def start_failure(output: str) -> str | None:
    """bwrap's own line when it could not start the command (a missing or non-executable
    program): it exits 1 then, as a failing test run does."""
    first = output.lstrip().partition("\n")[0]
    return first if first.startswith("bwrap: execvp ") else None


def _needed(argv: tuple[str, ...], root: Path) -> set[Path]:
    """What the command must still see, were it in a private folder: our own interpreter's
    environment, the user's site-packages, and the command's program's (a venv made under
    /tmp or $HOME, or the one a session's folder links to)."""
    wanted = {Path(sys.prefix), Path(sys.base_prefix), Path(site.getusersitepackages())}
    program = argv[0] if argv else ""
    found = root / program if os.sep in program else shutil.which(program)
    if found is not None:
        # .../bin/python: its venv, through the folder's links (not python's own link)
        wanted.add(Path(found).absolute().parent.resolve().parent)
    return {path.resolve() for path in wanted}


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
