"""The memory layer's errors: each one a clear sentence for a person or for the model."""


class MemoryLayerError(Exception):
    """Base of every error raised by `memory/`."""


class MemoryValidationError(MemoryLayerError, ValueError):
    """An argument to a memory tool or a record field is not acceptable."""


class UnconfirmedOutcomeError(MemoryValidationError):
    """A store was attempted with an outcome the current run's tests did not confirm."""


class MemoryStoreError(MemoryLayerError):
    """The store cannot be opened, read or written (bad URL, not a memory database, ...)."""


class RecordNotFoundError(MemoryStoreError, KeyError):
    """No record has the given id."""

    def __str__(self) -> str:
        return f"no memory record with id {self.args[0]!r}"


class EmbedderUnavailableError(RuntimeError):
    """The embedding model's files cannot be found or loaded."""
