"""Local sentence embeddings: all-MiniLM-L6-v2 on the CPU, never downloaded at run time.

Two implementations give the same vectors: `OnnxEmbedder` (memory/embedding/onnx_embedder.py, the
default, loads in about a second) and `SentenceTransformerEmbedder`
(memory/embedding/torch_embedder.py, the reference and the fallback). This module is their common
face and the one place that picks between them; it sits above both, so neither imports it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from memory.errors import EmbedderUnavailableError


class Embedder(Protocol):
    """Turns texts into normalized float32 vectors of `dimension` entries."""

    model_name: str
    dimension: int

    def embed_many_sync(self, texts: Sequence[str]) -> np.ndarray: ...

    async def embed_many(self, texts: Sequence[str]) -> np.ndarray: ...

    async def embed(self, text: str) -> np.ndarray: ...


EMBEDDERS = ("onnx", "torch")  # ASTRA_EMBEDDER's values; onnx is the default

_shared: dict[tuple[str, str, str], Embedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(
    model_path: str | os.PathLike[str] | None = None,
    *,
    kind: str = "torch",
    data_dir: str | os.PathLike[str] | None = None,
) -> Embedder:
    """The process-wide embedder of this kind for `model_path`, so the model is loaded once
    per process. `onnx` needs the data dir, where its export lives."""
    if kind not in EMBEDDERS:
        raise EmbedderUnavailableError(f"unknown embedder {kind!r}: expected onnx or torch")
    key = (kind, str(model_path or ""), str(data_dir or "") if kind == "onnx" else "")
    with _shared_lock:
        if key not in _shared:
            if kind == "onnx":
                if data_dir is None:
                    raise EmbedderUnavailableError("the ONNX embedder needs a data dir")
                from memory.embedding.onnx_embedder import OnnxEmbedder

                _shared[key] = OnnxEmbedder(data_dir, model_path)
            else:
                from memory.embedding.torch_embedder import SentenceTransformerEmbedder

                _shared[key] = SentenceTransformerEmbedder(model_path)
        return _shared[key]


class PrimedEmbedder:
    """An embedder that answers the texts it was primed with, and those it has embedded
    since, from memory; other texts from `inner`. An evaluation asks for each query's vector
    one query at a time, in several rankings: one batch costs a fraction of that."""

    def __init__(self, inner: Embedder, vectors: dict[str, np.ndarray]) -> None:
        self.model_name, self.dimension = inner.model_name, inner.dimension
        self._inner = inner
        self._vectors = vectors

    @classmethod
    async def prime(cls, inner: Embedder, texts: Sequence[str]) -> PrimedEmbedder:
        unique = list(dict.fromkeys(texts))
        vectors = await inner.embed_many(unique) if unique else []
        return cls(inner, dict(zip(unique, vectors, strict=True)))

    def embed_many_sync(self, texts: Sequence[str]) -> np.ndarray:
        if missing := self._missing(texts):
            self._vectors.update(zip(missing, self._inner.embed_many_sync(missing), strict=True))
        return self._stacked(texts)

    async def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        if missing := self._missing(texts):
            self._vectors.update(zip(missing, await self._inner.embed_many(missing), strict=True))
        return self._stacked(texts)

    async def embed(self, text: str) -> np.ndarray:
        return (await self.embed_many([text]))[0]

    def _missing(self, texts: Sequence[str]) -> list[str]:
        return [text for text in dict.fromkeys(texts) if text not in self._vectors]

    def _stacked(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        return np.stack([self._vectors[text] for text in texts])
