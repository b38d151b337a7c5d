"""Frozen dataclasses that check and convert their fields as they are made: the records'
validation, light to import (pydantic's models cost a cold `memory search` about 0.15 s;
docs/benchmarks.md).

A field takes a value of its type, or what JSON holds for one: an ISO 8601 string for a
timestamp (which must name its timezone), a list for a tuple, an object for a nested record.
Anything else is refused with the field's dotted path, as a `FieldError`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, Self

from memory.errors import MemoryValidationError


class FieldError(MemoryValidationError):
    """A field's value is not acceptable: `path` names it (`evidence.failing.exit_code`)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem

    def under(self, prefix: str) -> FieldError:
        return FieldError(f"{prefix}.{self.path}" if self.path else prefix, self.problem)


class Checked:
    """Base of a frozen, keyword-only dataclass whose fields are checked on construction,
    `dataclasses.replace` included."""

    def __post_init__(self) -> None:
        for name, kind in _field_types(type(self)).items():
            object.__setattr__(self, name, _converted(kind, getattr(self, name), name))

    @classmethod
    def from_dict(cls, data: object) -> Self:
        """The record a JSON object describes; keys that name no field are ignored."""
        if not isinstance(data, Mapping):
            raise FieldError("", "should be an object")
        names = _field_types(cls)
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            required = field.default is field.default_factory is dataclasses.MISSING
            if required and field.name not in data:
                raise FieldError(field.name, "field required")
        try:
            return cls(**{name: data[name] for name in names if name in data})
        except RecursionError:
            raise FieldError("", "nested too deep to read") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        return cls.from_dict(json.loads(text))

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON holds them: timestamps as ISO 8601 strings, tuples as lists."""
        return {name: _plain(getattr(self, name)) for name in _field_types(type(self))}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


@functools.cache
def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(cls)}


def _converted(kind: Any, value: object, path: str) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = (arg for arg in args if arg is not type(None))
        return _converted(inner, value, path)
    if origin is Literal:
        if isinstance(value, str) and value in args:
            return value
        raise FieldError(path, f"should be one of {', '.join(map(repr, args))}")
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise FieldError(path, "should be a list")
        return tuple(_converted(args[0], item, f"{path}.{i}") for i, item in enumerate(value))
    if origin is dict:
        if not isinstance(value, Mapping):
            raise FieldError(path, "should be an object")
        return {
            _converted(args[0], key, path): _converted(args[1], item, f"{path}.{key}")
            for key, item in value.items()
        }
    if isinstance(kind, type) and issubclass(kind, Checked):
        if isinstance(value, kind):
            return value
        try:
            return kind.from_dict(value)
        except FieldError as exc:
            raise exc.under(path) from None
    return _scalar(kind, value, path)


def _scalar(kind: type, value: object, path: str) -> object:
    if kind is datetime:
        return _timestamp(value, path)
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, bool):
        raise FieldError(path, "should be an integer")
    if isinstance(value, kind):
        return value
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    raise FieldError(path, f"should be {names.get(kind, kind.__name__)}")


def _timestamp(value: object, path: str) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise FieldError(path, "should be an ISO 8601 timestamp") from None
    if not isinstance(value, datetime):
        raise FieldError(path, "should be an ISO 8601 timestamp")
    if value.tzinfo is None or value.utcoffset() is None:
        raise FieldError(path, "must include a timezone")
    return value


def _plain(value: object) -> object:
    if isinstance(value, Checked):
        return value.to_dict()
    if isinstance(value, datetime):
        text = value.isoformat()
        return f"{text[:-6]}Z" if text.endswith("+00:00") else text
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
