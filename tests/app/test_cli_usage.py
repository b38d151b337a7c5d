"""The CLI as people use it: --version and help, flags refused before anything is written,
questions asked or declined out loud, output that pipes cleanly, and exact store paths."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agent.events import MemorySearchReport, SessionReport
from app.cli.commands.demo import own_program, print_demo_summary
from app.cli.main import main
from app.sessions.headless import ask_terminal
from app.sessions.options import SessionOptions
from app.sessions.queue import FinishedSession, SessionPlan
from tests.app.test_memory_cli import MINIMAL, data_dir, one_error_line, run, write_jsonl
from tests.app.test_session_cli import REHEARSAL

__all__ = ["data_dir"]  # a fixture (alpha comes from conftest)


def test_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("astra-memory 0.")


@pytest.mark.parametrize(("command", "words"), [("ledger", "ASTRA_BUDGET_USD"), ("demo", "exit")])
def test_ledger_and_demo_describe_themselves(capsys, command, words):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert words in capsys.readouterr().out


def test_the_default_command_keeps_the_env_file_it_was_given(capsys, data_dir, tmp_path):
    """`astra-memory --env-file FILE` opens the dashboard with FILE's settings, so a missing
    FILE is refused as it is with a command named."""
    missing = tmp_path / "nowhere.env"
    assert main(["--env-file", str(missing)]) == 2
    assert f"--env-file {missing}: no such file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--budget-usd", "-1"], "--budget-usd"),
        (["--budget-usd", "nan"], "--budget-usd"),
        (["--budget-usd", "inf"], "--budget-usd"),
        (["--max-turns", "0"], "--max-turns"),
    ],
)
def test_bad_session_flags_are_refused(capsys, data_dir, alpha, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(["run", "--workspace", str(alpha), "--replay", str(REHEARSAL), *argv])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and message in one_error_line(err)
    assert not data_dir.exists()  # nothing written: no store, no ledger, no transcript


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["memory", "--bogus"], "unrecognized arguments: --bogus (see astra-memory memory --help)"),
        (["memory", "list", "--bogus"], "--bogus (see astra-memory memory list --help)"),
        (["memory", "list", "--limit", "abc"], "--limit: expected a whole number, got 'abc'"),
        (["memory", "search", "x", "--top-k", "abc"], "--top-k: expected a whole number"),
        (["memory", "search", "x", "--min-score", "abc"], "--min-score: expected a number"),
        (["serve", "--port", "abc"], "argument --port: expected a whole number, got 'abc'"),
        (["serve", "--port", "0"], "argument --port: must be a port from 1 to 65535, got 0"),
        (["memory", "delete", "--yes"], "required: ID (see astra-memory memory delete --help)"),
        (["--env-file"], "argument --env-file: expected one argument"),  # not `--env-file tui`
    ],
)
def test_an_argument_error_names_the_flag_and_the_commands_help(capsys, data_dir, argv, words):
    """`memory --bogus` said ACTION was missing; `memory list --bogus` pointed to the top
    help; `--port abc` said 'invalid _port value'."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and words in one_error_line(capsys.readouterr().err)
    assert not data_dir.exists()


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0"])
def test_a_budget_is_refused_with_what_it_must_be_wherever_it_is_given(
    capsys, data_dir, monkeypatch, value
):
    """ASTRA_BUDGET_USD=inf said "must be 0 or more", though 0 is refused too."""
    wanted = f"must be a finite number of US dollars, more than 0, got '{value}'"
    monkeypatch.setenv("ASTRA_BUDGET_USD", value)
    code, _, err = run(capsys, "ledger")
    assert code == 2 and f"ASTRA_BUDGET_USD: {wanted}" in one_error_line(err)
    monkeypatch.delenv("ASTRA_BUDGET_USD")
    with pytest.raises(SystemExit):
        main(["doctor", "--budget-usd", value])
    assert f"--budget-usd: {wanted}" in one_error_line(capsys.readouterr().err)
    code, _, err = run(capsys, "config", "set", "budget_usd", value)
    assert code == 2 and wanted in one_error_line(err)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["search", "KeyError", "--min-score", "2"], "--min-score"),
        (["search", "KeyError", "--min-score", "-0.1"], "--min-score"),
        (["search", "  "], "query is empty"),
        (["search", ""], "query is empty"),
    ],
)
def test_bad_search_flags_are_refused(capsys, data_dir, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(["memory", *argv])
    assert exited.value.code == 2 and message in one_error_line(capsys.readouterr().err)
    assert not data_dir.exists()


@pytest.mark.parametrize("blank", ["", " "])
@pytest.mark.parametrize(
    "argv",
    [
        ("memory", "show", "{}"),
        ("memory", "delete", "{}", "--yes"),
        ("memory", "unstale", "{}"),
        ("smoke", "verify", "--memory-id", "{}"),
        ("sessions", "show", "{}"),
    ],
)
def test_an_empty_id_is_refused_not_taken_as_a_prefix_of_every_id(
    capsys, tmp_path, data_dir, argv, blank
):
    """An empty prefix would match every id: `delete '' --yes` deleted the only record."""
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    with pytest.raises(SystemExit) as exited:
        main([part.replace("{}", blank) for part in argv])
    assert exited.value.code == 2
    assert "the id is empty" in one_error_line(capsys.readouterr().err)
    assert len(json.loads(run(capsys, "memory", "list", "--json")[1])) == 1


def test_delete_without_a_terminal_needs_yes(capsys, tmp_path, data_dir):
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    [listed] = json.loads(run(capsys, "memory", "list", "--json")[1])
    code, _, err = run(capsys, "memory", "delete", listed["memory_id"])
    assert code == 2 and "--yes" in one_error_line(err)
    assert len(json.loads(run(capsys, "memory", "list", "--json")[1])) == 1
    assert run(capsys, "memory", "delete", listed["memory_id"][:8], "--yes")[0] == 0
    assert json.loads(run(capsys, "memory", "list", "--json")[1]) == []


def test_importing_twice_says_what_was_new(capsys, tmp_path, data_dir):
    other = {**MINIMAL, "fix_description": "Close the socket before retrying the upload."}
    first = write_jsonl(tmp_path / "one.jsonl", MINIMAL)
    both = write_jsonl(tmp_path / "two.jsonl", MINIMAL, other)
    assert "1 new, 0 already present" in run(capsys, "memory", "import", str(first))[1]
    out = run(capsys, "memory", "import", str(both))[1]
    assert "1 new, 1 already present" in out
    assert len(json.loads(run(capsys, "memory", "list", "--json")[1])) == 2


def test_piped_output_does_not_wrap(capsys, tmp_path, data_dir):
    symptom = " ".join(f"word{i}" for i in range(60))  # ~400 characters
    run(
        capsys,
        "memory",
        "import",
        str(write_jsonl(tmp_path / "in.jsonl", {**MINIMAL, "symptom": symptom})),
    )
    [listed] = json.loads(run(capsys, "memory", "list", "--json")[1])
    out = run(capsys, "memory", "show", listed["memory_id"])[1]
    assert symptom in out.splitlines()


def test_a_relative_sqlite_path_is_resolved_and_shown_so(capsys, tmp_path, data_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here").mkdir()
    code, out, _ = run(capsys, "memory", "stats", "--memory", "sqlite:///here/m.sqlite3")
    assert code == 0 and f"store: sqlite:///{tmp_path / 'here' / 'm.sqlite3'}" in out


def test_a_relative_sqlite_path_in_a_missing_folder_is_refused(
    capsys, tmp_path, data_dir, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "memory", "stats", "--memory", "sqlite:///nowhere/m.sqlite3")
    assert code == 2 and "does not exist" in one_error_line(err)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ("memory", "import", "{in}"),
        ("memory", "list"),
        ("memory", "search", "KeyError"),
        ("doctor",),
    ],
)
@pytest.mark.parametrize("given", ["flag", "environment"])
def test_an_in_memory_sqlite_url_is_refused(capsys, tmp_path, data_dir, monkeypatch, argv, given):
    """`sqlite:///:memory:` was resolved against the current folder: a file named `:memory:`."""
    monkeypatch.chdir(tmp_path)
    source = str(write_jsonl(tmp_path / "in.jsonl", MINIMAL))
    argv = tuple(part.replace("{in}", source) for part in argv)
    if given == "flag":
        argv += ("--memory", "sqlite:///:memory:")
    else:
        monkeypatch.setenv("ASTRA_MEMORY_URL", "sqlite:///:memory:")
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert "sqlite:///:memory: is not supported" in one_error_line(err)
    assert not (tmp_path / ":memory:").exists() and not data_dir.exists()


