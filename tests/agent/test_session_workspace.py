"""Session workspaces over real git repositories and plain folders made in tmp."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.worktree import (
    SessionWorkspace,
    WorkspaceError,
    git_checkout_top,
    open_session_workspace,
    uncommitted,
)
from tests.agent.gitrepo import git, isolate_git, repository


@pytest.fixture(autouse=True)
def git_identity(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    isolate_git(tmp_path_factory.mktemp("git"), monkeypatch)


def fix(session: SessionWorkspace) -> None:
    """What a session does: edit a file and add one."""
    (session.root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (session.root / "NOTES.md").write_text("fixed add\n")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return repository(tmp_path / "project")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def branches(checkout: Path) -> list[str]:
    return git(checkout, "branch", "--format=%(refname:short)").split()


# Git checkouts


def test_a_session_in_a_checkout_works_in_a_worktree_and_leaves_the_checkout_alone(
    checkout: Path, data_dir: Path
):
    session = open_session_workspace(checkout, "s1", data_dir)
    fix(session)

    assert session.kind == "worktree" and session.branch == "astra/s1"
    assert session.root == data_dir.resolve() / "workspaces" / "s1" / "worktree"
    assert "return a - b" in (checkout / "app.py").read_text()
    assert not (checkout / "NOTES.md").exists()
    assert uncommitted(checkout) == []
    diff = session.diff()
    assert "-    return a - b\n+    return a + b" in diff
    assert "new file mode" in diff and "+fixed add" in diff


def test_keeping_the_branch_commits_the_fix_and_removes_the_worktree(
    checkout: Path, data_dir: Path
):
    session = open_session_workspace(checkout, "s1", data_dir)
    fix(session)

    said = session.finish("branch", "Astra: add adds")

    assert said == "kept the changes on branch astra/s1"
    assert not (data_dir / "workspaces" / "s1").exists()
    assert "return a + b" in git(checkout, "show", "astra/s1:app.py")
    assert git(checkout, "log", "-1", "--format=%s%n%an", "astra/s1") == "Astra: add adds\nAstra\n"
    assert "return a - b" in (checkout / "app.py").read_text()
    assert git(checkout, "branch", "--show-current").strip() == "main"


def test_apply_lands_the_diff_in_the_checkout_and_drops_the_branch(checkout: Path, data_dir: Path):
    session = open_session_workspace(checkout, "s1", data_dir)
    fix(session)

    said = session.finish("apply")

    assert said == f"applied the session's changes to {checkout}"
    assert "return a + b" in (checkout / "app.py").read_text()
    assert (checkout / "NOTES.md").read_text() == "fixed add\n"
    assert branches(checkout) == ["main"] and not session.root.exists()


def test_apply_refuses_a_diff_that_no_longer_applies_and_keeps_the_branch(
    checkout: Path, data_dir: Path
):
    session = open_session_workspace(checkout, "s1", data_dir)
    fix(session)
    (checkout / "app.py").write_text("def add(a, b):\n    return b - a\n")  # meanwhile

    with pytest.raises(
        WorkspaceError, match=r"does not apply.*kept the changes on branch astra/s1"
    ):
        session.finish("apply")

    assert (checkout / "app.py").read_text() == "def add(a, b):\n    return b - a\n"
    assert not (checkout / "NOTES.md").exists()
    assert "return a + b" in git(checkout, "show", "astra/s1:app.py")


def test_discard_removes_the_worktree_and_the_branch(checkout: Path, data_dir: Path):
    session = open_session_workspace(checkout, "s1", data_dir)
    fix(session)

    session.finish("discard")

    assert branches(checkout) == ["main"] and not (data_dir / "workspaces" / "s1").exists()
    assert "return a - b" in (checkout / "app.py").read_text()
    assert git(checkout, "worktree", "list").count("\n") == 1


@pytest.mark.parametrize("dirt", ["modified", "untracked", "staged"])
def test_a_dirty_checkout_is_refused(checkout: Path, data_dir: Path, dirt: str):
    if dirt == "untracked":
        (checkout / "scratch.py").write_text("x = 1\n")
    else:
        (checkout / "app.py").write_text("def add(a, b):\n    return 0\n")
        if dirt == "staged":
            git(checkout, "add", "app.py")

    with pytest.raises(WorkspaceError, match=r"1 uncommitted change.*--allow-dirty"):
        open_session_workspace(checkout, "s1", data_dir)

    assert branches(checkout) == ["main"] and not (data_dir / "workspaces" / "s1").exists()


def test_ignored_files_do_not_make_a_checkout_dirty(checkout: Path, data_dir: Path):
    (checkout / ".venv").mkdir()
    (checkout / ".venv" / "marker").write_text("")

    assert open_session_workspace(checkout, "s1", data_dir).kind == "worktree"


def test_a_worktree_sees_the_checkouts_venvs_and_never_diffs_them(checkout: Path, data_dir: Path):
    """`--test-cmd '.venv/bin/python -m pytest'` must find the venv in the worktree too, at
    the checkout's top and in the project's own folder (a workspace in a subfolder)."""
    (checkout / "service").mkdir()
    (checkout / "service" / "app.py").write_text("X = 1\n")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "service")
    for place in (checkout, checkout / "service"):
        (place / ".venv" / "bin").mkdir(parents=True)
        (place / ".venv" / "bin" / "python").write_text(f"# {place.name}\n")

    session = open_session_workspace(checkout / "service", "s1", data_dir)
    (session.root / "app.py").write_text("X = 2\n")

    assert session.linked == (".venv", "service/.venv")
    assert (session.root / ".venv" / "bin" / "python").read_text() == "# service\n"
    assert (session.repo / ".venv").resolve() == (checkout / ".venv").resolve()
    diff = session.diff()
    assert "+X = 2" in diff and ".venv" not in diff
    session.finish("branch")
    assert git(checkout, "show", "--stat", "--format=", "astra/s1").count("|") == 1
    assert (checkout / ".venv" / "bin" / "python").is_file()  # the user's own is untouched


def test_allow_dirty_starts_from_the_checkout_as_it_is(checkout: Path, data_dir: Path):
    (checkout / "test_app.py").write_text(
        "from app import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (checkout / "helper.py").write_text("HELP = 1\n")

    session = open_session_workspace(checkout, "s1", data_dir, allow_dirty=True)
    fix(session)

    assert "add(2, 3) == 5" in (session.root / "test_app.py").read_text()
    assert (session.root / "helper.py").read_text() == "HELP = 1\n"
    diff = session.diff()
    assert "app.py" in diff and "test_app.py" not in diff and "helper.py" not in diff
    session.finish("apply")
    assert "return a + b" in (checkout / "app.py").read_text()
    assert "add(2, 3) == 5" in (checkout / "test_app.py").read_text()


def test_a_workspace_in_a_subfolder_of_a_checkout(checkout: Path, data_dir: Path):
    (checkout / "service").mkdir()
    (checkout / "service" / "app.py").write_text("def add(a, b):\n    return a - b\n")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "service")

    session = open_session_workspace(checkout / "service", "s1", data_dir)
    fix(session)
    session.finish("apply")

    assert session.root.name == "service"
    assert "return a + b" in (checkout / "service" / "app.py").read_text()
    assert "return a - b" in (checkout / "app.py").read_text()


def test_a_checkout_without_a_commit_is_refused(tmp_path: Path, data_dir: Path):
    (tmp_path / "empty").mkdir()
    git(tmp_path / "empty", "init", "-q")

    with pytest.raises(WorkspaceError, match="has no commit yet"):
        open_session_workspace(tmp_path / "empty", "s1", data_dir)


# Plain folders, demo templates, in place


def plain_project(root: Path) -> Path:
    root.mkdir()
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").write_text("")
    return root


def test_a_plain_folder_is_copied_with_its_venv_linked_back(tmp_path: Path, data_dir: Path):
    source = plain_project(tmp_path / "plain")

    session = open_session_workspace(source, "s1", data_dir)
    fix(session)

    assert session.kind == "copy" and git_checkout_top(source) is None
    assert (source / "app.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert (session.root / ".venv").resolve() == (source / ".venv").resolve()
    assert not (session.root / "__pycache__").exists()
    diff = session.diff()
    assert "+    return a + b" in diff and "NOTES.md" in diff and ".venv" not in diff


def test_a_copy_applies_back_to_the_folder(tmp_path: Path, data_dir: Path):
    source = plain_project(tmp_path / "plain")
    session = open_session_workspace(source, "s1", data_dir)
    fix(session)

    session.finish("apply")

    assert (source / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (source / "NOTES.md").exists() and not (data_dir / "workspaces" / "s1").exists()
    assert not (source / ".git").exists()


def test_a_kept_copy_holds_the_fix_on_its_branch(tmp_path: Path, data_dir: Path):
    source = plain_project(tmp_path / "plain")
    session = open_session_workspace(source, "s1", data_dir)
    fix(session)

    said = session.finish("branch")

    assert said == f"kept the changes on branch astra/s1 in {session.root}"
    assert "return a + b" in git(session.root, "show", "astra/s1:app.py")
    assert "return a - b" in (source / "app.py").read_text()


def test_a_demo_template_inside_a_checkout_is_copied_not_branched(checkout: Path, data_dir: Path):
    (checkout / "demo").mkdir()
    (checkout / "demo" / "app.py").write_text("x = 1\n")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "demo")

    session = open_session_workspace(checkout / "demo", "s1", data_dir, copy=True)
    (session.root / "app.py").write_text("x = 2\n")
    session.finish("discard")

    assert session.kind == "copy" and branches(checkout) == ["main"]
    assert (checkout / "demo" / "app.py").read_text() == "x = 1\n"
    assert not (data_dir / "workspaces" / "s1").exists()


def test_in_place_works_in_the_folder_itself_with_a_warning(tmp_path: Path, data_dir: Path):
    source = plain_project(tmp_path / "plain")

    session = open_session_workspace(source, "s1", data_dir, in_place=True)

    assert session.root == source.resolve() and session.kind == "in-place"
    assert "no undo" in (session.warning or "")
    assert session.diff() is None
    assert session.finish("discard") == f"the edits were made in place in {source}"
    assert not data_dir.exists()


@pytest.mark.parametrize(
    ("session_id", "options", "message"),
    [
        ("bad..id", {}, "not a valid git branch name"),
        ("s1", {"in_place": True, "copy": True}, "always copied"),
    ],
)
def test_bad_requests_are_one_clear_error(
    checkout: Path, data_dir: Path, session_id: str, options: dict[str, bool], message: str
):
    with pytest.raises(WorkspaceError, match=message):
        open_session_workspace(checkout, session_id, data_dir, **options)


def test_a_data_dir_inside_the_workspace_is_refused(tmp_path: Path, checkout: Path):
    source = plain_project(tmp_path / "plain")
    (checkout / "service").mkdir()

    with pytest.raises(WorkspaceError, match="lies inside the workspace"):
        open_session_workspace(source, "s1", source / "data")
    with pytest.raises(WorkspaceError, match="lies inside the workspace"):
        open_session_workspace(checkout / "service", "s1", checkout / "data")


def test_a_session_id_is_used_once(checkout: Path, data_dir: Path):
    open_session_workspace(checkout, "s1", data_dir).finish("branch")

    with pytest.raises(WorkspaceError, match="a branch named 'astra/s1' already exists"):
        open_session_workspace(checkout, "s1", data_dir)


# Git as a tool the program owns: the tests may write the session's folder, nothing more


def planted(root: Path, marker: Path) -> Path:
    """A git dir a test could plant, whose hook and fsmonitor would run `marker`'s touch."""
    fake = root.parent / "planted.git"
    git(root.parent, "init", "-q", "--bare", str(fake))
    hook = fake / "hooks" / "post-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(fake, "config", "core.fsmonitor", f"touch {marker}; false")
    return fake


