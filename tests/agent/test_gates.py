"""Red before green, table-tested: which histories of runs and edits may store a fix."""

from __future__ import annotations

import pytest

from agent.gates import nothing_to_fix, red_green_refusal


@pytest.mark.parametrize(
    ("history", "refusal"),
    [
        (["red", "edit", "green"], None),
        (["red", "red", "edit", "red", "edit", "green"], None),
        (["red", "edit", "edit", "green", "green"], None),
        ([], "no edit in this session"),
        (["red", "green"], "no edit in this session"),
        (["green"], "no edit in this session"),
        (["edit", "green"], "no failing run_tests before your first edit"),
        (["edit", "red", "edit", "green"], "no failing run_tests before your first edit"),
        (["green", "edit", "green"], "no failing run_tests before your first edit"),
        (["red", "edit"], "no passing run_tests after your last edit"),
        (["red", "edit", "green", "edit"], "no passing run_tests after your last edit"),
        (["red", "edit", "red"], "no passing run_tests after your last edit"),
        (["red", "edit", "green", "red"], "no passing run_tests after your last edit"),
    ],
)
def test_red_green_refusal(history, refusal):
    answer = red_green_refusal(history)

    if refusal is None:
        assert answer is None
    else:
        assert answer is not None and answer.startswith(refusal)


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        (["green"], True),
        (["green", "edit"], True),
        (["green", "red"], True),
        ([], False),
        (["red"], False),
        (["red", "green"], False),
        (["edit", "green"], False),
    ],
)
def test_nothing_to_fix_is_a_first_run_green_before_any_edit(history, expected):
    assert nothing_to_fix(history) is expected
