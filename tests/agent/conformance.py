"""Request bodies checked as the real Responses API would: against the official openai SDK's
`ResponseCreateParams` (unknown keys refused at every level) and the strict function-schema
rules (`strict: true` needs `additionalProperties: false` and every property required)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from typing import Any

from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator

_MAX_REPORTED = 5


@functools.cache
def request_validator() -> SchemaValidator:
    """The SDK's TypedDicts ignore unknown keys; the API refuses them, so forbid them all."""
    schema = copy.deepcopy(TypeAdapter(ResponseCreateParamsNonStreaming).core_schema)

    def forbid(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "typed-dict":
                node["extra_behavior"] = "forbid"
            for value in node.values():
                forbid(value)
        elif isinstance(node, list):
            for value in node:
                forbid(value)

    forbid(schema)
    return SchemaValidator(schema)


def _consume(value: Any) -> None:
    """Pydantic validates `Iterable` fields (tools, input parts) lazily: walk them all."""
    if isinstance(value, dict | list | tuple | Iterator):
        for item in value.values() if isinstance(value, dict) else value:
            _consume(item)


def _where(location: tuple[Any, ...]) -> str:
    # union branches are named by their (long) type names; keep the short path parts
    return ".".join(str(part) for part in location if len(str(part)) <= 40) or "body"


def _telling(errors: list[Any]) -> list[Any]:
    """The errors worth reading, deepest first: a union tries every item type, so leave out
    the branches whose `type` did not even match."""
    wrong_branches = {
        error["loc"][:-1]
        for error in errors
        if error["type"] == "literal_error" and error["loc"][-1:] == ("type",)
    }
    kept = [
        error
        for error in errors
        if not any(error["loc"][: len(branch)] == branch for branch in wrong_branches)
    ]
    return sorted(kept or errors, key=lambda error: -len(error["loc"]))


def request_violations(body: Any) -> list[str]:
    """Every way `body` breaks the SDK's request types or the strict schema rules."""
    if not isinstance(body, dict):
        return [f"the body is not a JSON object: {body!r:.80}"]
    problems = []
    try:
        _consume(request_validator().validate_python(body))
    except ValidationError as exc:
        errors = _telling(exc.errors())
        problems += [f"{_where(error['loc'])}: {error['msg']}" for error in errors[:_MAX_REPORTED]]
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "function" and tool.get("strict"):
            problems += strict_schema_violations(tool.get("parameters"), f"tool {tool.get('name')}")
    return problems


def strict_schema_violations(schema: Any, where: str) -> list[str]:
    """The strict mode's rules for a JSON schema, at every level of it."""
    if not isinstance(schema, dict):
        return [f"{where}: the schema is not an object"]
    problems = []
    kinds = schema.get("type")
    if (
        "properties" in schema
        or kinds == "object"
        or (isinstance(kinds, list) and "object" in kinds)
    ):
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where}: strict needs additionalProperties: false")
        properties = schema.get("properties") or {}
        missing = sorted(set(properties) - set(schema.get("required") or []))
        if missing:
            problems.append(f"{where}: strict needs every property required, not {missing}")
        for name, part in properties.items():
            problems += strict_schema_violations(part, f"{where}.{name}")
    if "items" in schema:
        problems += strict_schema_violations(schema["items"], f"{where}[]")
    for index, part in enumerate(schema.get("anyOf") or []):
        problems += strict_schema_violations(part, f"{where}|{index}")
    for name, part in (schema.get("$defs") or {}).items():
        problems += strict_schema_violations(part, f"{where}.$defs.{name}")
    return problems
