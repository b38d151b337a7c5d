"""Reading and writing one row of the embedded store: a corrupt row is skipped with a
warning naming its id, so it never breaks the rows beside it."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator

import numpy as np

from memory.errors import MemoryStoreError
from memory.records import EMBEDDING_DIMENSION, MemoryRecord


class CorruptRecordWarning(UserWarning):
    """A row whose vector or JSON cannot be read: skipped, the other rows still served."""


def skip(memory_id: str, what: str) -> None:
    warnings.warn(f"skipping memory record {memory_id}: {what}", CorruptRecordWarning, stacklevel=2)


def readable_vectors(
    rows: Iterable[tuple[str, str, str, float | None, bytes]],
) -> Iterator[tuple[str, str, str, float | None, bytes]]:
    for row in rows:
        blob = row[4]
        if isinstance(blob, bytes) and len(blob) == EMBEDDING_DIMENSION * 4:
            yield row
        else:
            skip(row[0], "its vector is not 384 float32 values")


def record_from_json(memory_id: str, body: object) -> MemoryRecord | None:
    """The row's record, or None (with a warning naming it) if its JSON does not parse."""
    try:
        return MemoryRecord.from_json(body)  # type: ignore[arg-type]
    except (ValueError, TypeError) as exc:
        skip(memory_id, f"its record_json is unreadable ({type(exc).__name__})")
        return None


def vector_blob(vector: np.ndarray) -> bytes:
    vector = np.asarray(vector, dtype="<f4").reshape(-1)
    if vector.shape[0] != EMBEDDING_DIMENSION:
        raise MemoryStoreError(
            f"vector has {vector.shape[0]} entries, expected {EMBEDDING_DIMENSION}"
        )
    return vector.tobytes()
