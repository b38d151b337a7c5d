"""Failure signatures: what kind of difference a failing assertion shows, in plain words.

Two sessions that hit the same bug in different projects rarely share names or values;
they share the *shape* of the mismatch — a leading space, a case change, a lost newline,
a count off by one. This module reads pytest output (assertion comparisons, the diff
lines, KeyError keys) and names those shapes, so the store can match failures by shape
as well as by words. It only reads Python literals; it never evaluates code.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterator

_SEPARATORS = re.compile(r"[-_.\s]+")
_ASSERT = re.compile(r"^E?\s*(?:AssertionError:\s*)?assert (.+)$")
_INDEX_DIFF = re.compile(r"At index \d+ diff: (.+)$")
_KEY_ERROR = re.compile(r"KeyError: (.+)$")
_DIFF_LINE = re.compile(r"^E\s{3,}([-+]) (.*)$")
_LITERAL = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_MAX_LINES = 400


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL


_NOT_LITERAL = object()


def _words(text: str) -> str:
    return _SEPARATORS.sub("_", text.casefold()).strip("_")


def compare_strings(actual: str, expected: str) -> list[str]:
    """Names for how two unequal strings differ; empty when no simple shape explains it."""
    if actual == expected:
        return []
    shapes = []
    if "\ufeff" in actual + expected:
        shapes.append("byte order mark bom in value encoding")
    if actual.strip() == expected.strip():
        if actual[:1].isspace() or expected[:1].isspace():
            shapes.append("leading whitespace space in value strip")
        tails = "".join(text[len(text.rstrip()) :] for text in (actual, expected))
        if "\n" in tails:
            shapes.append("trailing newline in value strip")
        elif tails:
            shapes.append("trailing whitespace in value strip")
        return shapes or ["whitespace difference in value strip"]
    if " ".join(actual.split()) == " ".join(expected.split()):
        return [*shapes, "repeated internal whitespace split"]
    if actual.casefold() == expected.casefold():
        return [*shapes, "letter case differs lowercase casefold case insensitive"]
    if _words(actual) == _words(expected):
        same_case = _SEPARATORS.sub("", actual) == _SEPARATORS.sub("", expected)
        return [
            *shapes,
            "separator differs hyphen underscore normalize"
            if same_case
            else "case and separator differ lowercase hyphen underscore normalize",
        ]
    if actual.replace("_", "") == expected.replace("_", ""):
        return [*shapes, "extra underscores split words camel case snake case acronym"]
    if actual.replace("\\", "/") == expected.replace("\\", "/"):
        return [*shapes, "backslash path separator windows path"]
    if actual.replace("'", '"') == expected.replace("'", '"'):
        return [*shapes, "quote style single double quotes json"]
    if actual and expected and (actual in expected or expected in actual):
        shorter, longer = sorted((actual, expected), key=len)
        where = (
            "suffix"  # the shorter one lacks the longer one's tail
            if longer.startswith(shorter)
            else "prefix"
            if longer.endswith(shorter)
            else "part"
        )
        shapes.append(f"value missing a {where} truncated")
    return shapes


def compare_numbers(actual: float, expected: float) -> list[str]:
    if actual == expected:
        return []
    if isinstance(actual, int) and isinstance(expected, int) and abs(actual - expected) == 1:
        return ["off by one count boundary"]
    if expected and actual and math.isclose(actual, expected, rel_tol=1e-6):
        return ["floating point precision rounding float equality"]
    if (
        expected
        and actual
        and any(
            math.isclose(actual / expected, ratio, rel_tol=1e-6)
            for ratio in (1000, 0.001, 60, 1 / 60)
        )
    ):
        return ["unit scale factor milliseconds seconds"]
    if abs(actual - expected) < 0.1 and (
        not float(actual).is_integer() or not float(expected).is_integer()
    ):
        return ["rounding decimal cents"]
    if 0 in (actual, expected):
        return ["zero value"]
    return []


def compare_values(actual: object, expected: object, depth: int = 0) -> list[str]:
    """Names for how two literal values differ, looking inside lists and dicts."""
    if depth > 3:
        return []
    if isinstance(actual, bool) or isinstance(expected, bool):
        return ["boolean truthiness"] if actual != expected else []
    if isinstance(actual, str) and isinstance(expected, str):
        return compare_strings(actual, expected)
    if isinstance(actual, int | float) and isinstance(expected, int | float):
        return compare_numbers(actual, expected)
    if actual is None or expected is None:
        return ["none value returned"] if actual is not expected else []
    if isinstance(actual, str) != isinstance(expected, str) and str(actual) == str(expected):
        return ["string versus number type conversion"]
    if isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        return _compare_sequences(list(actual), list(expected), depth)
    if isinstance(actual, dict) and isinstance(expected, dict):
        return _compare_dicts(actual, expected, depth)
    return []


def _compare_sequences(actual: list[object], expected: list[object], depth: int) -> list[str]:
    shapes = []
    if len(actual) != len(expected):
        if abs(len(actual) - len(expected)) == 1:
            shapes.append("off by one element count boundary")
        if not actual or not expected:
            shapes.append("empty result")
    elif actual != expected and sorted(map(repr, actual)) == sorted(map(repr, expected)):
        shapes.append("order differs sorting")
    for left, right in zip(actual, expected, strict=False):
        if left != right:
            shapes += compare_values(left, right, depth + 1)
            break
    return shapes


def _compare_dicts(
    actual: dict[object, object], expected: dict[object, object], depth: int
) -> list[str]:
    shapes = []
    extra = [key for key in actual if key not in expected]
    missing = [key for key in expected if key not in actual]
    for left, right in zip(extra, missing, strict=False):
        if isinstance(left, str) and isinstance(right, str):
            shapes += compare_strings(left, right)
    if extra and not missing:
        shapes.append("unexpected extra items state leaked")
    for key in actual.keys() & expected.keys():
        if actual[key] != expected[key]:
            shapes += compare_values(actual[key], expected[key], depth + 1)
    return shapes


def _comparisons(line: str) -> Iterator[tuple[object, object]]:
    """(actual, expected) pairs from `assert a == b` and `At index i diff: a != b` lines."""
    for pattern in (_ASSERT, _INDEX_DIFF):
        match = pattern.search(line.strip())
        if not match:
            continue
        try:
            tree = ast.parse(match.group(1).strip(), mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        if isinstance(tree, ast.Compare) and len(tree.comparators) == 1:
            operator = tree.ops[0]
            left, right = _literal(tree.left), _literal(tree.comparators[0])
            if left is _NOT_LITERAL or right is _NOT_LITERAL:
                continue
            if isinstance(operator, ast.Eq | ast.NotEq | ast.Is):
                yield left, right
            elif isinstance(operator, ast.In | ast.NotIn) and isinstance(
                right, list | tuple | set | dict
            ):
                for item in right:
                    yield left, item


def _diff_pairs(lines: list[str]) -> Iterator[tuple[str, str]]:
    """pytest's `- expected` / `+ actual` lines, paired in order."""
    expected: list[str] = []
    actual: list[str] = []
    for line in lines:
        match = _DIFF_LINE.match(line)
        if match:
            (expected if match.group(1) == "-" else actual).append(match.group(2))
    yield from zip(actual, expected, strict=False)


