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
from collections.abc import Callable, Mapping
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


Convert = Callable[[object, str], Any]  # a field's value and its path -> the value kept


class Checked:
    """Base of a frozen, keyword-only dataclass whose fields are checked on construction,
    `dataclasses.replace` included."""

    def __post_init__(self) -> None:
        for name, convert, _ in _fields(type(self)):
            object.__setattr__(self, name, convert(getattr(self, name), name))

    @classmethod
    def from_dict(cls, data: object) -> Self:
        """The record a JSON object describes; keys that name no field are ignored."""
        if not isinstance(data, Mapping):
            raise FieldError("", "should be an object")
        given = {}
        for name, _, required in _fields(cls):
            if name in data:
                given[name] = data[name]
            elif required:
                raise FieldError(name, "field required")
        try:
            return cls(**given)
        except RecursionError:
            raise FieldError("", "nested too deep to read") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        try:
            data = json.loads(text)
        except RecursionError:  # a corrupt row: refused like any other, never a crash
            raise FieldError("", "nested too deep to read") from None
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON holds them: timestamps as ISO 8601 strings, tuples as lists."""
        return {name: _plain(getattr(self, name)) for name, _, _ in _fields(type(self))}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Convert, bool], ...]:
    """Each field's name, converter and whether it must be given: worked out once a class,
    since a search makes a dozen records and an import thousands."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            field.name,
            _converter(hints[field.name]),
            field.default is field.default_factory is dataclasses.MISSING,
        )
        for field in dataclasses.fields(cls)
    )


def _converter(kind: Any) -> Convert:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        (inner,) = (arg for arg in args if arg is not type(None))
        convert = _converter(inner)
        return lambda value, path: None if value is None else convert(value, path)
    if origin is Literal:
        return functools.partial(_choice, frozenset(args), ", ".join(map(repr, args)))
    if origin is tuple:
        return functools.partial(_sequence, _converter(args[0]))
    if origin is dict:
        return functools.partial(_mapping, _converter(args[0]), _converter(args[1]))
    if isinstance(kind, type) and issubclass(kind, Checked):
        return functools.partial(_nested, kind)
    if kind is datetime:
        return _timestamp
    if kind is float:
        return _number
    if kind is int:
        return _integer
    return functools.partial(_scalar, kind)


def _choice(choices: frozenset[str], shown: str, value: object, path: str) -> str:
    if isinstance(value, str) and value in choices:
        return value
    raise FieldError(path, f"should be one of {shown}")


def _sequence(item: Convert, value: object, path: str) -> tuple[Any, ...]:
    if not isinstance(value, list | tuple):
        raise FieldError(path, "should be a list")
    return tuple(item(each, f"{path}.{i}") for i, each in enumerate(value))


def _mapping(key: Convert, item: Convert, value: object, path: str) -> dict[Any, Any]:
    if not isinstance(value, Mapping):
        raise FieldError(path, "should be an object")
    return {key(k, path): item(each, f"{path}.{k}") for k, each in value.items()}


def _nested(kind: type[Checked], value: object, path: str) -> Checked:
    if isinstance(value, kind):
        return value
    try:
        return kind.from_dict(value)
    except FieldError as exc:
        raise exc.under(path) from None


_NAMES = {str: "a string", bool: "true or false"}


def _scalar(kind: type, value: object, path: str) -> object:
    if isinstance(value, kind):
        return value
    raise FieldError(path, f"should be {_NAMES.get(kind, kind.__name__)}")


def _integer(value: object, path: str) -> int:
    """An int, or a float with nothing after the point (JSON from some servers, 3.0)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise FieldError(path, "should be an integer")


def _number(value: object, path: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise FieldError(path, "should be a number")


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