def test_the_environment_url_is_resolved_too(capsys, tmp_path, data_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ASTRA_MEMORY_URL", "sqlite:///missing/m.sqlite3")
    code, _, err = run(capsys, "memory", "list")
    assert code == 2 and str(tmp_path / "missing") in one_error_line(err)


def test_without_a_terminal_a_question_is_declined_out_loud(capsys):
    assert ask_terminal("Store fix 0123abcd? Write it to memory?") is False
    err = capsys.readouterr().err
    assert "Store fix 0123abcd" in err and "no terminal to ask" in err and "--store yes" in err


def _report(session_id: str, *, stored: list[str], exit_code: int = 0) -> SessionReport:
    return SessionReport(
        session_id=session_id,
        status="completed",
        exit_code=exit_code,
        model_requests=7,
        tool_calls=7,
        memory_searches=[],
        stored_memory_ids=stored,
        tests=None,
        tokens={},
        cost_usd=0.0,
        final_text="",
        first_edit_turn=3,
        first_search_turn=2,
        first_request_chained=False,
    )


def _finished(name: str, report: SessionReport, tmp_path) -> FinishedSession:
    return FinishedSession(SessionPlan(SessionOptions(), tmp_path / name, name), report, None)


def test_a_declined_store_makes_the_demo_incomplete_not_failed(capsys, tmp_path):
    sessions = [
        _finished("alpha", _report("alpha", stored=[]), tmp_path),
        _finished("beta", _report("beta", stored=[]), tmp_path),
    ]
    assert print_demo_summary(sessions, 0, "sqlite:///m") == 3
    out = capsys.readouterr().out
    assert "declined storing its fix" in out and "✗" not in out
    assert "not run: nothing stored" in out


def test_only_alpha_s_fix_counts_as_beta_s_retrieval(capsys, tmp_path):
    """A match of another cause is no success: with alpha's fix not delivered, the summary
    says nothing relevant was found and fails; with it, the other match is not counted."""
    other = MemorySearchReport(query="q", matches=[{"memory_id": "f" * 36, "score": 0.7}])
    found = MemorySearchReport(query="q", matches=[{"memory_id": "a" * 36, "score": 0.66}])
    alpha = _finished("alpha", _report("alpha", stored=["a" * 36]), tmp_path)
    for searches, code in (([other], 1), ([other, found], 0)):
        beta = _report("beta", stored=[]).model_copy(update={"memory_searches": searches})
        assert print_demo_summary([alpha, _finished("beta", beta, tmp_path)], 0, "m") == code
        out = capsys.readouterr().out
        assert "beta was also given 1 match(es) of another cause: not counted" in out
        if code:
            assert "✗ beta found nothing relevant in memory" in out
        else:
            assert "✓ beta retrieved alpha's fix, the same cause" in out


def test_the_demo_summary_says_where_it_stored_and_how_to_search_there(capsys, tmp_path):
    report = _report("alpha", stored=[])
    plan = SessionPlan(SessionOptions(scope="demo-20260101-000000-abc123"), tmp_path, "a")
    print_demo_summary([FinishedSession(plan, report, None)] * 2, 0, "sqlite:///m")
    out = capsys.readouterr().out
    assert "memory: sqlite:///m · scope demo-20260101-000000-abc123" in out
    assert (
        "astra-memory memory search --memory sqlite:///m --scope demo-20260101-000000-abc123 QUERY"
        in out
    )


def test_the_search_hint_names_the_program_as_the_shell_can_run_it(monkeypatch, tmp_path):
    """After the README's set-up the venv is not activated: `.venv/bin/astra-memory`."""
    installed = Path(sys.executable).parent / "astra-memory"
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.chdir(installed.parent.parent.parent)  # the project's root, above .venv
    assert own_program() == os.path.join(*installed.parts[-3:])
    monkeypatch.chdir(tmp_path)  # elsewhere: the whole path, not ../../..
    assert own_program() == str(installed.absolute())
    monkeypatch.setenv("PATH", str(installed.parent))
    assert own_program() == "astra-memory"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["memory", "list", "--scope", "a\udcff"], "--scope: the scope holds bytes that are not"),
        (["memory", "search", "a\udcff"], "QUERY: the query holds bytes that are not UTF-8"),
        (["memory", "show", "a\udcff"], "ID: the id holds bytes that are not UTF-8"),
    ],
)
def test_text_flags_of_bytes_that_are_not_utf8_are_one_line(capsys, data_dir, argv, words):
    """Python passes argv's undecodable bytes on as lone surrogates, which crashed SQLite,
    the tokenizer and the terminal with tracebacks."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and words in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["import", "eval"])
def test_an_input_file_that_cannot_be_read_is_one_plain_line(capsys, tmp_path, data_dir, command):
    """It said the path twice: `cannot read X: [Errno 2] No such file or directory: 'X'`.
    It is a usage error, exit 2, as a missing `run --replay` script is."""
    missing = tmp_path / "missing.jsonl"
    code, _, err = run(capsys, "memory", command, str(missing))
    assert code == 2 and one_error_line(err).endswith(
        f"cannot read {missing}: No such file or directory"
    )
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"query": "caf\xe9"}\n')
    code, _, err = run(capsys, "memory", command, str(latin))
    assert code == 2 and one_error_line(err).endswith(
        f"cannot read {latin}: byte 14 is not UTF-8 text"
    )
