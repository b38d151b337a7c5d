"""The coding agent's hands: list, read and edit files, and run the tests, inside one directory.

Everything the model asks for arrives as untrusted text, so every path is confined to the
workspace (no absolute paths, `~`, `..` escapes or symlinks out), edits must name text that
occurs exactly once and land atomically, and the tests run in their own process group with a
timeout and an environment stripped of keys and secrets. A refused call raises `ToolError`,
whose message the loop hands back to the model.

Over 400 lines: the file tools and the test run share the confinement and the edit record,
and read best in one place.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import difflib
import json
import os
import re
import signal
import stat
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from agent.project_tests import OURS, TestCommand, read_counts
from agent.sandbox import Sandbox
from memory.safety import scrub_environment
from memory.text import counts_text

MAX_READ_BYTES = 256 * 1024
# Test output kept in memory: its tail. The whole of it goes to the run's log file, when the
# session has a folder for one; 400 MB of output once took 1.77 GB of memory.
MAX_KEPT_CHARS = 1024 * 1024
MAX_LINE_BYTES = 64 * 1024  # a longer "line" (no newline for megabytes) is cut into pieces
MAX_LISTED = 500
BINARY_SNIFF_BYTES = 8 * 1024
SKIPPED_NAMES = frozenset({".git", "__pycache__", ".venv", ".pytest_cache", "node_modules"})
SECRET_FILES = re.compile(
    r"(^|/)(\.env(\..*)?|\.netrc|\.pypirc|id_(rsa|dsa|ecdsa|ed25519)|[^/]*\.(pem|key|p12))$"
)


class ToolError(Exception):
    """A refused or failed tool call; the agent loop answers the model with 'ERROR: <message>'."""


def unified_diff(relative: str, before: str, after: str) -> str:
    """A git-style unified diff of one file, marking a missing final newline."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{relative}",
        tofile=f"b/{relative}",
    )
    return "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines
    )


@dataclass(frozen=True)
class TestRun:
    """One run of the project's tests, and the proof a passing run gives the memory gate.

    The exit code decides pass or fail; the counts are None where the output did not say.
    """

    __test__ = False  # not a pytest test class

    command: str
    exit_code: int
    passed: int | None
    failed: int | None
    timed_out: bool
    duration_s: float
    output: str  # the tail: at most MAX_KEPT_CHARS, whole lines
    confirmed_outcome: str | None
    log_file: str | None = None  # the whole output, when the session keeps one
    dropped_lines: int = 0  # lines of the output not kept in `output`
    reused: bool = False  # an offered run, taken again because no file changed since

    def tail(self, limit: int = 4000) -> str:
        """The last `limit` characters of the output, starting at a line start when possible."""
        if len(self.output) <= limit:
            return self.output
        tail = self.output[-limit:]
        newline = tail.find("\n")
        return tail[newline + 1 :] if 0 <= newline < len(tail) - 1 else tail

    @property
    def summary(self) -> str:
        if self.timed_out:
            return f"timed out after {round(self.duration_s, 1):g}s"
        if self.passed is None and self.failed is None:
            return f"exit code {self.exit_code}, counts unknown"
        return counts_text(self.passed, self.failed)

    def for_model(self) -> str:
        """The run_tests tool's answer to the model, as JSON text."""
        answer: dict[str, object] = {
            "exit_code": self.exit_code,
            "passed": self.passed,
            "failed": self.failed,
            "summary": self.summary,
            "output_tail": self.tail(),
        }
        if self.confirmed_outcome is not None:
            answer["confirmed_outcome"] = self.confirmed_outcome
        return json.dumps(answer)


