"""all-MiniLM-L6-v2 through onnxruntime: the same vectors as sentence-transformers, in a second.

Importing torch and sentence-transformers takes seconds; this path imports onnxruntime,
tokenizers and numpy only. The ONNX file is made once from the installed weights by
`memory.onnx_export` (first use, or `astra-memory model prepare`) into the data dir, keyed
by the weights' hash. The pipeline repeats sentence-transformers': strip each text,
tokenize with truncation at the model's max_seq_length and padding to the longest of the
batch, mean pooling over the attention mask, L2 normalisation. When the export cannot be
made or fails its check, the embedder says so once and uses sentence-transformers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory.embedder import SentenceTransformerEmbedder, resolve_model_path
from memory.errors import EmbedderUnavailableError
from memory.records import EMBEDDING_DIMENSION, EMBEDDING_MODEL

BATCH_SIZE = 32  # as sentence-transformers' encode; texts sorted by length, so little padding
# Measured on this 2-core machine shared with other work (bench/bench_embedder.py --sweep,
# and /tmp experiments quoted in the README): graph optimisation levels differ by noise at
# run time and ORT_ENABLE_ALL loads as fast as basic (115-175 ms). Two intra-op threads
# beat one (query p50 12 vs 21 ms, 256 long texts 9.3 vs 13.4 s) when the machine is
# quiet, but their spinning workers collapsed to 50-90 ms a query under load; with spinning
# off they keep most of the gain (16 ms, 12.5 s) and yield the core when others need it.
INTRA_OP_THREADS = 2
ALLOW_SPINNING = "0"
GRAPH_OPTIMIZATION = "ORT_ENABLE_ALL"

Progress = Callable[[str], None]


def say_on_stderr(message: str) -> None:
    print(f"astra-memory: {message}", file=sys.stderr, flush=True)


def weights_file(model_path: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (model_path / name).is_file():
            return model_path / name
    raise EmbedderUnavailableError(f"no model.safetensors or pytorch_model.bin in {model_path}")


def weights_digest(model_path: Path, cache_dir: Path) -> str:
    """SHA-256 of the weights, remembered by path, size and mtime so that a run reads
    a small file instead of hashing 90 MB."""
    weights = weights_file(model_path)
    stat = weights.stat()
    stamp = f"{weights.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    memo = cache_dir / f"weights-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.sha256"
    try:
        digest = memo.read_text(encoding="ascii").strip()
        if len(digest) == 64:
            return digest
    except OSError:
        pass
    hasher = hashlib.sha256()
    with weights.open("rb") as stream:
        while chunk := stream.read(1 << 22):
            hasher.update(chunk)
    digest = hasher.hexdigest()
    cache_dir.mkdir(parents=True, exist_ok=True)
    temporary = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
    temporary.write_text(digest, encoding="ascii")
    os.replace(temporary, memo)
    return digest


def onnx_path(model_path: Path, data_dir: Path) -> Path:
    """Where the export of these weights lives (it may not exist yet)."""
    folder = data_dir / "models"
    return folder / f"all-MiniLM-L6-v2-{weights_digest(model_path, folder)[:16]}.onnx"


def max_seq_length(model_path: Path) -> int:
    """sentence-transformers' limit: its config's max_seq_length, else the tokenizer's."""
    for name, key in (
        ("sentence_bert_config.json", "max_seq_length"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        try:
            value = json.loads((model_path / name).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError):
            continue
        if isinstance(value, int) and value > 0:
            return value
    return 512


class OnnxEncoder:
    """One ONNX file and its tokenizer: texts in, normalized float32 vectors out."""

    def __init__(self, onnx_file: Path, model_path: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=max_seq_length(model_path))
        pad_id = tokenizer.token_to_id("[PAD]") or 0
        tokenizer.enable_padding(pad_id=pad_id, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = INTRA_OP_THREADS
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", ALLOW_SPINNING)
        options.graph_optimization_level = getattr(
            onnxruntime.GraphOptimizationLevel, GRAPH_OPTIMIZATION
        )
        self._tokenizer = tokenizer
        self._session = onnxruntime.InferenceSession(
            str(onnx_file), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        stripped = [str(text).strip() for text in texts]
        order = sorted(range(len(stripped)), key=lambda i: -len(stripped[i]))
        vectors = np.zeros((len(stripped), EMBEDDING_DIMENSION), dtype=np.float32)
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start : start + BATCH_SIZE]
            vectors[batch] = self._encode_batch([stripped[i] for i in batch])
        return vectors

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 through onnxruntime, 384-d, normalized, CPU only. The export is
    made on the first load if missing; sentence-transformers takes over if it cannot be."""

    model_name = EMBEDDING_MODEL
    dimension = EMBEDDING_DIMENSION

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        model_path: str | os.PathLike[str] | None = None,
        progress: Progress = say_on_stderr,
    ) -> None:
        self._data_dir = Path(data_dir).expanduser()
        self._configured_path = model_path
        self._progress = progress
        self._encoder: OnnxEncoder | None = None
        self._fallback: SentenceTransformerEmbedder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._encoder is not None or self._fallback is not None

    @property
    def uses_onnx(self) -> bool:
        return self._encoder is not None

    def load(self) -> None:
        """Load the model once (exporting it first if need be); safe from any thread."""
        with self._lock:
            if self.loaded:
                return
            path = resolve_model_path(self._configured_path)
            try:
                target = onnx_path(path, self._data_dir)
                if not target.is_file():
                    from memory.onnx_export import export_model

                    export_model(path, target, self._progress)
                self._encoder = OnnxEncoder(target, path)
            except (EmbedderUnavailableError, OSError, ImportError) as exc:
                self._progress(
                    f"warning: the ONNX embedder is unavailable ({exc}); using "
                    "sentence-transformers instead, which takes seconds longer to load"
                )
                fallback = SentenceTransformerEmbedder(path)
                fallback.load()
                self._fallback = fallback

    def embed_many_sync(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        if self._fallback is not None:
            return self._fallback.embed_many_sync(texts)
        assert self._encoder is not None
        return self._encoder.encode(texts)  # onnxruntime sessions take concurrent runs

    async def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_many_sync, texts)

    async def embed(self, text: str) -> np.ndarray:
        return (await self.embed_many([text]))[0]
