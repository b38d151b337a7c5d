"""Errors the CLI turns into one line on stderr and an exit code."""


class CommandError(Exception):
    """A command could not do its work; the message is for the user, `code` for the shell."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code