class WorkspaceTools:
    """The workspace tools for one directory, remembering each edited file's original text."""

    def __init__(
        self,
        root: Path,
        *,
        base_env: Mapping[str, str],
        test_command: TestCommand = OURS,
        test_timeout_s: float = 120.0,
        sandbox: Sandbox | None = None,
        log_dir: Path | None = None,
    ) -> None:
        """`sandbox`: how the test command is confined (None: it is not, --no-sandbox);
        `log_dir`: where each test run's whole output is written."""
        if not Path(root).is_dir():
            raise ValueError(f"the workspace {root} is not an existing directory")
        self.root = Path(root).resolve()
        self.test_command = test_command
        self.test_timeout_s = test_timeout_s
        self.sandbox = sandbox
        self.log_dir = log_dir
        self._runs = 0
        self._env = scrub_environment(base_env) | {"PYTHONDONTWRITEBYTECODE": "1"}
        if sandbox is not None:
            self._env["TMPDIR"] = "/tmp"  # the sandbox's own; any other is read-only there
        if (self.root / "src").is_dir():
            # A src-layout project installed -e in its own venv imports the checkout the
            # install points at; put this folder's sources first, so the session's edits run.
            paths = [str(self.root / "src"), self._env.get("PYTHONPATH", "")]
            self._env["PYTHONPATH"] = os.pathsep.join(path for path in paths if path)
        self._originals: dict[str, str] = {}
        self.approved: dict[str, str] = {}  # relative path -> its text after the last edit
        self._offered: tuple[frozenset[tuple[str, int, int, int, int]], TestRun] | None = None

    @property
    def edited_files(self) -> list[str]:
        """Relative paths edited so far, in first-edit order."""
        return list(self._originals)

    def list_files(self, path: str | None = None) -> str:
        """Sorted relative paths of the files under path, without VCS, cache and venv clutter."""
        top = self._resolve(path or ".")
        if not top.is_dir():
            raise ToolError(f"{path} is not a directory; list_files needs a directory")
        found = []
        for folder, dirnames, filenames in os.walk(top):
            dirnames[:] = [name for name in dirnames if name not in SKIPPED_NAMES]
            found.extend(
                (Path(folder) / name).relative_to(self.root).as_posix()
                for name in filenames
                if name not in SKIPPED_NAMES and not name.endswith(".pyc")
            )
        if not found:
            return f"no files under {path or '.'}"
        found.sort()
        listed = found[:MAX_LISTED]
        if len(found) > MAX_LISTED:
            listed.append(f"... and {len(found) - MAX_LISTED} more files")
        return "\n".join(listed)

    def read_file(self, path: str) -> str:
        """A text file's content; past 256 KB, its first lines and a note saying it was cut."""
        data = self._read_bytes(path)
        text = _decode_text(data, path)
        if len(data) <= MAX_READ_BYTES:
            return text
        head = data[:MAX_READ_BYTES]
        if b"\n" in head:
            head = head[: head.rfind(b"\n") + 1]
        shown = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
        if not shown.endswith("\n"):
            shown += "\n"
        return f"{shown}[truncated: showed {len(head)} of {len(data)} bytes of {path}]"

    def preview_edit(self, path: str, old_text: str, new_text: str) -> str:
        """The diff apply_edit would make, without writing: what the operator approves."""
        target, before, after = self._edited(path, old_text, new_text)
        return unified_diff(target.relative_to(self.root).as_posix(), before, after)

    def apply_edit(self, path: str, old_text: str, new_text: str) -> str:
        """Replace the one occurrence of old_text with new_text, atomically; returns the diff."""
        target, before, after = self._edited(path, old_text, new_text)
        try:
            _write_atomically(target, after)
        except OSError as error:
            raise ToolError(f"cannot write {path}: {error.strerror or error}") from error
        relative = target.relative_to(self.root).as_posix()
        self._originals.setdefault(relative, before)
        self.approved[relative] = after
        return f"Edited {relative}.\n{unified_diff(relative, before, after)}"

    def _edited(self, path: str, old_text: str, new_text: str) -> tuple[Path, str, str]:
        """The file, its text, and its text once edited; a ToolError where the edit is bad."""
        if not old_text:
            raise ToolError("old_text must not be empty; give the exact text to replace")
        target = self._resolve(path)
        before = _decode_text(self._read_bytes(path), path)
        occurrences = before.count(old_text)
        if occurrences == 0:
            raise ToolError(f"old_text not found in {path}")
        if occurrences > 1:
            raise ToolError(
                f"old_text occurs {occurrences} times in {path}; "
                "include more context so it is unique"
            )
        return target, before, before.replace(old_text, new_text, 1)

    def diff(self) -> str:
        """The unified diff of every edited file, from before its first edit to now."""
        return "".join(
            unified_diff(relative, before, self._current_text(relative))
            for relative, before in self._originals.items()
        )

    async def run_tests(
        self, on_output: Callable[[str], None] | None = None, *, offer: bool = False
    ) -> TestRun:
        """Run the test command in its own process group (and sandbox), streaming lines,
        within the timeout. Only the output's tail stays in memory; the log file has it all.

        `offer`: the next call takes this run (`reused`, its lines streamed again) instead
        of running the same command again, if no file under the root changed in between; a
        call that took a run and offers passes it on. The preflight offers its run, so a
        session's first red run is not made twice."""
        offered, self._offered = self._offered, None
        if offered is not None and offered[0] == await asyncio.to_thread(self._tree_state):
            taken = offered[1]
            if on_output is not None:
                if taken.dropped_lines:
                    where = f" (the whole run: {taken.log_file})" if taken.log_file else ""
                    on_output(f"… {taken.dropped_lines} earlier lines not kept{where}")
                for line in taken.output.splitlines():
                    on_output(line)
            if offer:
                self._offered = offered  # passed on: the tree is still the one it ran on
            return replace(taken, reused=True)
        run = await self._run(on_output)
        if offer:
            self._offered = (await asyncio.to_thread(self._tree_state), run)
        return run

    async def green_on_offer(self) -> TestRun | None:
        """The run on offer (the preflight's) if it passed, on the tree as it still is: the
        session's first run_tests would find nothing to fix."""
        offered = self._offered
        if offered is None or offered[1].confirmed_outcome is None:
            return None
        return offered[1] if offered[0] == await asyncio.to_thread(self._tree_state) else None

    def _tree_state(self) -> frozenset[tuple[str, int, int, int, int]]:
        """Every file under the root but git's own, by path, size, inode and change times:
        an edit replaces its file (a new inode) and a write in place moves ctime, so a clock
        too coarse to move mtime between two edits still tells them apart."""
        state = []
        for folder, subfolders, names in os.walk(self.root):
            subfolders[:] = [name for name in subfolders if name != ".git"]
            for name in names:
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    info = os.lstat(path)
                    state.append(
                        (path, info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
                    )
        return frozenset(state)

    async def _run(self, on_output: Callable[[str], None] | None) -> TestRun:
        started = time.monotonic()
        argv = self.test_command.argv
        if self.sandbox is not None:
            argv = self.sandbox.wrap(argv, self.root)
        self._runs += 1
        log_path = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self.log_dir / f"test-run-{self._runs}.log"
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self.root,
                env=self._env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as error:
            raise ToolError(
                f"cannot start the test command {self.test_command.display}: "
                f"{error.strerror or error}"
            ) from error
        tail = _Tail()
        timed_out = False
        try:
            with open(log_path, "wb") if log_path else contextlib.nullcontext() as log:
                collecting = _collect(process, tail, on_output, log)
                await asyncio.wait_for(collecting, self.test_timeout_s)
        except TimeoutError:
            timed_out = True
        finally:
            # The group also holds anything the tests started; leave nothing running.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            exit_code = await process.wait()
        output = tail.text()
        passed, failed = read_counts(output)
        passing = exit_code == 0 and not timed_out
        counted = f" ({passed} passed)" if passed is not None else ""
        return TestRun(
            command=self.test_command.display,
            exit_code=exit_code,
            passed=passed,
            failed=failed,
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
            output=output,
            confirmed_outcome=(
                f"{self.test_command.display} passed with exit code 0{counted}" if passing else None
            ),
            log_file=str(log_path) if log_path else None,
            dropped_lines=tail.dropped,
        )

    def _resolve(self, path: str) -> Path:
        """The real path inside the workspace that path names, or a ToolError saying why not."""
        if "\0" in path or path.startswith("~") or Path(path).is_absolute():
            raise ToolError(f"{path} is not allowed; paths must be relative to the workspace")
        normal = os.path.normpath(path)
        if normal == ".." or normal.startswith("../"):
            raise ToolError(f"{path} leaves the workspace; paths must be relative to the workspace")
        try:
            target = (self.root / path).resolve()
        except (OSError, RuntimeError) as error:
            raise ToolError(f"cannot resolve {path}: {error}") from error
        if not target.is_relative_to(self.root):
            raise ToolError(f"{path} is a symlink that resolves outside the workspace")
        return target

    def _read_bytes(self, path: str) -> bytes:
        target = self._resolve(path)
        if not target.exists():
            raise ToolError(f"no such file: {path}")
        if target.is_dir():
            raise ToolError(f"{path} is a directory, not a file")
        if not target.is_file():
            raise ToolError(f"{path} is not a regular file")
        if SECRET_FILES.search(target.relative_to(self.root).as_posix()):
            raise ToolError(f"{path} looks like a secrets file; it is not read or edited")
        try:
            return target.read_bytes()
        except OSError as error:
            raise ToolError(f"cannot read {path}: {error.strerror or error}") from error

    def _current_text(self, relative: str) -> str:
        try:
            return (self.root / relative).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""


def _decode_text(data: bytes, path: str) -> str:
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"{path} is a binary file; only text files can be read or edited")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ToolError(
            f"{path} is not UTF-8 text; only text files can be read or edited"
        ) from error


