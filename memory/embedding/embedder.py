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