def _key_error_shapes(lines: list[str], text: str) -> Iterator[str]:
    literals = None
    for line in lines:
        match = _KEY_ERROR.search(line)
        if not match:
            continue
        try:
            key = ast.literal_eval(match.group(1).strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if not isinstance(key, str):
            continue
        if key != key.strip():
            yield "leading whitespace space in key strip"
        if literals is None:
            literals = set()
            for raw in _LITERAL.findall(text):
                try:
                    literals.add(ast.literal_eval(raw))
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    continue
        for other in literals:
            if isinstance(other, str) and other != key:
                yield from compare_strings(key, other)


def failure_signature(text: str) -> tuple[str, ...]:
    """Distinct shape names for the mismatches in failure output, in order of appearance."""
    lines = text.splitlines()[:_MAX_LINES]
    shapes: dict[str, None] = {}
    for line in lines:
        for actual, expected in _comparisons(line):
            shapes.update(dict.fromkeys(compare_values(actual, expected)))
    for actual, expected in _diff_pairs(lines):
        shapes.update(dict.fromkeys(compare_strings(actual, expected)))
    shapes.update(dict.fromkeys(_key_error_shapes(lines, text)))
    return tuple(shapes)


def with_signature(text: str) -> str:
    """Failure text led by its signature: what is embedded and keyword-matched."""
    signature = failure_signature(text)
    return "\n".join((*signature, text)) if signature else text
