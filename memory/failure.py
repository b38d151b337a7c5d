"""Reading a failure, not just its words: test ids, the final exception, frames, the diff.

Real failure text is mostly noise for retrieval: a traceback through a framework has
ten library frames (`site-packages/...`, the standard library, pytest's own) for each of
the project's, and any record that names those files matches them. The sentence
embedder also reads only the first 256 word pieces, so a long traceback pushes its
final exception line, the part that names the bug, out of view.

`read_failure` splits the text into its parts, and `focused_text` puts them back in the
order of what they tell: the exception line, the project's frames, the failing tests, the
assertion lines and any prose, then the library frames' file names last. Both the query
and a stored record's symptom are read this way (see `memory.records` and
`memory.service`), with the failure signature of `memory.signature` in front.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_MAX_LINES = 600
# `File "path", line 12, in func` (CPython), `File path:12, in func` (IPython).
_PY_FRAME = re.compile(r'^\s*(?:\w+\s*\|\s*)?File "?([^",]+?)"?(?:, line |:)(\d+)(?:, in (\S+))?')
# `path/to/file.py:12: in func` or `path/to/file.py:12: ErrorType` (pytest).
_PYTEST_FRAME = re.compile(r"^([\w./\\-]+\.py):(\d+):(?: in (\S+)| (\w+))?\s*$")
_TEST_ID = re.compile(r"([\w./\\-]+\.py::[\w\[\]\-.:,/ ]+?)(?:\s+(?:FAILED|ERROR|PASSED)|\s+-\s|$)")
_EXCEPTION = re.compile(
    r"^(?:E\s+)?(?:[\w.]+\.)?((?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Failure))"
    r"|AssertionError|StopIteration|KeyError|IndexError|DeprecationWarning)\b:?\s*(.*)$"
)
_INTERNAL = re.compile(r"\b(INTERNAL ERROR|Segmentation fault|core dumped)\b.*", re.IGNORECASE)
_LIBRARY_PARTS = re.compile(
    r"(site-packages|dist-packages|[/\\]lib[/\\]python\d|[/\\]Lib[/\\]|<frozen|<string>|"
    r"[/\\]_pytest[/\\]|[/\\]pluggy[/\\]|\.pyenv[/\\]versions|[/\\]Frameworks[/\\]Python)"
)
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})")


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str | None
    library: bool

    @property
    def file_name(self) -> str:
        """The path from its last `site-packages`-like root on, with forward slashes."""
        path = self.path.replace("\\", "/")
        for marker in ("site-packages/", "dist-packages/"):
            if marker in path:
                path = path.rsplit(marker, 1)[1]
        return path


@dataclass(frozen=True)
class Failure:
    """The parts of one failure text; every part may be empty."""

    exception_type: str | None = None
    exception_message: str = ""
    frames: tuple[Frame, ...] = ()
    test_ids: tuple[str, ...] = ()
    assertion_lines: tuple[str, ...] = ()
    prose: tuple[str, ...] = ()
    characters: tuple[str, ...] = field(default=())

    @property
    def project_frames(self) -> tuple[Frame, ...]:
        return tuple(frame for frame in self.frames if not frame.library)

    @property
    def library_frames(self) -> tuple[Frame, ...]:
        return tuple(frame for frame in self.frames if frame.library)

    @property
    def exception_line(self) -> str:
        if not self.exception_type:
            return ""
        return f"{self.exception_type}: {self.exception_message}".rstrip(": ")


def is_library_path(path: str) -> bool:
    """Installed packages, the standard library and the test runner's own files."""
    return bool(_LIBRARY_PARTS.search(path))


def _character_names(text: str) -> list[str]:
    """Names of invisible or escaped characters, e.g. `\\u200d` -> ZERO WIDTH JOINER ZWJ,
    so a symptom that shows the escape meets a fix that names the character."""
    names: dict[str, None] = {}
    found = [chr(int(a or b, 16)) for a, b in _ESCAPE.findall(text)]
    found += [c for c in text if ord(c) > 127 and unicodedata.category(c) in ("Cf", "Zs", "Cc")]
    for character in found:
        name = unicodedata.name(character, "")
        if name and not character.isalnum():
            initials = "".join(word[0] for word in name.split())
            names.setdefault(f"{name} {initials}", None)
    return list(names)


def read_failure(text: str) -> Failure:
    """Split failure text into its parts; text that is no traceback becomes prose."""
    frames: list[Frame] = []
    tests: dict[str, None] = {}
    assertions: list[str] = []
    prose: list[str] = []
    exception: tuple[str, str] | None = None
    skip_code = False
    for raw in text.splitlines()[:_MAX_LINES]:
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        frame = _PY_FRAME.match(line) or _PYTEST_FRAME.match(stripped)
        if frame:
            path = frame.group(1)
            function = frame.group(3)
            frames.append(Frame(path, int(frame.group(2)), function, is_library_path(path)))
            skip_code = frames[-1].library  # the code line under a library frame says little
            continue
        if skip_code and raw.startswith((" ", "\t")) and not _EXCEPTION.match(stripped):
            skip_code = False
            continue
        skip_code = False
        for test in _TEST_ID.findall(stripped):
            tests.setdefault(test.strip(), None)
        found = _EXCEPTION.match(stripped)
        if found:
            exception = (found.group(1), found.group(2).strip())
        elif _INTERNAL.search(stripped) and exception is None:
            exception = ("INTERNAL ERROR", _INTERNAL.search(stripped).group(0))
        if stripped.startswith(("E ", ">")) or stripped.startswith("assert "):
            assertions.append(stripped.lstrip("E>").strip())
        elif not found:
            prose.append(stripped)
    return Failure(
        exception_type=exception[0] if exception else None,
        exception_message=exception[1] if exception else "",
        frames=tuple(frames),
        test_ids=tuple(tests),
        assertion_lines=tuple(assertions),
        prose=tuple(prose),
        characters=tuple(_character_names(text)),
    )


def focused_text(text: str) -> str:
    """The failure rewritten in order of what it tells, library frames reduced to their
    file names at the end; text with no frames and no exception comes back unchanged."""
    failure = read_failure(text)
    if not failure.frames and not failure.exception_type:
        return "\n".join((*failure.characters, text)) if failure.characters else text
    parts = [failure.exception_line, *failure.characters]
    parts += [
        f"{frame.file_name} {frame.function or ''}".strip() for frame in failure.project_frames
    ]
    parts += [*failure.test_ids, *failure.assertion_lines, *failure.prose]
    library = dict.fromkeys(frame.file_name for frame in failure.library_frames)
    parts += list(library)
    return "\n".join(part for part in parts if part)


def keyword_text(text: str) -> str:
    """What the keyword side matches: the focused text without the library frames, whose
    file names would match every record that names the same framework files."""
    failure = read_failure(text)
    if not failure.frames and not failure.exception_type:
        return focused_text(text)
    parts = [failure.exception_line, *failure.characters]
    parts += [
        f"{frame.file_name} {frame.function or ''}".strip() for frame in failure.project_frames
    ]
    parts += [*failure.test_ids, *failure.assertion_lines, *failure.prose]
    return "\n".join(part for part in parts if part)