@pytest.mark.parametrize("kind", ["worktree", "copy"])
def test_a_git_file_swapped_by_the_tests_is_one_error_and_never_followed(
    tmp_path: Path, data_dir: Path, kind: str
):
    source = (
        repository(tmp_path / "project")
        if kind == "worktree"
        else plain_project(tmp_path / "plain")
    )
    session = open_session_workspace(source, "s1", data_dir)
    assert session.kind == kind and session.git_dir is not None
    assert not session.git_dir.is_relative_to(session.root)  # out of the tests' reach
    fix(session)
    marker = tmp_path / "ran-on-the-host"
    (session.root / ".git").write_text(f"gitdir: {planted(session.root, marker)}\n")

    with pytest.raises(WorkspaceError, match=r"\.git changed while the session ran") as error:
        session.finish("branch")
    assert "\n" not in str(error.value) and not marker.exists()


def test_the_users_hooks_and_fsmonitor_never_run_for_the_session(checkout: Path, data_dir: Path):
    marker = checkout.parent / "ran-on-the-host"
    for hook in ("post-checkout", "pre-commit", "post-commit"):
        path = checkout / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        path.chmod(0o755)
    git(checkout, "config", "core.fsmonitor", f"echo fsmonitor >> {marker}; false")

    session = open_session_workspace(checkout, "s1", data_dir)
    fix(session)
    assert "return a + b" in (session.diff() or "")
    session.finish("branch")

    assert not marker.exists()
    assert "astra/s1" in branches(checkout)


