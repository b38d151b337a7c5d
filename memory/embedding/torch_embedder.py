"""all-MiniLM-L6-v2 through sentence-transformers: the reference, and the ONNX path's fallback.

Importing sentence-transformers and torch takes seconds, so the model loads lazily, once
per embedder, under a lock; `embed` runs the encoder in a thread so no event loop stalls.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memory.embedding.model_files import resolve_model_path
from memory.errors import EmbedderUnavailableError
from memory.records import EMBEDDING_DIMENSION, EMBEDDING_MODEL


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, 384-d, normalized, CPU only."""

    model_name = EMBEDDING_MODEL
    dimension = EMBEDDING_DIMENSION

    def __init__(self, model_path: str | os.PathLike[str] | None = None) -> None:
        self._configured_path = model_path
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the model once; later calls return at once. Safe from any thread."""
        with self._lock:
            if self._model is not None:
                return
            path = resolve_model_path(self._configured_path)
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()
                model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
            except Exception as exc:  # a broken install must name itself, not crash later
                raise EmbedderUnavailableError(
                    f"cannot load the embedding model at {path}: {exc}"
                ) from exc
            dimension = model.encode(["dimension probe"]).shape[-1]
            if dimension != self.dimension:
                raise EmbedderUnavailableError(
                    f"the model at {path} makes {dimension}-d vectors, expected {self.dimension}"
                )
            self._model = model

    def embed_many_sync(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        with self._lock:  # torch modules are not re-entrant across threads
            vectors = self._model.encode(
                list(texts),
                batch_size=32,
                normalize_embeddings=True,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)

    async def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_many_sync, texts)

    async def embed(self, text: str) -> np.ndarray:
        return (await self.embed_many([text]))[0]

    def transformer(self) -> Any:
        """The underlying Hugging Face module (for the ONNX export)."""
        self.load()
        return self._model[0].auto_model
