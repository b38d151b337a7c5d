"""Reading failure text: its kind and its parts, on the shapes real output takes."""

from __future__ import annotations

import pytest

from memory.retrieval.failure_text import focus, read_failure
from tests.memory.pytest_runs import banner, whole_run

PYTEST_REPORT = """\
relcli/cli.py:39: in cli
    ctx.obj.conf = load_config(config_path(), profile=profile)
/usr/lib/python3.11/contextlib.py:137: in __enter__
    return next(self.gen)
relcli/config.py:79: in apply_env_overrides
    conf["signing"]["key_id"] = env["RELCLI_SIGN_KEY"]
E   KeyError: 'signing'
FAILED tests/test_cli.py::test_sign_with_key_from_env - KeyError: 'signing'
1 failed, 21 passed in 0.88s"""

ASSERTION_REPORT = """\
    def test_latest_prerelease(cli_runner, git_repo):
>       assert result.output.strip() == "v3.0.0-beta.11"
E       AssertionError: assert 'v3.0.0-beta.7' == 'v3.0.0-beta.11'
E         - v3.0.0-beta.11
tests/test_cli.py:131: AssertionError"""

TRACEBACK = """\
Traceback (most recent call last):
  File "/home/u/src/cpm-python/main.py", line 30, in <module>
    data = data.append(df)
  File "/venv/lib64/python3.11/site-packages/pandas/core/generic.py", line 5989, in __getattr__
    return object.__getattribute__(self, name)
AttributeError: 'DataFrame' object has no attribute 'append'. Did you mean: '_append'?"""


def test_a_pytest_report_gives_its_failing_test_exception_and_frames_by_owner():
    reading = read_failure(PYTEST_REPORT)
    assert reading.kind == "test report"
    assert reading.tests == ("tests/test_cli.py::test_sign_with_key_from_env",)
    assert reading.exception == "KeyError: 'signing'"
    assert reading.project_frames == ("relcli/cli.py cli", "relcli/config.py apply_env_overrides")
    assert reading.library_frames == ("/usr/lib/python3.11/contextlib.py __enter__",)


def test_an_assertion_report_keeps_the_failing_line_and_the_diff():
    reading = read_failure(ASSERTION_REPORT)
    assert reading.kind == "test report"
    assert reading.exception == "AssertionError: assert 'v3.0.0-beta.7' == 'v3.0.0-beta.11'"
    assert reading.assertion == (
        'assert result.output.strip() == "v3.0.0-beta.11"',
        "- v3.0.0-beta.11",
    )


def test_a_python_traceback_splits_the_projects_frames_from_site_packages():
    reading = read_failure(TRACEBACK)
    assert reading.kind == "traceback"
    assert reading.project_frames == ("/home/u/src/cpm-python/main.py <module>",)
    assert reading.library_frames == (
        "/venv/lib64/python3.11/site-packages/pandas/core/generic.py __getattr__",
    )
    assert reading.exception.startswith("AttributeError: 'DataFrame' object has no attribute")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "message"),
        ("ObjectNotExecutableError: Not an executable object: 'SELECT 1'", "message"),
        ("sqlalchemy.exc.StatementError when adding new sketch from ui", "message"),
        ("> TypeError: 'NoneType' object is not subscriptable", "message"),  # a quote
        ("ERROR django.request Internal Server Error: /api/", "message"),  # a log line
        ('app/api.py:5: error: Library stubs not installed for "requests"', "message"),  # mypy
        ("app/api.py:5:80: E501 line too long (88 > 79 characters)", "message"),  # flake8
        ("E" * 5000, "message"),
        ("\x00\x1b[31m>\n" * 3, "message"),
        ("ERROR tests/test_db.py::test_connect - OperationalError", "test report"),
    ],
)
def test_what_only_looks_like_pytest_output_reads_as_a_message(text, kind):
    reading = read_failure(text)
    assert reading.kind == kind
    assert reading.tests == (() if kind == "message" else ("tests/test_db.py::test_connect",))


@pytest.mark.parametrize(
    "line", ["tests/test_db.py:3: assert 1 == 2", "tests/test_db.py:3: in test_connect"]
)
def test_pytests_line_and_frame_shapes_are_a_test_report(line):  # `--tb=line`, `--tb=short`
    assert read_failure(line).kind == "test report"


def test_a_message_keeps_its_dotted_exception():
    reading = read_failure("sqlalchemy.exc.ObjectNotExecutableError: Not an executable object")
    assert reading.kind == "message"
    assert reading.exception == "sqlalchemy.exc.ObjectNotExecutableError: Not an executable object"


@pytest.mark.parametrize(
    ("failure", "test"),
    [
        (PYTEST_REPORT, "test_sign_with_key_from_env"),
        (ASSERTION_REPORT, "test_case"),
        (TRACEBACK, "test_case"),
    ],
)
def test_focus_keeps_a_whole_runs_failures_and_drops_its_session_noise(failure, test):
    assert focus(whole_run(failure, seed=3)) == f"{banner(test, '_')}\n{failure}"
    assert focus(failure) == failure  # the failure alone has nothing to drop


def test_focus_drops_verbose_lines_of_passing_tests_but_keeps_failing_ones():
    verbose = (
        "tests/test_a.py::test_one PASSED                                         [ 50%]\n"
        "tests/test_a.py::test_two FAILED                                         [100%]\n"
        "E   KeyError: 'x'"
    )
    assert focus(verbose) == verbose.split("\n", 1)[1]
