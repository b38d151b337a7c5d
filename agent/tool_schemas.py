"""The model's function tools: their strict schemas and the validation of their arguments.

The schemas are public contracts (names and argument names are fixed by DESIGN). Each
tool's arguments are also a pydantic model, so a call that is not valid JSON or does not
match its schema is refused with a sentence the model can act on.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SearchArguments(_Arguments):
    query: str
    error_type: str | None
    top_k: int = Field(ge=1, le=10)


class StoreArguments(_Arguments):
    fix_description: str
    error_type: str
    file_paths: list[str]
    outcome: str


class ListFilesArguments(_Arguments):
    path: str | None


class ReadFileArguments(_Arguments):
    path: str


class ApplyEditArguments(_Arguments):
    path: str
    old_text: str
    new_text: str


class RunTestsArguments(_Arguments):
    pass


ARGUMENTS: dict[str, type[_Arguments]] = {
    "search_codebase_memory": SearchArguments,
    "store_fix_memory": StoreArguments,
    "list_files": ListFilesArguments,
    "read_file": ReadFileArguments,
    "apply_edit": ApplyEditArguments,
    "run_tests": RunTestsArguments,
}


def _tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": description,
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
    }


_STRING = {"type": "string"}
_OPTIONAL_STRING = {"type": ["string", "null"]}

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    _tool(
        "search_codebase_memory",
        "Search confirmed fixes from earlier sessions using the observed failure output "
        "(failing test lines, exception, assertion diff). Call before any diagnosis or edit.",
        {
            "query": _STRING,
            "error_type": _OPTIONAL_STRING,
            "top_k": {"type": "integer", "minimum": 1, "maximum": 10},
        },
    ),
    _tool(
        "store_fix_memory",
        "Store the fix after the tests pass. outcome must be the exact confirmed_outcome "
        "returned by the latest passing run_tests. The operator confirms each write.",
        {
            "fix_description": _STRING,
            "error_type": _STRING,
            "file_paths": {"type": "array", "items": _STRING},
            "outcome": _STRING,
        },
    ),
    _tool(
        "list_files",
        "List files in the workspace, or under a relative folder.",
        {"path": _OPTIONAL_STRING},
    ),
    _tool("read_file", "Read a text file, by path relative to the workspace.", {"path": _STRING}),
    _tool(
        "apply_edit",
        "Replace old_text, which must occur exactly once in the file, with new_text.",
        {"path": _STRING, "old_text": _STRING, "new_text": _STRING},
    ),
    _tool(
        "run_tests",
        "Run the project's tests. Returns the exit code, a summary, the output's tail and, "
        "when they pass, a confirmed_outcome string.",
        {},
    ),
]


# Far above any real call (a whole file's new_text), far below what hurts the process.
MAX_ARGUMENTS_CHARS = 1_000_000
MAX_ARGUMENTS_DEPTH = 8  # the schemas need 2: an object holding a list of strings


def _depth(text: str) -> int:
    """How deeply `text`'s brackets nest, strings skipped; counted before parsing, since
    json.loads recurses once per level and 100,000 levels overflow the stack."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def valid_utf8(value: Any) -> Any:
    """Lone surrogates ("\\ud800" in the JSON) become U+FFFD, so every string can reach a
    path, a file, a terminal or the embedder. Recursive: only for parsed JSON, whose depth
    the parser has bounded."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [valid_utf8(item) for item in value]
    if isinstance(value, dict):
        return {valid_utf8(key): valid_utf8(item) for key, item in value.items()}
    return value


class ArgumentError(ValueError):
    """A function call's arguments are not valid JSON or do not match its schema."""


def parse_arguments(name: str, arguments: object) -> _Arguments:
    """The validated arguments of a call to `name`; ArgumentError says what is wrong."""
    model = ARGUMENTS.get(name)
    if model is None:
        raise ArgumentError(f"unknown tool {name!r}; the tools are {', '.join(ARGUMENTS)}")
    if not isinstance(arguments, str):
        raise ArgumentError("arguments must be a JSON-encoded object")
    if len(arguments) > MAX_ARGUMENTS_CHARS:
        raise ArgumentError(
            f"arguments are {len(arguments):,} characters; the limit is {MAX_ARGUMENTS_CHARS:,}"
        )
    if _depth(arguments) > MAX_ARGUMENTS_DEPTH:
        raise ArgumentError(f"arguments are nested deeper than {MAX_ARGUMENTS_DEPTH} levels")
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"arguments are not valid JSON ({exc.msg} at char {exc.pos})") from exc
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise ArgumentError(f"arguments are not usable JSON ({exc})") from exc
    data = valid_utf8(data)
    if not isinstance(data, dict):
        raise ArgumentError("arguments must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or 'arguments'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ArgumentError(f"arguments do not match the {name} schema: {problems}") from exc
