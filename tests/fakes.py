"""Test doubles at the edges we cannot or need not reach in quick tests.

`HashEmbedder` is a deterministic stand-in for the sentence-transformers model: each word
hashes to a fixed random direction, so texts sharing words are similar. The retrieval and
end-to-end suites use the real model instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence

import numpy as np

from agent import events as ev
from memory.records import EMBEDDING_DIMENSION, TestEvidence

PASSING = "pytest passed with exit code 0 (4 passed)"
EVIDENCE = TestEvidence(
    command="python -m pytest -q", exit_code=0, passed=4, failed=0, output_excerpt="4 passed"
)


class HashEmbedder:
    model_name = "test/hash-embedder"
    dimension = EMBEDDING_DIMENSION

    def __init__(self) -> None:
        self.calls: list[str] = []

    def _word_vector(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)

    def embed_many_sync(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.extend(texts)
        rows = []
        for text in texts:
            vector = np.zeros(self.dimension, dtype=np.float32)
            for word in re.findall(r"\w+", text.lower()):
                vector += self._word_vector(word)
            norm = np.linalg.norm(vector)
            rows.append(vector / norm if norm else vector)
        return np.stack(rows) if rows else np.empty((0, self.dimension), dtype=np.float32)

    async def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_many_sync, texts)

    async def embed(self, text: str) -> np.ndarray:
        return (await self.embed_many([text]))[0]


def failed_run_finished(run: int) -> ev.TestFinished:
    """Test run `run` ended: 3 passed, 1 failed."""
    return ev.TestFinished(
        run=run,
        command="python -m pytest -q",
        exit_code=1,
        passed=3,
        failed=1,
        timed_out=False,
        duration_s=0.5,
        confirmed_outcome=None,
    )
