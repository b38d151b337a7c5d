"""The embedding model in a child process: same vectors, no torch here, no secrets there.

One child with the real model serves the module (about five seconds to load); the test that
kills it also shows that the next `load()` starts a fresh one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from memory.embedder import EmbedderUnavailableError, SentenceTransformerEmbedder
from memory.embedding_process import ProcessEmbedder

TEXTS = [
    "AssertionError: expected 3 origins, got 1",
    "strip whitespace from comma separated origins",
    "",
]
OPENAI_KEY = "sk-test-0123456789abcdefSECRET"


@pytest.fixture(scope="module")
def process_embedder():
    embedder = ProcessEmbedder()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        embedder.load()
    yield embedder
    embedder.close()


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


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_the_child_gets_no_openai_key(process_embedder):
    names = {
        entry.split(b"=", 1)[0]
        for entry in Path(f"/proc/{process_embedder.pid}/environ").read_bytes().split(b"\0")
    }
    assert b"PATH" in names
    assert b"OPENAI_API_KEY" not in names


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
        "import sys; from memory.embedding_process import ProcessEmbedder;"
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
