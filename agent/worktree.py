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

Git is a tool this program owns: the project's tests are untrusted code, and they run with
the session's folder writable. So every git call runs without hooks or an fsmonitor (a
config that names a program), and every call on the session's repository names the git dir
recorded before any test ran, which lies outside the folder the tests may write (a copy's is
made apart from its work tree). A `.git` entry in the folder that changed since is an error,
never followed.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["worktree", "copy", "in-place"]
Finish = Literal["apply", "branch", "discard"]
Change = tuple[str, str, str]  # git's status letter, the path's mode at the start and now

NOT_COPIED = (".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox")
LINKED = (".venv", "venv", "node_modules")
# Every git call: no hooks (ours, the user's or planted) and no fsmonitor program.
OWNED = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
# Before a path the tests named: `:(glob)x` is a file's name, not a pathspec's magic.
LITERAL = "--literal-pathspecs"
# Our own commits: never the user's signing or identity prompts.
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
    git_dir: Path | None = None  # the session repository's, recorded before the tests ran
    dot_git: str = ""  # what repo/.git said then: "gitdir: <git_dir>"

    def shown_to_tests(self) -> tuple[Path, ...]:
        """What the sandboxed tests must see read-only: the session's folder (links to the
        user's venvs sit at its top) and the user's own (where those venvs lie)."""
        return (self.repo or self.root, self.checkout or self.source.resolve())

    def git(self, *args: str, stdin: str | None = None) -> str:
        """git on the session's repository: its recorded git dir and work tree, whatever the
        folder's `.git` says now; WorkspaceError if that changed since."""
        assert self.repo is not None and self.git_dir is not None, "in place there is no repo"
        entry = self.repo / ".git"
        if (
            entry.is_symlink()
            or not entry.is_file()
            or entry.read_text("utf-8", "replace") != self.dot_git
        ):
            raise WorkspaceError(
                f"{entry} changed while the session ran (its tests?): git is not run on it; "
                f"the session's files are left in {self.repo}"
            )
        where = ("--git-dir", str(self.git_dir), "--work-tree", str(self.repo))
        return _git(self.repo, *where, *args, stdin=stdin)

    def diff(self, *, binary: bool = False) -> str | None:
        """git's diff of the session's changes against its start, new files included;
        None in place, where WorkspaceTools.diff is all there is."""
        if self.repo is None or self.base is None:
            return None
        self._add_all()
        binary_flag = ["--binary"] if binary else []
        return self.git(
            "diff", "--cached", "--no-ext-diff", "--no-textconv", *binary_flag, self.base
        )

    def unapproved(self, approved: Mapping[str, str]) -> dict[str, str]:
        """Each path changed since the start as no approved edit left it (`approved`: path
        under root -> text), with its diff: what the tests wrote, deleted, linked or chmod-ed.
        Caches (`__pycache__`, `.pytest_cache`, ...) are not in it: `leave_out` drops them."""
        if self.repo is None or self.base is None:
            return {}
        found = {}
        for name, change in self._changed().items():
            if _is_cache(Path(name)):
                continue
            text = approved.get(self._under_root(name) or "")
            if text is None or not self._left_as(name, change, text):
                found[name] = self.git(
                    LITERAL, "diff", "--cached", "--no-ext-diff", "--no-textconv",
                    self.base, "--", name,
                )  # fmt: skip
        return found

    def _left_as(self, name: str, change: Change, text: str) -> bool:
        """The path is still the file it was at the start (its mode too), holding `text`."""
        assert self.repo is not None, "in place nothing is diffed"
        status, mode_before, mode_now = change
        current = self.repo / name
        if status != "M" or mode_before != mode_now or current.is_symlink():
            return False
        return current.is_file() and current.read_bytes() == text.encode("utf-8")

    def _under_root(self, name: str) -> str | None:
        """A path relative to repo as the session's tools name it (relative to root)."""
        assert self.repo is not None, "in place nothing is diffed"
        path, project = Path(name), self.root.relative_to(self.repo)
        return path.relative_to(project).as_posix() if path.is_relative_to(project) else None

    def leave_out(self, paths: Iterable[str], approved: Mapping[str, str]) -> None:
        """Put `paths` (relative to repo) and every cache back as they were at the start, or
        as the approved edit left them (`approved`, as for `unapproved`): what is new goes
        first (a folder where a file was), then the rest is restored."""
        if self.repo is None or self.base is None:
            return
        changes = self._changed()
        names = {*paths, *(name for name in changes if _is_cache(Path(name)))} & set(changes)
        for name in sorted(names, key=lambda name: changes[name][0] != "A"):
            if changes[name][0] == "A":
                self.git(LITERAL, "rm", "-q", "-r", "-f", "--cached", "--", name)
                _remove(self.repo, Path(name))
            else:
                restore = ("restore", "--source", self.base, "--staged", "--worktree")
                self.git(LITERAL, *restore, "--", name)
                if (text := approved.get(self._under_root(name) or "")) is not None:
                    (self.repo / name).write_bytes(text.encode("utf-8"))

    def _changed(self) -> dict[str, Change]:
        """Each path (relative to repo) that differs from the start, new files included:
        git's status letter (A, M, D or T for a type change) and its mode before and now."""
        self._add_all()
        raw = self.git("diff", "--cached", "--raw", "-z", "--no-renames", str(self.base))
        fields = raw.split("\0")
        changes = {}
        for head, name in zip(fields[0::2], fields[1::2], strict=False):
            old_mode, new_mode, *_, status = head.lstrip(":").split()
            changes[name] = (status, old_mode, new_mode)
        return changes

    def _add_all(self) -> None:
        """Stage everything in the work tree but the links to the user's environments (a
        venv's link is no directory to git, so a `.venv/` ignore rule does not cover it)."""
        self.git("add", "-A", "--", ".", *(f":(top,exclude){path}" for path in self.linked))

    def commit(self, message: str, *, allow_empty: bool = False) -> None:
        """Commit everything in the work tree, when there is anything (or allow_empty)."""
        self._add_all()
        if allow_empty or self.git("diff", "--cached", "--name-only"):
            empty = ("--allow-empty",) if allow_empty else ()
            self.git(*AS_ASTRA, "commit", "--no-verify", "-q", *empty, "-m", message)

    def finish(self, choice: Finish, message: str | None = None) -> str:
        """Apply, keep the branch, or discard; returns one line saying what happened."""
        if self.repo is None:
            return f"the edits were made in place in {self.source}"
        if choice == "apply":
            return self.apply()
        if choice == "branch":
            return self.keep_branch(message)
        self.discard()
        return f"discarded the session's changes and its branch {self.branch}"

    def apply(self) -> str:
        """Apply the session's diff to the user's checkout, then drop the session's copy.

        A diff that no longer applies (the checkout changed meanwhile) is refused before
        anything is written, and the changes are kept on the branch instead."""
        patch = self.diff(binary=True) or ""
        target = self.checkout or self.source
        # A copied workspace is no repository: name the copy's git dir so that a repository
        # around the user's folder cannot redirect the patch.
        prefix = () if self.checkout else ("--git-dir", str(self.git_dir), "--work-tree", ".")
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
        self.commit(message or f"Astra session {self.session_id}")
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


