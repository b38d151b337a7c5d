"""Where a session works: never in the user's checkout, unless the operator says so.

A git workspace gets a `git worktree` on a new branch `astra/<session>` under the data dir;
any other folder (and always a demo template) is copied there and made a git repository of
its own, so both kinds share one diff, one apply and one keep. At the end the operator
chooses: apply the session's diff to the checkout, keep its branch, or discard it.

Virtualenvs and node_modules are neither copied nor checked out (git ignores them) but
linked back to the user's, in both kinds: a venv holds absolute paths and only works where
it was made, and a test command such as `.venv/bin/python -m pytest` must find it in the
session's folder too. The links never enter the session's diff. Resolve the test command
against the user's workspace (`SessionWorkspace.source`) for the same reason.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["worktree", "copy", "in-place"]
Finish = Literal["apply", "branch", "discard"]

NOT_COPIED = (".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox")
LINKED = (".venv", "venv", "node_modules")
# Our own commits: never the user's hooks, signing or identity prompts.
AS_ASTRA = (
    "-c",
    "user.name=Astra",
    "-c",
    "user.email=astra@localhost",
    "-c",
    "commit.gpgsign=false",
)


class WorkspaceError(Exception):
    """The session's workspace cannot be made or finished; the message is one line."""


@dataclass
class SessionWorkspace:
    """The folder a session works in, and how its changes get back to the user."""

    source: Path  # the user's workspace, as given
    root: Path  # where the session reads, edits and runs the tests
    kind: Kind
    session_id: str
    repo: Path | None = None  # the top of the session's own git work tree; None in place
    branch: str | None = None  # astra/<session>; None in place
    base: str | None = None  # the commit the session's diff is taken against
    checkout: Path | None = None  # the top of the user's git checkout (worktree kind)
    warning: str | None = None
    linked: tuple[str, ...] = ()  # links to the user's venvs, relative to repo; never diffed

    def diff(self, *, binary: bool = False) -> str | None:
        """git's diff of the session's changes against its start, new files included;
        None in place, where WorkspaceTools.diff is all there is."""
        if self.repo is None or self.base is None:
            return None
        _add_all(self.repo, self.linked)
        return _git(self.repo, "diff", "--cached", *(["--binary"] if binary else []), self.base)

    def finish(self, choice: Finish, message: str | None = None) -> str:
        """Apply, keep the branch, or discard; returns one line saying what happened."""
        if self.repo is None:
            return f"the edits were made in place in {self.source}"
        if choice == "apply":
            return self.apply()
        if choice == "branch":
            return self.keep_branch(message)
        self.discard()
        return f"discarded the session's changes and {self.branch}"

    def apply(self) -> str:
        """Apply the session's diff to the user's checkout, then drop the session's copy.

        A diff that no longer applies (the checkout changed meanwhile) is refused before
        anything is written, and the changes are kept on the branch instead."""
        patch = self.diff(binary=True) or ""
        target = self.checkout or self.source
        # A copied workspace is no repository: name the copy's git dir so that a repository
        # around the user's folder cannot redirect the patch.
        prefix = () if self.checkout else ("--git-dir", f"{self.repo}/.git", "--work-tree", ".")
        if patch:
            try:
                _git(target, *prefix, "apply", "--check", "--binary", "-", stdin=patch)
            except WorkspaceError as error:
                kept = self.keep_branch()
                raise WorkspaceError(
                    f"the session's diff does not apply: {error}; {kept}"
                ) from None
            _git(target, *prefix, "apply", "--binary", "-", stdin=patch)
        self.discard()
        return f"applied the session's changes to {self.source}" if patch else "nothing to apply"

    def keep_branch(self, message: str | None = None) -> str:
        """Commit the session's changes on its branch; a worktree's folder goes, the branch
        stays in the user's repository. A copy keeps its folder, which holds the branch."""
        assert self.repo is not None, "in place there is no branch"
        _commit(self.repo, message or f"Astra session {self.session_id}", self.linked)
        if self.checkout is not None:
            self._remove_folder()
            return f"kept the changes on branch {self.branch}"
        return f"kept the changes on branch {self.branch} in {self.repo}"

    def discard(self) -> None:
        """Remove the session's folder, and its branch from the user's repository."""
        self._remove_folder()
        if self.checkout is not None:
            _git(self.checkout, "branch", "-D", "-q", str(self.branch))

    def _remove_folder(self) -> None:
        """Remove <data dir>/workspaces/<session>, unregistering a worktree first."""
        assert self.repo is not None, "in place there is nothing to remove"
        if self.checkout is not None and self.repo.exists():
            _git(self.checkout, "worktree", "remove", "--force", str(self.repo))
        shutil.rmtree(self.repo.parent, ignore_errors=True)


def git_checkout_top(path: Path) -> Path | None:
    """The top of the git checkout path lies in, or None when it is not in one."""
    try:
        return Path(_git(Path(path), "rev-parse", "--show-toplevel").strip()).resolve()
    except WorkspaceError:
        return None


def uncommitted(top: Path) -> list[str]:
    """git status lines of a checkout: changed, staged and untracked (not ignored) files."""
    return _git(top, "status", "--porcelain").splitlines()


