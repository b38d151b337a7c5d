"""The embedding model in a child process, so the dashboard's process never imports torch.

Importing torch and sentence-transformers holds the GIL for hundreds of milliseconds at a
time, which stalls an event loop even when the import runs in a thread; so does the ONNX
embedder's one-time export, which needs torch. `ProcessEmbedder` runs the chosen embedder
(`onnx` or `torch`) in `python -P -m memory.embedding.process KIND DATA_DIR [MODEL_PATH]`
and talks to it over its stdin and stdout in frames of a 5-byte header (status byte, then
the payload's length as a little-endian uint32) and a payload. A request is a JSON list of
texts (status OK); the answer is their vectors as little-endian float32 rows (OK) or a
one-line reason (ERROR). The parent checks every answer's shape and waits for it only so
long, so a child that writes garbage or hangs is stopped, never waited on forever. The
child exits when its stdin closes; `close` kills it at once, even mid-load. What the child
says for the operator (the export's steps, the fallback's warning: stderr lines starting
`astra-memory: `) reaches the parent's `progress`; the rest of its stderr is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import BinaryIO

import numpy as np

from memory.embedding.embedder import Embedder, EmbedderUnavailableError, shared_embedder
from memory.records import EMBEDDING_DIMENSION, EMBEDDING_MODEL
from memory.safety import scrub_environment

OK = 0
ERROR = 1
HEADER = struct.Struct("<BI")
EXIT_WAIT_S = 5.0
LOAD_TIMEOUT_S = 300.0  # the model loads in ~5 s; a busy machine can take many times that
EMBED_TIMEOUT_S = 60.0  # plus EMBED_TIMEOUT_PER_TEXT_S for each text of a batch
EMBED_TIMEOUT_PER_TEXT_S = 0.05
MAX_ERROR_BYTES = 64 * 1024
SAYS = b"astra-memory: "  # the prefix of the child's lines meant for the operator


def write_frame(stream: BinaryIO, status: int, payload: bytes) -> None:
    stream.write(HEADER.pack(status, len(payload)) + payload)
    stream.flush()


def read_frame(stream: BinaryIO) -> tuple[int, bytes] | None:
    """The next (status, payload), or None when the stream ends first (the child's side)."""
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
        *,
        kind: str = "torch",
        data_dir: str | os.PathLike[str] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self._configured_path = model_path
        self._kind = kind
        self._data_dir = data_dir
        self._progress = progress  # called from a reader thread with each line the child says
        self._env = os.environ if env is None else env
        self._process: subprocess.Popen[bytes] | None = None  # loaded and answering
        self._starting: subprocess.Popen[bytes] | None = None  # loading the model
        self._closed = False
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int | None:
        process = self._process or self._starting
        return process.pid if process else None

    def load(self) -> None:
        """Start the child and wait until it has loaded the model and answered a probe;
        later calls return at once. Safe from any thread."""
        with self._lock:
            self._start()

    def close(self) -> None:
        """Kill the child now, even while another thread waits on it (that thread gets
        EmbedderUnavailableError); later calls fail. Safe to call twice."""
        self._closed = True
        for process in (self._starting, self._process):
            if process is not None:
                with contextlib.suppress(OSError):
                    process.kill()
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
                return self._exchange(process, texts, self._embed_timeout(len(texts)))
            except EmbedderUnavailableError:
                if process.poll() is not None:  # forget a dead child; load() starts anew
                    self._stop(process)
                    self._process = None
                raise

    async def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_many_sync, texts)

    async def embed(self, text: str) -> np.ndarray:
        return (await self.embed_many([text]))[0]

    @staticmethod
    def _embed_timeout(count: int) -> float:
        return EMBED_TIMEOUT_S + EMBED_TIMEOUT_PER_TEXT_S * count

    def _start(self) -> None:
        if self._closed:
            raise EmbedderUnavailableError("the embedding process was closed")
        if self._process is not None:
            return
        # -P: the operator's current folder must not shadow our modules in the child
        command = [sys.executable, "-P", "-m", "memory.embedding.process", self._kind]
        command.append(os.fspath(self._data_dir or ""))
        if self._configured_path:
            command.append(os.fspath(self._configured_path))
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if self._progress is None else subprocess.PIPE,
            env=scrub_environment(self._env),
            bufsize=0,  # unbuffered, so select() on its stdout sees every byte
            start_new_session=True,  # the terminal's Ctrl+C is for the parent
        )
        if process.stderr is not None and self._progress is not None:
            threading.Thread(
                target=relay_says, args=(process.stderr, self._progress), daemon=True
            ).start()
        self._starting = process
        try:
            self._exchange(process, ["dimension probe"], LOAD_TIMEOUT_S)
        except BaseException:
            self._stop(process)
            raise
        finally:
            self._starting = None
        if self._closed:  # closed while loading: the kill may have come after the answer
            self._stop(process)
            raise EmbedderUnavailableError("the embedding process was closed")
        self._process = process

    def _exchange(
        self, process: subprocess.Popen[bytes], texts: Sequence[str], timeout: float
    ) -> np.ndarray:
        assert process.stdin is not None
        with contextlib.suppress(OSError):  # a dead child: read what it said last, or EOF
            write_frame(process.stdin, OK, json.dumps(list(texts)).encode())
        deadline = time.monotonic() + timeout
        header = self._receive(process, HEADER.size, deadline, timeout)
        status, length = HEADER.unpack(header)
        expected = len(texts) * self.dimension * 4
        if (status, length) != (OK, expected) and not (
            status == ERROR and length <= MAX_ERROR_BYTES
        ):
            self._kill(process)
            raise EmbedderUnavailableError(
                "the embedding process wrote something other than an answer; it was stopped"
            )
        payload = self._receive(process, length, deadline, timeout)
        if status == ERROR:
            raise EmbedderUnavailableError(payload.decode(errors="replace"))
        vectors = np.frombuffer(payload, dtype="<f4").astype(np.float32)
        return vectors.reshape(len(texts), self.dimension)

    def _receive(
        self, process: subprocess.Popen[bytes], size: int, deadline: float, timeout: float
    ) -> bytes:
        """Exactly `size` bytes of the child's stdout, before the deadline."""
        assert process.stdout is not None
        chunks: list[bytes] = []
        while size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([process.stdout], [], [], left)[0]:
                self._kill(process)
                raise EmbedderUnavailableError(
                    f"the embedding process did not answer within {timeout:.0f} s; it was stopped"
                )
            chunk = os.read(process.stdout.fileno(), min(size, 1 << 20))
            if not chunk:
                raise EmbedderUnavailableError(
                    f"the embedding process exited with code {self._wait(process)}"
                )
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _kill(self, process: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(OSError):
            process.kill()
        self._wait(process)

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


def relay_says(stderr: BinaryIO, progress: Callable[[str], None]) -> None:
    """Pass on each line of the child's stderr meant for the operator, until it closes;
    reading every line keeps a chatty child from blocking on a full pipe."""
    with stderr:
        for line in stderr:
            if line.startswith(SAYS):
                progress(line[len(SAYS) :].decode(errors="replace").strip())


def serve(requests: BinaryIO, answers: BinaryIO, embedder: Embedder) -> int:
    """The child's loop: load the model, then answer each request until stdin closes."""
    try:
        embedder.embed_many_sync(["load"])
    except Exception as exc:  # the parent shows this reason to the operator
        write_frame(answers, ERROR, str(exc)[:4000].encode())
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
    kind, data_dir, *model_path = sys.argv[1:]
    try:
        embedder = shared_embedder(
            model_path[0] if model_path else None, kind=kind, data_dir=data_dir or None
        )
    except EmbedderUnavailableError as exc:
        write_frame(answers, ERROR, str(exc).encode())
        return 1
    return serve(sys.stdin.buffer, answers, embedder)


if __name__ == "__main__":
    sys.exit(main())
