"""Edit approval as policy, table-tested."""

from __future__ import annotations

import pytest

from agent.approval import operator_rejection, resolve_edit_policy


@pytest.mark.parametrize(
    ("flag", "operator_present", "policy"),
    [
        (None, True, "ask"),
        (None, False, "auto"),
        ("ask", True, "ask"),
        ("auto", True, "auto"),
        ("auto", False, "auto"),
    ],
)
def test_resolve_edit_policy(flag, operator_present, policy):
    assert resolve_edit_policy(flag, operator_present=operator_present) == policy


@pytest.mark.parametrize(
    ("flag", "operator_present", "message"),
    [
        ("ask", False, "--edits ask needs the dashboard or a terminal"),
        ("yes", True, "--edits must be ask or auto, not 'yes'"),
        ("", False, "--edits must be ask or auto, not ''"),
    ],
)
def test_a_bad_edits_flag_is_one_clear_line(flag, operator_present, message):
    with pytest.raises(ValueError, match=message):
        resolve_edit_policy(flag, operator_present=operator_present)


@pytest.mark.parametrize(
    ("reason", "output"),
    [
        ("touches the public API", "operator rejected: touches the public API"),
        ("  two\nlines  ", "operator rejected: two lines"),
        ("", "operator rejected: no reason given"),
    ],
)
def test_operator_rejection_is_one_line(reason, output):
    assert operator_rejection(reason) == output