def open_session_workspace(
    workspace: Path,
    session_id: str,
    data_dir: Path,
    *,
    allow_dirty: bool = False,
    in_place: bool = False,
    copy: bool = False,
) -> SessionWorkspace:
    """Make the folder a session works in: a worktree of a git checkout, else a copy.

    `copy` forces a copy even inside a checkout (the demo templates); `in_place` works in
    the user's folder itself, with a warning. A dirty checkout is refused unless
    `allow_dirty`, in which case its uncommitted changes are the session's starting point."""
    source = Path(workspace)
    if not source.is_dir():
        raise WorkspaceError(f"the workspace {workspace} is not an existing directory")
    if in_place:
        if copy:
            raise WorkspaceError("a demo template is always copied; it cannot be worked in place")
        warning = f"working in place: edits land in {source} itself, with no undo"
        return SessionWorkspace(source, source.resolve(), "in-place", session_id, warning=warning)
    home = Path(data_dir).resolve() / "workspaces" / session_id
    if home.exists():
        raise WorkspaceError(f"{home} already exists; a session id is used once")
    branch = f"astra/{session_id}"
    _check_branch_name(branch)
    top = None if copy else git_checkout_top(source)
    if home.is_relative_to(top or source.resolve()):
        raise WorkspaceError(f"the data dir {data_dir} lies inside the workspace {top or source}")
    if top is None:
        return _copy(source, home / "workspace", session_id, branch)
    return _worktree(source, top, home / "worktree", session_id, branch, allow_dirty)


def _worktree(
    source: Path, top: Path, folder: Path, session_id: str, branch: str, allow_dirty: bool
) -> SessionWorkspace:
    changes = uncommitted(top)
    if changes and not allow_dirty:
        raise WorkspaceError(
            f"the git checkout {top} has {len(changes)} uncommitted change(s); commit or stash "
            "them, or pass --allow-dirty to start from them"
        )
    try:
        _git(top, "rev-parse", "--verify", "-q", "HEAD")
    except WorkspaceError:
        raise WorkspaceError(f"the git checkout {top} has no commit yet") from None
    folder.parent.mkdir(parents=True, exist_ok=True)
    _git(top, "worktree", "add", "-q", "-b", branch, str(folder), "HEAD")
    if changes:  # start from the checkout as it is, as one commit the diff is taken against
        if patch := _git(top, "diff", "HEAD", "--binary"):
            _git(folder, "apply", "--binary", "-", stdin=patch)
        for name in _git(top, "ls-files", "--others", "--exclude-standard", "-z").split("\0"):
            if name:
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(top / name, folder / name, follow_symlinks=False)
        _commit(folder, "Astra: the checkout's uncommitted changes at the session's start")
    project = source.resolve().relative_to(top)
    linked = _link_environments(top, folder, {Path(), project})
    base = _git(folder, "rev-parse", "HEAD").strip()
    return SessionWorkspace(
        source, folder / project, "worktree", session_id, folder, branch, base, top, linked=linked
    )


def _copy(source: Path, folder: Path, session_id: str, branch: str) -> SessionWorkspace:
    ignore = shutil.ignore_patterns(*NOT_COPIED, *LINKED)
    shutil.copytree(source, folder, symlinks=True, ignore=ignore)
    linked = _link_environments(source.resolve(), folder, {Path()})
    _git(folder, "init", "-q", "-b", branch)
    _commit(folder, f"Astra: {source} as the session's start", linked, allow_empty=True)
    base = _git(folder, "rev-parse", "HEAD").strip()
    return SessionWorkspace(source, folder, "copy", session_id, folder, branch, base, linked=linked)


def _link_environments(user: Path, folder: Path, places: set[Path]) -> tuple[str, ...]:
    """Link each venv or node_modules the user has at `places` (relative folders) into the
    session's `folder` where it has none; the links made, relative to `folder`."""
    linked = []
    for place in sorted(places):
        for name in LINKED:
            target, link = user / place / name, folder / place / name
            if target.is_dir() and not link.exists() and not link.is_symlink():
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(target.resolve(), target_is_directory=True)
                linked.append((place / name).as_posix())
    return tuple(linked)


def _add_all(repo: Path, linked: tuple[str, ...]) -> None:
    """Stage everything in repo's work tree but the links to the user's environments (a
    venv's link is no directory to git, so a `.venv/` ignore rule does not cover it)."""
    _git(repo, "add", "-A", "--", ".", *(f":(top,exclude){path}" for path in linked))


def _commit(
    repo: Path, message: str, linked: tuple[str, ...] = (), *, allow_empty: bool = False
) -> None:
    """Commit everything in repo's work tree, when there is anything (or allow_empty)."""
    _add_all(repo, linked)
    if allow_empty or _git(repo, "diff", "--cached", "--name-only"):
        empty = ("--allow-empty",) if allow_empty else ()
        _git(repo, *AS_ASTRA, "commit", "--no-verify", "-q", *empty, "-m", message)


def _check_branch_name(branch: str) -> None:
    try:
        _git(Path.cwd(), "check-ref-format", "--branch", branch)
    except WorkspaceError:
        raise WorkspaceError(f"{branch!r} is not a valid git branch name") from None


def _git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    """git's stdout; a failure is a WorkspaceError carrying git's first line of complaint."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise WorkspaceError(f"git failed: {error}") from error
    if done.returncode != 0:
        command = next((arg for arg in args if arg.isalpha()), "")
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise WorkspaceError(f"git {command}: {lines[0] if lines else f'exit {done.returncode}'}")
    return done.stdout
