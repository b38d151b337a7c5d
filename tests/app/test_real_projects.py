"""Sessions on real git repositories made in tmp: a project whose tests are a shell script,
fixed offline by a rehearsal written here, with the user's checkout untouched until apply."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from agent.project_tests import resolve_test_command
from agent.supervisor import EditDecision
from app.cli.main import main
from app.config.settings import Settings
from app.sessions.builder import build_agent, finish
from app.sessions.headless import HeadlessSupervisor
from app.sessions.options import SessionOptions
from memory.stores.protocol import open_store
from tests.agent.gitrepo import git, isolate_git
from tests.agent.responses_server import ResponsesServer
from tests.fakes import HashEmbedder

BUGGY = "add() { echo $(($1 - $2)); }\n"
CHECK = (
    "#!/bin/sh\n. ./calc.sh\n"
    'if [ "$(add 2 2)" = 4 ]; then echo "1 passed, 0 failed"; '
    'else echo "0 passed, 1 failed"; exit 1; fi\n'
)
EDIT = {"path": "calc.sh", "old_text": "$1 - $2", "new_text": "$1 + $2"}


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    isolate_git(tmp_path, monkeypatch)
    monkeypatch.setenv("ASTRA_DATA_DIR", str(tmp_path / "data"))
    for name in ("ASTRA_MEMORY_URL", "OPENAI_API_KEY", "ASTRA_BUDGET_USD", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "data"


@pytest.fixture
def project(tmp_path, data_dir) -> Path:
    """A git checkout whose tests are a shell script with its own interpreter (#!/bin/sh)."""
    root = tmp_path / "calc"
    root.mkdir()
    (root / "calc.sh").write_text(BUGGY)
    (root / "check.sh").write_text(CHECK)
    (root / "check.sh").chmod((root / "check.sh").stat().st_mode | stat.S_IXUSR)
    (root / ".astra-memory.toml").write_text('test-command = "./check.sh"\n')
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def call(name: str, arguments: dict, number: int) -> dict:
    return {
        "output": [
            {
                "type": "function_call",
                "call_id": f"c{number}",
                "name": name,
                "arguments": json.dumps(arguments),
            }
        ]
    }


def final(text: str) -> dict:
    content = [{"type": "output_text", "text": text}]
    return {"output": [{"type": "message", "role": "assistant", "content": content}]}


def script(tmp_path: Path, project: Path, *turns: dict) -> Path:
    path = tmp_path / "rehearsal.jsonl"
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    return path


def fixing(tmp_path: Path, project: Path) -> Path:
    outcome = f"{resolve_test_command(project).display} passed with exit code 0 (1 passed)"
    store = {
        "fix_description": "add subtracted; it adds now",
        "error_type": "WrongResult",
        "file_paths": ["calc.sh"],
        "outcome": outcome,
    }
    search = {"query": "0 passed, 1 failed add", "error_type": None, "top_k": 3}
    return script(
        tmp_path,
        project,
        call("run_tests", {}, 1),
        call("search_codebase_memory", search, 2),
        call("apply_edit", EDIT, 3),
        call("run_tests", {}, 4),
        call("store_fix_memory", store, 5),
        final("add adds."),
    )


def run(capsys, *argv: str) -> tuple[int, list[dict], str]:
    code = main(["run", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.startswith("{")], err


def test_a_shell_project_is_fixed_on_its_branch_and_the_checkout_untouched(
    capsys, tmp_path, project, data_dir, real_embedder
):
    rehearsal = fixing(tmp_path, project)
    code, events, err = run(
        capsys, "--workspace", str(project), "--replay", str(rehearsal), "--store", "yes"
    )
    report = events[-1]
    assert code == 0, err
    assert report["status"] == "completed" and len(report["stored_memory_ids"]) == 1
    assert report["test_command"] == {"command": "./check.sh", "source": ".astra-memory.toml"}
    assert report["edits_approved"] == 1 and report["edits_rejected"] == 0
    branch = report["branch"]
    assert branch.startswith("astra/")
    assert (project / "calc.sh").read_text() == BUGGY  # the user's checkout: untouched
    assert git(project, "status", "--porcelain") == ""
    assert "$1 + $2" in git(project, "show", f"{branch}:calc.sh")  # the branch holds the fix
    assert f"kept the changes on branch {branch}" in err
    assert main(["memory", "show", report["stored_memory_ids"][0], "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    record = record.get("record", record)
    evidence = record["evidence"]
    assert (evidence["exit_code"], evidence["failing"]["exit_code"]) == (0, 1)
    assert evidence["source"] == ".astra-memory.toml"
    assert "0 passed, 1 failed" in evidence["failing"]["output_excerpt"]
    assert record["diff"].startswith("diff --git a/calc.sh b/calc.sh")  # git's diff


def test_apply_brings_the_fix_into_the_checkout(capsys, tmp_path, project, real_embedder):
    rehearsal = fixing(tmp_path, project)
    argv = ("--workspace", str(project), "--replay", str(rehearsal), "--store", "no")
    code, _events, err = run(capsys, *argv, "--on-success", "apply")
    assert code == 0, err
    assert "$1 + $2" in (project / "calc.sh").read_text()
    assert git(project, "branch", "--list", "astra/*") == ""  # applied: the branch is gone


def test_a_dirty_tree_is_refused(capsys, tmp_path, project, data_dir):
    (project / "calc.sh").write_text(BUGGY + "# work in progress\n")
    rehearsal = fixing(tmp_path, project)
    code, events, err = run(capsys, "--workspace", str(project), "--replay", str(rehearsal))
    assert code == 2 and events == []
    assert "uncommitted change" in err and "--allow-dirty" in err
    assert not (data_dir / "workspaces").exists() or not any((data_dir / "workspaces").iterdir())


def test_already_green_tests_store_nothing(capsys, tmp_path, project, real_embedder):
    (project / "calc.sh").write_text(BUGGY.replace("-", "+"))
    git(project, "commit", "-qam", "fixed by hand")
    rehearsal = script(tmp_path, project, call("run_tests", {}, 1), final("Nothing to fix."))
    code, events, err = run(
        capsys, "--workspace", str(project), "--replay", str(rehearsal), "--store", "yes"
    )
    report = events[-1]
    assert code == 0, err
    assert report["status"] == "nothing-to-fix" and report["stored_memory_ids"] == []
    # the preflight's green run settles it: no request is sent, none is paid for
    assert report["model_requests"] == 0 and report["tests"]["exit_code"] == 0
    assert not [e for e in events if e["event"] in ("model_requested", "tool_answered")]
    notes = [e["message"] for e in events if e["event"] == "note"]
    assert any("nothing to fix, no request sent" in note for note in notes)
    assert git(project, "branch", "--list", "astra/*") == ""  # no edit: nothing kept


async def test_a_rejected_edit_reaches_the_model_as_an_error(tmp_path, project, data_dir):
    rehearsal = script(
        tmp_path,
        project,
        call("run_tests", {}, 1),
        call("search_codebase_memory", {"query": "add", "error_type": None, "top_k": 3}, 2),
        call("apply_edit", EDIT, 3),
        final("The operator rejected the edit."),
    )
    asked = []

    def refuse(proposal):
        asked.append(proposal)
        return EditDecision(False, "too  broad\n")

    settings = Settings.from_environment()
    store = open_store(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    events: list = []
    agent = build_agent(
        settings,
        SessionOptions(replay=rehearsal, edits="ask"),
        workspace=project,
        store=store,
        supervisor=HeadlessSupervisor(approve_live_cost=False, store="no", ask_edit=refuse),
        emit=events.append,
        session_id="reject-test",
        embedder=HashEmbedder(),
        operator_present=True,
    )
    report = await agent.run("fix it")
    await store.close()
    answers = {e.call_id: e.output for e in events if e.event == "tool_answered"}
    assert answers["c3"] == "ERROR: operator rejected: too broad"
    assert "-add() { echo $(($1 - $2)); }" in asked[0].diff
    assert (report.edits_approved, report.edits_rejected) == (0, 1)
    assert (agent.tools.root / "calc.sh").read_text() == BUGGY


def test_an_unreachable_store_stops_the_session_before_any_request(
    capsys, project, monkeypatch, real_embedder
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
    with ResponsesServer() as server:
        code, events, err = run(
            capsys,
            *("--workspace", str(project), "--live", "--approve-live-cost"),
            *("--base-url", server.base_url, "--memory", "vectorai://127.0.0.1:1"),
        )
        assert server.requests == []
    assert code == 2
    # the check's own line says why, once; the error line names it (it repeated the line)
    [error] = [line for line in err.splitlines() if "error:" in line]
    assert error.endswith("error: preflight failed (store): nothing was sent")
    assert not [e for e in events if e["event"] == "model_requested"]
    [note] = [e for e in events if e["event"] == "note" and e["level"] == "error"]
    assert note["message"].startswith("FAILED store: VectorAI DB at 127.0.0.1:1 did not answer")


def test_doctor_prints_one_line_per_check_and_exits_2_on_a_failure(capsys, project, real_embedder):
    assert main(["doctor", "--workspace", str(project)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0].split(maxsplit=1) for line in lines] == [
        ["ok", "store"],
        ["ok", "embedding model"],
        ["ok", "sandbox"],
        ["ok", "git tree"],
        ["ok", "test command"],
    ]
    (project / "calc.sh").write_text("changed\n")
    assert main(["doctor", "--workspace", str(project)]) == 2
    assert "FAILED git tree" in capsys.readouterr().out
    assert main(["doctor"]) == 0  # no project: says what it left unchecked
    assert capsys.readouterr().out.splitlines()[-1] == (
        "not checked: a project's sandbox, git tree and tests (add --workspace DIR)"
    )


WHERE_IT_RUNS = (
    '#!/bin/sh\ncase "$(pwd)" in */workspaces/*) exec ./check.sh;; esac\n'
    'echo "ran in the checkout: $(pwd)"; exit 3\n'
)


@pytest.fixture
def venv_project(project) -> Path:
    """The project with a git-ignored `.venv` holding its test runner, as a user's has."""
    (project / ".gitignore").write_text(".venv/\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "ignore the venv")
    runner = project / ".venv" / "bin" / "tests"
    runner.parent.mkdir(parents=True)
    runner.write_text(WHERE_IT_RUNS)
    runner.chmod(0o755)
    return project


def test_doctor_and_the_session_run_a_venv_test_command_where_the_session_works(
    capsys, tmp_path, venv_project, data_dir, real_embedder
):
    flags = ("--workspace", str(venv_project), "--test-cmd", ".venv/bin/tests")
    assert main(["doctor", *flags]) == 0
    [tests] = [line for line in capsys.readouterr().out.splitlines() if "test command" in line]
    assert (
        tests
        == "ok     test command: .venv/bin/tests (flag): ran, exit code 1, 0 passed, 1 failed "
        "(red: a session starts here)"
    )
    assert list((data_dir / "workspaces").iterdir()) == []  # its worktree is gone
    assert git(venv_project, "branch", "--format=%(refname:short)").split() == ["main"]

    code, events, err = run(
        capsys, *flags, "--replay", str(script(tmp_path, venv_project, final("?")))
    )
    notes = [e["message"] for e in events if e["event"] == "note"]
    assert code == 4, err  # the gate: an answer before any memory search
    assert (
        "ok     test command: .venv/bin/tests (flag): ran, exit code 1, 0 passed, 1 failed "
        "(red: a session starts here)" in notes
    )


def test_doctor_fails_a_test_command_the_session_s_folder_cannot_start(
    capsys, venv_project, data_dir, real_embedder
):
    flags = ("--workspace", str(venv_project), "--test-cmd", ".venv/bin/nothing -q")
    assert main(["doctor", *flags]) == 2
    out = capsys.readouterr().out
    assert (
        "FAILED test command: .venv/bin/nothing -q (flag): .venv/bin/nothing is not found in "
        f"the session's copy of {venv_project}\n" in out  # not the copy's folder, gone by now
    )


async def test_a_src_layout_project_imports_the_session_s_sources(tmp_path, data_dir):
    """A project installed -e in its own venv would import the user's checkout; the
    session's src comes first on PYTHONPATH."""
    root = tmp_path / "srcproj"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "__init__.py").write_text("")
    from agent.project_tests import TestCommand
    from agent.workspace_tools import WorkspaceTools

    command = TestCommand(("python3", "-c", "import pkg; print(pkg.__file__)"), "print pkg", "flag")
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": "/elsewhere"}
    run = await WorkspaceTools(root, base_env=env, test_command=command).run_tests()
    assert run.output.strip() == str(root.resolve() / "src" / "pkg" / "__init__.py")


WRITES_TOO = CHECK.replace(
    "#!/bin/sh\n",
    "#!/bin/sh\necho 'import os' > planted.py\n"
    "mkdir -p __pycache__ && echo x > __pycache__/c.pyc\n",
)


@pytest.mark.parametrize(("edits", "kept"), [("ask", False), ("ask", True), ("auto", True)])
async def test_what_the_tests_wrote_leaves_the_session_only_if_approved(
    tmp_path, project, data_dir, edits, kept
):
    """The tests write planted.py (and a cache): only the model's approved edit is applied
    to the checkout, unless the operator (or --edits auto) approves the tests' file too."""
    (project / "check.sh").write_text(WRITES_TOO)
    git(project, "commit", "-qam", "tests that write")
    asked = []

    def decide(proposal):
        asked.append(proposal)
        return EditDecision(kept if proposal.by_tests else True)

    store = open_store(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    agent = build_agent(
        Settings.from_environment(),
        SessionOptions(replay=fixing(tmp_path, project), edits=edits, no_sandbox=True),
        workspace=project,
        store=store,
        supervisor=HeadlessSupervisor(approve_live_cost=False, store="yes", ask_edit=decide),
        emit=lambda event: None,
        session_id=f"tests-wrote-{edits}-{kept}",
        embedder=HashEmbedder(),
        operator_present=True,
    )
    report = await agent.run("fix it")
    await store.close()
    line = await finish(agent, "apply")

    assert report.exit_code == 0 and "$1 + $2" in (project / "calc.sh").read_text()
    assert (project / "planted.py").exists() is kept
    assert not (project / "__pycache__").exists()  # a cache is never asked about, never kept
    by_tests = [proposal.path for proposal in asked if proposal.by_tests]
    assert by_tests == ([] if edits == "auto" else ["planted.py"])
    said = "(--edits auto approves them)" if edits == "auto" else "(approved)"
    expected = (
        f"kept 1 file(s) the tests wrote {said}: planted.py"
        if kept
        else ("left out 1 file(s) the tests wrote, not approved: planted.py")
    )
    assert line is not None and line.startswith(expected)


def test_a_record_keeps_no_terminal_codes_of_a_project_that_forces_colour(
    capsys, tmp_path, project, data_dir, real_embedder
):
    """Projects that force `--color=yes` print ANSI codes: the record's evidence and symptom
    keep the words, not the codes, and the counts are still read."""
    coloured = CHECK.replace(
        'echo "1 passed, 0 failed"', r'printf "\033[32m1 passed, 0 failed\033[0m\n"'
    )
    coloured = coloured.replace(
        'echo "0 passed, 1 failed"', r'printf "\033[31m0 passed, 1 failed\033[0m\n"'
    )
    assert coloured.count("033[") == 4
    (project / "check.sh").write_text(coloured)
    git(project, "commit", "-qam", "colour")
    rehearsal = fixing(tmp_path, project)
    turns = [json.loads(line) for line in rehearsal.read_text().splitlines()]
    search = json.loads(turns[1]["output"][0]["arguments"])
    search["query"] = "\x1b[31m0 passed, 1 failed\x1b[0m add"
    turns[1]["output"][0]["arguments"] = json.dumps(search)
    rehearsal.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    code, events, err = run(
        capsys, "--workspace", str(project), "--replay", str(rehearsal), "--store", "yes"
    )
    report = events[-1]
    assert code == 0, err
    assert (report["tests"]["passed"], report["tests"]["failed"]) == (1, 0)
    assert main(["memory", "show", report["stored_memory_ids"][0], "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    record = record.get("record", record)
    excerpts = [
        record["evidence"]["output_excerpt"],
        record["evidence"]["failing"]["output_excerpt"],
    ]
    assert "1 passed" in excerpts[0] and "0 passed" in excerpts[1]
    assert record["symptom"].startswith("0 passed, 1 failed add")
    assert "\x1b" not in json.dumps(record, ensure_ascii=False)


def test_a_script_that_reads_files_the_project_lacks_is_said_to_be_another_project_s(
    capsys, tmp_path, project, data_dir, real_embedder
):
    """The demo's script, replayed on a user's project, ran to its scripted "all tests
    pass" without a word that it belonged to another project."""
    theirs = script(
        tmp_path,
        project,
        call("read_file", {"path": "calc.sh"}, 1),
        call("read_file", {"path": "app/service.py"}, 2),
        call("read_file", {"path": "app/settings.py"}, 3),
        final("done."),
    )
    code, events, _ = run(capsys, "--workspace", str(project), "--replay", str(theirs))
    warnings = [e["message"] for e in events if e["event"] == "note" and e["level"] == "warning"]
    assert warnings == [
        f"the rehearsal script reads app/service.py and 1 more, which {project} lacks: it was "
        "written for another project, and its turns will not fit this one"
    ]
    # played all the same (a note, not a refusal): the missing file is the tool's ERROR:
    answers = [e for e in events if e["event"] == "tool_answered"]
    assert code != 2 and [a["output"].startswith("ERROR:") for a in answers] == [False, True, True]
    ours = script(tmp_path, project, call("read_file", {"path": "calc.sh"}, 1), final("done."))
    _, events, _ = run(capsys, "--workspace", str(project), "--replay", str(ours))
    assert [e for e in events if e["event"] == "note" and e["level"] == "warning"] == []
