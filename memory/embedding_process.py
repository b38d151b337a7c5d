"""The embedding model in a child process, so the dashboard's process never imports torch.

Importing torch and sentence-transformers holds the GIL for hundreds of milliseconds at a
time, which stalls an event loop even when the import runs in a thread. `ProcessEmbedder`
runs `SentenceTransformerEmbedder` in `python -m memory.embedding_process [MODEL_PATH]` and
talks to it over its stdin and stdout in frames of a 5-byte header (status byte, then the
payload's length as a little-endian uint32) and a payload. A request is a JSON list of texts
(status OK); the answer is their vectors as little-endian float32 rows (OK) or a one-line
reason (ERROR). The child exits when its stdin closes, so it never outlives its parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import BinaryIO

import numpy as np

from memory.embedder import EmbedderUnavailableError, SentenceTransformerEmbedder
from memory.records import EMBEDDING_DIMENSION, EMBEDDING_MODEL
from memory.safety import scrub_environment

OK = 0
ERROR = 1
HEADER = struct.Struct("<BI")
EXIT_WAIT_S = 5.0


def write_frame(stream: BinaryIO, status: int, payload: bytes) -> None:
    stream.write(HEADER.pack(status, len(payload)) + payload)
    stream.flush()


def read_frame(stream: BinaryIO) -> tuple[int, bytes] | None:
    """The next (status, payload), or None when the stream ends first."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    status, length = HEADER.unpack(header)
    payload = stream.read(length)
    return (status, payload) if len(payload) == length else None


class ProcessEmbedder:
    """all-MiniLM-L6-v2 in a child process: same vectors as `SentenceTransformerEmbedder`,
    cheap to construct; the child starts on `load()` or the first embedding."""

    model_name = EMBEDDING_MODEL
    dimension = EMBEDDING_DIMENSION

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._configured_path = model_path
        self._env = os.environ if env is None else env
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def load(self) -> None:
        """Start the child and wait until it has loaded the model and answered a probe;
        later calls return at once. Safe from any thread."""
        with self._lock:
            self._start()

    def close(self) -> None:
        """End the child (it exits when its stdin closes). Safe to call twice."""
        with self._lock:
            if self._process is not None:
                self._stop(self._process)
                self._process = None

    def embed_many_sync(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self._start()
            process = self._process
            assert process is not None
            try:
                return self._exchange(process, texts)
            except EmbedderUnavailableError:
                if process.poll() is not None:  # forget a dead child; load() starts anew
                    self._stop(process)
                    self._process = None
                raise

    async def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_many_sync, texts)

    async def embed(self, text: str) -> np.ndarray:
        return (await self.embed_many([text]))[0]

    def _start(self) -> None:
        if self._process is not None:
            return
        command = [sys.executable, "-m", "memory.embedding_process"]
        if self._configured_path:
            command.append(os.fspath(self._configured_path))
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=scrub_environment(self._env),
            start_new_session=True,  # the terminal's Ctrl+C is for the parent
        )
        try:
            self._exchange(process, ["dimension probe"])
        except BaseException:
            self._stop(process)
            raise
        self._process = process

    def _exchange(self, process: subprocess.Popen[bytes], texts: Sequence[str]) -> np.ndarray:
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(OSError):  # a dead child: read what it said last, or EOF
            write_frame(process.stdin, OK, json.dumps(list(texts)).encode())
        answer = read_frame(process.stdout)
        if answer is None:
            raise EmbedderUnavailableError(
                f"the embedding process exited with code {self._wait(process)}"
            )
        status, payload = answer
        if status == ERROR:
            raise EmbedderUnavailableError(payload.decode(errors="replace"))
        vectors = np.frombuffer(payload, dtype="<f4").astype(np.float32)
        return vectors.reshape(len(texts), self.dimension)

    def _stop(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(OSError):  # a dead child's pipe may refuse the last flush
            process.stdin.close()
        self._wait(process)
        process.stdout.close()

    def _wait(self, process: subprocess.Popen[bytes]) -> int:
        try:
            return process.wait(EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()


def serve(requests: BinaryIO, answers: BinaryIO, model_path: str | None) -> int:
    """The child's loop: load the model, then answer each request until stdin closes."""
    embedder = SentenceTransformerEmbedder(model_path)
    try:
        embedder.load()
    except Exception as exc:  # the parent shows this reason to the operator
        write_frame(answers, ERROR, str(exc).encode())
        return 1
    while (request := read_frame(requests)) is not None:
        try:
            vectors = embedder.embed_many_sync(json.loads(request[1]))
        except Exception as exc:
            write_frame(answers, ERROR, f"embedding failed: {exc}".encode())
        else:
            write_frame(answers, OK, vectors.astype("<f4").tobytes())
    return 0


def main() -> int:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt frames
    return serve(sys.stdin.buffer, answers, sys.argv[1] if len(sys.argv) > 1 else None)


if __name__ == "__main__":
    sys.exit(main())