def uncommitted_count(changes: list[str]) -> str:
    """`1 uncommitted change`, `3 uncommitted changes`."""
    return f"{len(changes)} uncommitted change{'' if len(changes) == 1 else 's'}"


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
            f"the git checkout {top} has {uncommitted_count(changes)}; commit or stash them, "
            "or pass --allow-dirty to start from them"
        )
    try:
        _git(top, "rev-parse", "--verify", "-q", "HEAD")
    except WorkspaceError:
        raise WorkspaceError(f"the git checkout {top} has no commit yet") from None
    folder.parent.mkdir(parents=True, exist_ok=True)
    _git(top, "worktree", "add", "-q", "-b", branch, str(folder), "HEAD")
    project = source.resolve().relative_to(top)
    session = _owned(
        SessionWorkspace(source, folder / project, "worktree", session_id, folder, branch),
        Path(_git(folder, "rev-parse", "--absolute-git-dir").strip()),
    )
    session.checkout = top
    if changes:  # start from the checkout as it is, as one commit the diff is taken against
        if patch := _git(top, "diff", "HEAD", "--binary"):
            session.git("apply", "--binary", "-", stdin=patch)
        for name in _git(top, "ls-files", "--others", "--exclude-standard", "-z").split("\0"):
            if name:
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(top / name, folder / name, follow_symlinks=False)
        session.commit("Astra: the checkout's uncommitted changes at the session's start")
    session.linked = _link_environments(top, folder, {Path(), project})
    session.base = session.git("rev-parse", "HEAD").strip()
    return session


def _copy(source: Path, folder: Path, session_id: str, branch: str) -> SessionWorkspace:
    ignore = shutil.ignore_patterns(*NOT_COPIED, *LINKED)
    shutil.copytree(source, folder, symlinks=True, ignore=ignore)
    git_dir = folder.parent / "git"  # apart from the work tree: the tests cannot write it
    _git(folder, "init", "-q", "-b", branch, "--separate-git-dir", str(git_dir))
    session = _owned(SessionWorkspace(source, folder, "copy", session_id, folder, branch), git_dir)
    session.linked = _link_environments(source.resolve(), folder, {Path()})
    session.commit(f"Astra: {source} as the session's start", allow_empty=True)
    session.base = session.git("rev-parse", "HEAD").strip()
    return session


def _is_cache(path: Path) -> bool:
    return any(part in NOT_COPIED for part in path.parts) or path.suffix == ".pyc"


def _remove(repo: Path, path: Path) -> None:
    """Remove repo/path (a file, link or folder), then each folder above it left empty."""
    target = repo / path
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    else:
        target.unlink(missing_ok=True)
    for folder in (repo / parent for parent in path.parents if parent != Path()):
        if not folder.is_dir() or any(folder.iterdir()):
            break
        folder.rmdir()


def _owned(session: SessionWorkspace, git_dir: Path) -> SessionWorkspace:
    """The session with its git dir, and its folder's `.git` as it is now, recorded."""
    assert session.repo is not None
    session.git_dir = git_dir.resolve()
    session.dot_git = (session.repo / ".git").read_text("utf-8")
    return session


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


def _check_branch_name(branch: str) -> None:
    try:
        _git(Path.cwd(), "check-ref-format", "--branch", branch)
    except WorkspaceError:
        raise WorkspaceError(f"{branch!r} is not a valid git branch name") from None


def _git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    """git's stdout; a failure is a WorkspaceError carrying git's first line of complaint."""
    try:
        done = subprocess.run(
            ["git", *OWNED, *args],
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
