"""Failure signatures: the shape of a mismatch, read from real pytest output."""

from __future__ import annotations

import pytest

from memory.retrieval.signature import compare_values, failure_signature, with_signature


@pytest.mark.parametrize(
    ("output", "shape"),
    [
        ("E       AssertionError: assert ['a', ' b'] == ['a', 'b']", "leading whitespace"),
        ("E       AssertionError: assert 'secret\\n' == 'secret'", "trailing newline"),
        ("E       AssertionError: assert 'Audit-Log' == 'audit_log'", "case and separator"),
        ("E       AssertionError: assert 'ABC' == 'abc'", "letter case"),
        ("E       assert 'h_t_t_p_code' == 'http_code'", "extra underscores"),
        ("E       assert 3 == 4", "off by one"),
        ("E       assert 0.30000000000000004 == 0.3", "floating point"),
        ("E       assert 1500000 == 1500", "unit scale"),
        ("E   KeyError: ' groceries'", "leading whitespace space in key"),
        ("E   KeyError: 'email'\n    row = {'\\ufeffemail': 'a@b.c'}", "byte order mark"),
        ("E         At index 1 diff: ' https://b' != 'https://b'", "leading whitespace"),
        ("E         - audit_log\nE         + Audit-Log", "case and separator"),
        (
            "E       assert 'https://api.example.com' == 'https://api.example.com/v2'",
            "missing a suffix",
        ),
        ("E       assert 'example.com' == 'https://example.com'", "missing a prefix"),
    ],
)
def test_shapes_are_named(output, shape):
    assert any(shape in name for name in failure_signature(output)), failure_signature(output)


@pytest.mark.parametrize(
    "output",
    [
        "E   TypeError: unsupported operand type(s) for +: 'int' and 'str'",
        "E       assert func() == expected_value",
        "E       assert __import__('os').system('echo hi') == 0",
        "not pytest output at all",
        "",
    ],
)
def test_nothing_is_invented_or_evaluated(output):
    assert failure_signature(output) == ()


def test_nested_values_are_compared_inside():
    assert compare_values({"a": [1, "x "]}, {"a": [1, "x"]}) == [
        "trailing whitespace in value strip"
    ]


def test_with_signature_leads_with_the_shapes():
    text = "E       AssertionError: assert 'A' == 'a'"
    assert with_signature(text).splitlines()[-1] == text
    assert "letter case" in with_signature(text).splitlines()[0]