FIXED = "def add(a, b):\n    return a + b\n"


def nested_repository(root: Path) -> None:
    git(root, "init", "-q", "vendor")
    (root / "vendor" / "payload.py").write_text("print('from the tests')\n")
    git(root / "vendor", "add", "-A")
    git(root / "vendor", "commit", "-q", "-m", "planted")


def folder_for_a_file(root: Path) -> None:
    (root / "test_app.py").unlink()
    (root / "test_app.py").mkdir()
    (root / "test_app.py" / "inner.py").write_text("x = 1\n")


TESTS_DO = {
    "delete a file": lambda root: (root / "test_app.py").unlink(),
    "chmod a file": lambda root: (root / "test_app.py").chmod(0o755),
    "chmod the approved file": lambda root: (root / "app.py").chmod(0o755),
    "link the approved file": lambda root: (
        (root.parent / "elsewhere.py").write_text(FIXED),
        (root / "app.py").unlink(),
        (root / "app.py").symlink_to(root.parent / "elsewhere.py"),
    ),
    "rewrite the approved file": lambda root: (root / "app.py").write_text(FIXED + "# more\n"),
    "nest a repository": nested_repository,
    "put a folder where a file was": folder_for_a_file,
    "name files as pathspec magic": lambda root: [
        (root / name).write_text("planted\n") for name in (":(glob)payload", ":(exclude)x")
    ],
}


@pytest.mark.parametrize("attack", TESTS_DO)
def test_only_the_approved_edit_leaves_the_session(checkout: Path, data_dir: Path, attack: str):
    """The model's approved edit to app.py, then the tests change something else: each
    change they made is found as unapproved, and left out the checkout is the edit alone."""
    session = open_session_workspace(checkout, "s1", data_dir)
    (session.root / "app.py").write_text(FIXED)
    TESTS_DO[attack](session.root)

    written = session.unapproved({"app.py": FIXED})
    session.leave_out(written, {"app.py": FIXED})
    assert session.unapproved({"app.py": FIXED}) == {}
    session.finish("apply")

    assert written and all(diff for diff in written.values())
    assert git(checkout, "status", "--porcelain", "--untracked-files=all") == " M app.py\n"
    assert git(checkout, "diff", "--summary") == ""  # no mode change
    assert (checkout / "app.py").read_text() == FIXED and not (checkout / "app.py").is_symlink()
