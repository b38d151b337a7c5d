"""Why a session ends early, and the exit code each reason gives `astra-memory run`.

As in mini-swe-agent's exceptions.py and posting's exit_codes.py: `ExitCode` is the one
table of the codes (DESIGN's `run` contract), and each stop names its report status and
its code once, here. A refused or failed tool call is not a stop: it goes back to the
model as an `ERROR:` output and the session goes on.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    PASSED = 0  # the final test run passed, or they passed before any edit (nothing to fix)
    NOT_PASSING = 1  # finished with tests not passing, or the model API failed
    USAGE = 2  # a usage or configuration error, or live cost not approved
    STOPPED = 3  # stopped by the budget, a limit or the operator
    GATE = 4  # stopped by a gate the model cannot be let past


class SessionStop(Exception):
    """Ends the session: `status` goes in the report, `exit_code` to the shell."""

    status: ClassVar[str]
    exit_code: ClassVar[ExitCode]


class OperatorStop(SessionStop):
    """The operator asked to stop; honoured before the next request or tool call."""

    status, exit_code = "stopped", ExitCode.STOPPED


class LimitReached(SessionStop):
    """The model turn limit."""

    status, exit_code = "turn_limit", ExitCode.STOPPED


class ToolLimitReached(LimitReached):
    status = "tool_limit"


class OutputIncomplete(LimitReached):
    """The response came back `incomplete` (its output cap, a content filter): none of its
    calls ran, since a cut-off call's arguments cannot be trusted."""

    status = "incomplete"


class BudgetStop(SessionStop):
    """The next request could cross the session's or the ledger's limit; it was not sent."""

    status, exit_code = "budget", ExitCode.STOPPED


class GateStop(SessionStop):
    """A final answer came before any memory search result reached the model."""

    status, exit_code = "gate", ExitCode.GATE


class ApprovalDeclined(SessionStop):
    """The operator did not approve the live cost; nothing was sent."""

    status, exit_code = "declined", ExitCode.USAGE


class ModelError(SessionStop):
    """The Responses API failed the request, or answered with something unusable."""

    status, exit_code = "api_error", ExitCode.NOT_PASSING


class ModelConfigError(ModelError):
    """The API refused our setup (key, model, base URL): the operator must fix it."""

    exit_code = ExitCode.USAGE


class ModelFailed(ModelError):
    """The response itself came back with status `failed`."""

    status = "failed"


class ModelRefused(SessionStop):
    """The model answered with a refusal instead of doing the task."""

    status, exit_code = "refused", ExitCode.NOT_PASSING


class RecordingError(SessionStop):
    """The transcript or the ledger could not be written."""

    status, exit_code = "local_error", ExitCode.NOT_PASSING


class NothingToFix(SessionStop):
    """The tests passed before any edit: the model was told, and nothing is stored."""

    status, exit_code = "nothing-to-fix", ExitCode.PASSED
