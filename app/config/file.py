"""The config file: what the user chose once and wants kept between runs — the theme, the
memory store's URL, the scope and the session budget. TOML in the platform's config dir
(as posting and harlequin keep theirs), e.g. ~/.config/astra-codebase-memory/config.toml.

Precedence, lowest first: built-in defaults, this file, the environment (and `.env`),
flags. The dashboard writes the theme here when one is chosen; `astra-memory config set`
writes the rest. Reading is light (tomllib, loaded only when the file exists), so the
dashboard's first frame does not wait.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import platformdirs

from app.config.settings import budget_usd
from app.errors import CommandError


def config_path() -> Path:
    return Path(platformdirs.user_config_dir("astra-codebase-memory")) / "config.toml"


def default_env_file() -> Path:
    """The only `.env` read without --env-file: beside the config file, never the current
    folder's."""
    return config_path().with_name(".env")


def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty string")
    return value


PARSERS: dict[str, Callable[[object], object]] = {
    "theme": _text,
    "memory_url": _text,
    "scope": _text,
    "budget_usd": budget_usd,
}


@dataclass(frozen=True)
class Config:
    theme: str | None = None
    memory_url: str | None = None
    scope: str | None = None
    budget_usd: float | None = None


def load_config(path: Path) -> Config:
    """The file's values; none if it does not exist. A file we cannot use is one clear
    error naming it (exit 2)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read the config file {path}: {exc}", 2) from None
    import tomllib  # only where there is a file: 1.5 ms of a first launch

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CommandError(f"cannot read the config file {path}: {exc}", 2) from None
    unknown = sorted(set(data) - set(PARSERS))
    if unknown:
        raise CommandError(
            f"unknown key {unknown[0]!r} in the config file {path} (known: {', '.join(PARSERS)})",
            2,
        )
    try:
        return Config(**{key: PARSERS[key](value) for key, value in data.items()})
    except ValueError as exc:
        raise CommandError(f"bad value in the config file {path}: {exc}", 2) from None


def set_value(path: Path, key: str, text: str | None) -> Config:
    """Write one key (None removes it), keeping the others; returns the new config."""
    if key not in PARSERS:
        raise CommandError(f"unknown config key {key!r} (known: {', '.join(PARSERS)})", 2)
    values = asdict(load_config(path))
    try:
        values[key] = None if text is None else PARSERS[key](text)
    except ValueError as exc:
        raise CommandError(f"bad value for {key}: {exc}", 2) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{name} = {_toml(value)}" for name, value in values.items() if value is not None]
    written = path.with_name(path.name + ".new")  # renamed over the old: all or nothing
    written.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    written.replace(path)
    return Config(**values)


def _toml(value: object) -> str:
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    return repr(value)