def _write_atomically(target: Path, text: str) -> None:
    """Write to a temporary file beside target, then swap it in, keeping target's mode."""
    mode = stat.S_IMODE(target.stat().st_mode)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(text.encode("utf-8"))
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


class _Tail:
    """The last MAX_KEPT_CHARS of the output, in whole lines."""

    def __init__(self) -> None:
        self.lines: deque[str] = deque()
        self.chars = 0
        self.dropped = 0

    def add(self, line: str) -> None:
        self.lines.append(line)
        self.chars += len(line) + 1
        while self.chars > MAX_KEPT_CHARS and len(self.lines) > 1:
            self.chars -= len(self.lines.popleft()) + 1
            self.dropped += 1

    def text(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)


async def _collect(
    process: asyncio.subprocess.Process,
    tail: _Tail,
    on_output: Callable[[str], None] | None,
    log: BinaryIO | None,
) -> None:
    """Read merged output to its end, line by line as it arrives (the log file gets the
    bytes as they are), then wait for the exit."""
    assert process.stdout is not None
    pending = b""
    while chunk := await process.stdout.read(64 * 1024):
        if log is not None:
            log.write(chunk)
        *complete, pending = (pending + chunk).split(b"\n")
        while len(pending) > MAX_LINE_BYTES:
            complete.append(pending[:MAX_LINE_BYTES])
            pending = pending[MAX_LINE_BYTES:]
        for raw in complete:
            _emit(raw, tail, on_output)
    if pending:
        _emit(pending, tail, on_output)
    await process.wait()


def _emit(raw: bytes, tail: _Tail, on_output: Callable[[str], None] | None) -> None:
    line = raw.decode("utf-8", errors="replace").removesuffix("\r")
    tail.add(line)
    if on_output is not None:
        on_output(line)
