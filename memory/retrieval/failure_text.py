"""Reading failure text before ranking it: what kind of text it is, and its parts.

A query is one of three kinds, and the kind decides how much its words count against its
meaning (`memory.retrieval.ranking.weights`):

- a **test report** — pytest's output (indented `E   ` and `>   ` lines, `path.py:12: in f`
  frames, `FAILED path::test` lines). It comes from the project's own suite, whose
  fixtures, helpers and module names every record of that project shares, so words tell
  records apart less. mypy's `path.py:5: error: …` is no test report: read as one, it cost
  the real-world dev corpus a query (recall@1 0.877 -> 0.864);
- a **traceback** — Python's `File "…", line N, in f` frames and the exception;
- a **message** — anything else: an error line, a sentence, a log excerpt.

The parts (failing tests, the final exception, the assertion lines, the project's frames and
the library ones) are what `memory search --explain` shows the query was read as.

Before any of that, `focus` drops what a whole pytest run says around its failures (the
session header, the progress dots, the banners): a model that pastes the whole run would
otherwise fill the embedder's 256-token window with it, and a record's symptom the same.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from memory.text import without_terminal_codes

Kind = Literal["test report", "traceback", "message"]

# pytest indents its `E` and `>` lines, names a test in FAILED/ERROR lines and starts a
# frame (or a --tb=line failure) with `path.py:12: `; a quoted "> TypeError: …" pasted from
# an issue, a log's "ERROR django.request …" or mypy's "app.py:5: error: …" is no report
_TEST_REPORT = re.compile(
    r"^(?:E\s{2,}|>\s{2,}|(?:FAILED|ERROR) \S+::|\S+\.py:\d+: (?!(?:error|note|warning): ))",
    re.M,
)
_PYTHON_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+(?:, in (\S+))?')
_PYTEST_FRAME = re.compile(r"^(\S+\.py):\d+: (?:in (\S+)|\w+)$")
# an installed package's file, the standard library's, or frozen bootstrap code
_LIBRARY_PATH = re.compile(
    r"site-packages|dist-packages|[/\\]lib(?:64)?[/\\]python[\d.]*[/\\]|^<frozen |^/usr/lib/"
)
_EXCEPTION = re.compile(
    r"^(?:E\s+)?((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Warning|Interrupt)\b.*)$"
)
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+::\S+)")
_ASSERTION = re.compile(r"^(?:>|E)\s{2,}(.*\S)")
_MAX_LINES = 400
# what pytest prints around the failures: banners (`=== FAILURES ===`, `=== 1 failed, 88
# passed in 1.07s ===`), the session header, progress lines (`tests/test_a.py ..F. [ 40%]`),
# verbose lines of tests that did not fail, and the warnings summary's link
_SESSION_NOISE = re.compile(
    r"^(?:={3,}.*={3,}|={5,}"
    r"|platform \w+ -- Python .*|(?:rootdir|configfile|cachedir|testpaths|plugins): .*"
    r"|collect(?:ed|ing) .*\d+ items?.*|collecting \.\.\..*"
    r"|\S+\.py [.sxXEF]+\s*(?:\[\s*\d+%\])?"
    r"|\S+::\S+ (?:PASSED|SKIPPED|XFAIL|XPASS)\b.*"
    r"|-- Docs: https://docs\.pytest\.org/\S*)\s*$"
)


class FailureReading(NamedTuple):
    kind: Kind
    tests: tuple[str, ...]  # failing test ids (`FAILED path::name` lines)
    exception: str  # the last exception line ("" if none)
    assertion: tuple[str, ...]  # the failing `>` line and the `E` lines
    project_frames: tuple[str, ...]  # "path function" of each frame outside libraries
    library_frames: tuple[str, ...]  # "path function" of installed and standard-library frames


def focus(text: str) -> str:
    """`text` without terminal codes and pytest's session noise around the failures; other
    text unchanged."""
    text = without_terminal_codes(text)
    lines = text.splitlines()
    kept = [line for line in lines if not _SESSION_NOISE.match(line.strip())]
    return text if len(kept) == len(lines) else "\n".join(kept).strip("\n")


def read_failure(text: str) -> FailureReading:
    """The kind of `text` and its parts, read line by line (the first 400 lines)."""
    lines = text.splitlines()[:_MAX_LINES]
    tests: list[str] = []
    exceptions: list[str] = []
    assertion: list[str] = []
    frames: dict[bool, list[str]] = {True: [], False: []}  # by "is a library's"
    for raw in lines:
        line = raw.strip()
        frame = _PYTHON_FRAME.match(raw) or _PYTEST_FRAME.match(line)
        if frame:
            path, function = frame.group(1), frame.group(2) or ""
            frames[bool(_LIBRARY_PATH.search(path))].append(f"{path} {function}".strip())
        elif failed := _FAILED_TEST.match(line):
            tests.append(failed.group(1))
        elif exception := _EXCEPTION.match(line):
            exceptions.append(exception.group(1))
        elif asserted := _ASSERTION.match(raw):
            assertion.append(asserted.group(1))
    kind: Kind = "message"
    if _TEST_REPORT.search("\n".join(lines)):
        kind = "test report"
    elif any(_PYTHON_FRAME.match(raw) for raw in lines):
        kind = "traceback"
    return FailureReading(
        kind=kind,
        tests=tuple(dict.fromkeys(tests)),
        exception=exceptions[-1] if exceptions else "",
        assertion=tuple(assertion),
        project_frames=tuple(frames[False]),
        library_frames=tuple(frames[True]),
    )
