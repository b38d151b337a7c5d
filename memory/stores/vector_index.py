"""All of a store's vectors as one float32 matrix, with the columns that filter them.

Search is one matrix-vector product over the rows that pass the filters. Rows are
overwritten in place on update and swapped with the last row on delete; the buffer grows
by half when full, so it never holds more than 1.5x the vectors' raw size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

_GROWTH = 1.5
_NO_EXPIRY = np.inf


class VectorIndex:
    """Vectors plus scope, error type and expiry per row, addressed by memory_id."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._clear()

    def _clear(self) -> None:
        dimension = self.dimension
        self._ids: list[str] = []
        self._row_of: dict[str, int] = {}
        self._codes: dict[str, int] = {}
        self._matrix = np.empty((0, dimension), dtype=np.float32)
        self._scope = np.empty(0, dtype=np.int32)
        self._error = np.empty(0, dtype=np.int32)
        self._expires = np.empty(0, dtype=np.float64)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row_of

    @property
    def nbytes(self) -> int:
        """Bytes held by the vector buffer (allocated, not only used)."""
        return self._matrix.nbytes

    def _code(self, text: str) -> int:
        return self._codes.setdefault(text, len(self._codes))

    def _reserve(self, rows: int) -> None:
        if rows <= self._matrix.shape[0]:
            return
        capacity = max(rows, int(self._matrix.shape[0] * _GROWTH) + 16)
        for name, fill in (("_matrix", 0.0), ("_scope", -1), ("_error", -1), ("_expires", 0.0)):
            old = getattr(self, name)
            new = np.full((capacity, *old.shape[1:]), fill, dtype=old.dtype)
            new[: len(self._ids)] = old[: len(self._ids)]
            setattr(self, name, new)

    def reload(self, rows: Iterable[tuple[str, str, str, float | None, bytes]]) -> None:
        """Replace everything with (memory_id, scope, error_key, expires_epoch, blob) rows."""
        self._clear()
        for memory_id, scope, error_key, expires, blob in rows:
            self.put(memory_id, scope, error_key, expires, np.frombuffer(blob, dtype="<f4"))

    def put(
        self, memory_id: str, scope: str, error_key: str, expires: float | None, vector: np.ndarray
    ) -> None:
        row = self._row_of.get(memory_id)
        if row is None:
            row = len(self._ids)
            self._reserve(row + 1)
            self._ids.append(memory_id)
            self._row_of[memory_id] = row
        self._matrix[row] = vector
        self._scope[row] = self._code(scope)
        self._error[row] = self._code(error_key)
        self._expires[row] = _NO_EXPIRY if expires is None else expires

    def remove(self, memory_id: str) -> None:
        row = self._row_of.pop(memory_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._ids[row] = moved
            self._row_of[moved] = row
            for column in (self._matrix, self._scope, self._error, self._expires):
                column[row] = column[last]
        self._ids.pop()

    def candidates(self, scope: str | None, now_epoch: float) -> np.ndarray:
        """Row numbers that pass scope (None: every scope) and expiry."""
        used = len(self._ids)
        scope_code = self._codes.get(scope) if scope is not None else None
        if scope is not None and scope_code is None:
            return np.empty(0, dtype=np.intp)
        mask = (
            self._scope[:used] == scope_code
            if scope_code is not None
            else np.ones(used, dtype=bool)
        )
        mask &= self._expires[:used] > now_epoch
        return np.flatnonzero(mask)

    def top(
        self,
        query: np.ndarray,
        scope: str | None,
        now_epoch: float,
        limit: int,
    ) -> list[tuple[str, float]]:
        """The `limit` most similar candidates as (memory_id, cosine), best first."""
        rows = self.candidates(scope, now_epoch)
        if rows.size == 0:
            return []
        used = len(self._ids)
        if rows.size * 4 < used:
            scores = self._matrix[rows] @ query
        else:
            scores = (self._matrix[:used] @ query)[rows]
        if rows.size > limit:
            best = np.argpartition(-scores, limit - 1)[:limit]
        else:
            best = np.arange(rows.size)
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(self._ids[rows[i]], float(scores[i])) for i in best]

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        return {
            memory_id: self._matrix[self._row_of[memory_id]].copy()
            for memory_id in memory_ids
            if memory_id in self._row_of
        }

    def error_keys(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """Each of `memory_ids` held here with its error type (casefolded)."""
        names = {code: text for text, code in self._codes.items()}
        return {
            memory_id: names[int(self._error[self._row_of[memory_id]])]
            for memory_id in memory_ids
            if memory_id in self._row_of
        }

    def similarities(self, query: np.ndarray, memory_ids: Sequence[str]) -> dict[str, float]:
        rows = [self._row_of[memory_id] for memory_id in memory_ids]
        if not rows:
            return {}
        scores = self._matrix[rows] @ query
        return {
            memory_id: float(score) for memory_id, score in zip(memory_ids, scores, strict=True)
        }
