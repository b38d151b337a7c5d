"""The embedding model in a child process: same vectors, no torch here, no secrets there.

One child with the real model serves the module (about five seconds to load); the test that
kills it also shows that the next `load()` starts a fresh one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from memory.embedding.embedder import EmbedderUnavailableError
from memory.embedding.process import ProcessEmbedder
from memory.embedding.torch_embedder import SentenceTransformerEmbedder

TEXTS = [
    "AssertionError: expected 3 origins, got 1",
    "strip whitespace from comma separated origins",
    "",
]
OPENAI_KEY = "sk-test-0123456789abcdefSECRET"


@pytest.fixture(scope="module")
def process_embedder():
    embedder = ProcessEmbedder()
    embedder.load()
    yield embedder
    embedder.close()


def misbehaving(tmp_path: Path, startup: str, **env: str) -> ProcessEmbedder:
    """An embedder whose child runs `startup` first (a sitecustomize on its PYTHONPATH,
    passed through the child's environment allowlist by name)."""
    (tmp_path / "sitecustomize.py").write_text(startup, encoding="utf-8")
    passed = {"PYTHONPATH": str(tmp_path), "ASTRA_TEST_ENV_PASS": "PYTHONPATH"}
    return ProcessEmbedder(env={**os.environ, **passed, **env})


def loading_in_a_thread(embedder: ProcessEmbedder) -> tuple[threading.Thread, list]:
    errors: list[BaseException] = []

    def load() -> None:
        try:
            embedder.load()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=load)
    thread.start()
    deadline = time.monotonic() + 10
    while embedder.pid is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return thread, errors


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_vectors_equal_the_in_process_model(process_embedder, real_embedder):
    vectors = process_embedder.embed_many_sync(TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), 384)
    assert np.allclose(vectors, real_embedder.embed_many_sync(TEXTS), atol=1e-5)


def test_an_empty_batch_gives_no_rows(process_embedder):
    assert process_embedder.embed_many_sync([]).shape == (0, 384)


async def test_async_methods_match_the_sync_one(process_embedder):
    many = await process_embedder.embed_many(TEXTS[:2])
    one = await process_embedder.embed(TEXTS[0])
    assert np.allclose(many, process_embedder.embed_many_sync(TEXTS[:2]), atol=1e-6)
    assert np.allclose(one, many[0], atol=1e-6)


def test_threads_share_the_child_safely(process_embedder):
    expected = process_embedder.embed_many_sync(TEXTS)
    with ThreadPoolExecutor(4) as pool:
        answers = list(
            pool.map(lambda text: process_embedder.embed_many_sync([text])[0], TEXTS * 4)
        )
    assert np.allclose(np.stack(answers), np.tile(expected, (4, 1)), atol=1e-6)


def test_load_again_keeps_the_same_child(process_embedder):
    pid = process_embedder.pid
    process_embedder.load()
    assert process_embedder.loaded
    assert process_embedder.pid == pid


def test_a_bad_model_path_fails_load_with_the_in_process_reason(tmp_path):
    path = tmp_path / "no-model"
    with pytest.raises(EmbedderUnavailableError) as in_process:
        SentenceTransformerEmbedder(path).load()
    embedder = ProcessEmbedder(path)
    with pytest.raises(EmbedderUnavailableError) as caught:
        embedder.load()
    assert str(path) in str(caught.value)
    assert str(caught.value) == str(in_process.value)
    assert not embedder.loaded


def test_constructing_starts_nothing_and_imports_no_torch():
    probe = (
        "import sys; from memory.embedding.process import ProcessEmbedder;"
        "embedder = ProcessEmbedder(); embedder.close();"
        "assert embedder.pid is None and not embedder.loaded;"
        "bad = sorted(m for m in sys.modules if m in {'torch', 'sentence_transformers'});"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_killed_child_fails_the_next_call_quickly_then_load_starts_anew(process_embedder):
    killed = process_embedder.pid
    os.kill(killed, signal.SIGKILL)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailableError, match=r"embedding process exited with code -9"):
        process_embedder.embed_many_sync(TEXTS)
    assert time.monotonic() - started < 2
    assert not process_embedder.loaded
    process_embedder.load()
    assert process_embedder.pid not in (None, killed)
    assert process_embedder.embed_many_sync(TEXTS).shape == (len(TEXTS), 384)


def test_close_leaves_no_process_behind(process_embedder):
    pid = process_embedder.pid
    process_embedder.close()
    process_embedder.close()
    assert not process_embedder.loaded
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


HANG = "import time\ntime.sleep(600)\n"


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_the_child_gets_no_secret_by_name_or_by_value(tmp_path):
    bearer = "Bearer abcdefghijklmnopqrstuvwxyz0123456789"
    embedder = misbehaving(tmp_path, HANG, OPENAI_API_KEY=OPENAI_KEY, INNOCENT_NAME=bearer)
    thread, _ = loading_in_a_thread(embedder)
    try:
        environ = Path(f"/proc/{embedder.pid}/environ").read_bytes()
    finally:
        embedder.close()
        thread.join(10)
    assert b"PYTHONPATH=" in environ
    assert OPENAI_KEY.encode() not in environ and b"OPENAI_API_KEY" not in environ
    assert bearer.encode() not in environ


def test_close_during_load_kills_the_child_at_once(tmp_path):
    embedder = misbehaving(tmp_path, HANG)
    thread, errors = loading_in_a_thread(embedder)
    pid = embedder.pid
    started = time.monotonic()
    embedder.close()
    thread.join(10)
    assert time.monotonic() - started < 5
    assert [type(error) for error in errors] == [EmbedderUnavailableError]
    assert gone(pid)
    with pytest.raises(EmbedderUnavailableError, match="closed"):
        embedder.embed_many_sync(["after close"])


def test_a_child_that_never_answers_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr("memory.embedding.process.LOAD_TIMEOUT_S", 1.0)
    embedder = misbehaving(tmp_path, HANG)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailableError, match="did not answer within 1 s"):
        embedder.load()
    assert time.monotonic() - started < 10
    assert not embedder.loaded


def test_garbage_on_the_childs_stdout_stops_it(tmp_path):
    embedder = misbehaving(tmp_path, "print('shadowed ' * 100, flush=True)\n" + HANG)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailableError, match="something other than an answer"):
        embedder.load()
    assert time.monotonic() - started < 10
    assert not embedder.loaded


def test_what_the_child_says_for_the_operator_reaches_progress_and_nothing_else(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nfrom memory.embedding.onnx_embedder import say_on_stderr\n"
        "print('a library warning', file=sys.stderr)\n"
        "say_on_stderr('exporting it to ONNX (model.onnx)')\n",
        encoding="utf-8",
    )
    said: list[str] = []
    embedder = ProcessEmbedder(
        tmp_path / "no-model",
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
            "ASTRA_TEST_ENV_PASS": "PYTHONPATH",  # the child's environment is an allowlist
        },
        progress=said.append,
    )
    with pytest.raises(EmbedderUnavailableError, match="no-model"):
        embedder.load()
    deadline = time.monotonic() + 10
    while not said and time.monotonic() < deadline:
        time.sleep(0.01)
    assert said == ["exporting it to ONNX (model.onnx)"]
