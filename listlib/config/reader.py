"""Typed values out of a TOML table, every problem recorded with its dotted key path.

The ``Reader`` collects issues and warnings instead of raising, so that one
ConfigError can report them all together; an unknown key is an issue naming the
nearest valid spelling. Never falls back silently for a value that is present but
wrong, never raises for a bad value, and never reads a file (relative paths only
resolve against the folder of listlib.toml).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigIssue

__all__ = ["Reader", "kind_of"]


class Reader:
    """Reads typed values out of a TOML table, recording issues instead of raising."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.issues: list[ConfigIssue] = []
        self.warnings: list[str] = []

    def table(self, data: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, Mapping):
            self.issues.append(ConfigIssue(path, f"expected a table, got {kind_of(value)}"))
            return {}
        return value

    def unknown(self, data: Mapping[str, Any], known: set[str], path: str) -> None:
        for key in data:
            if key not in known:
                where = f"{path}.{key}" if path else key
                what = "table" if isinstance(data[key], Mapping) else "key"
                import difflib  # only for a misspelt key: about 1 ms on every command

                near = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f"did you mean {near[0]}?" if near else f"known: {', '.join(sorted(known))}"
                self.issues.append(ConfigIssue(where, f"unknown {what} ({hint})"))

    def string(
        self,
        data: Mapping[str, Any],
        key: str,
        path: str,
        default: str | None = None,
        check: Callable[[str], str | None] | None = None,
    ) -> str:
        where = f"{path}.{key}"
        if key not in data:
            if default is None:
                self.issues.append(ConfigIssue(where, "is required"))
                return ""
            return default
        value = data[key]
        if not isinstance(value, str):
            self.issues.append(ConfigIssue(where, f"expected a string, got {kind_of(value)}"))
            return default or ""
        if check is not None:
            problem = check(value)
            if problem:
                self.issues.append(ConfigIssue(where, problem))
        return value

    def strings(
        self,
        data: Mapping[str, Any],
        key: str,
        path: str,
        check: Callable[[str], str | None],
    ) -> tuple[str, ...]:
        where = f"{path}.{key}"
        value = data.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            self.issues.append(ConfigIssue(where, f"expected a list of strings, got {kind_of(value)}"))
            return ()
        out = []
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.issues.append(ConfigIssue(f"{where}[{index}]", f"expected a string, got {kind_of(item)}"))
                continue
            problem = check(item)
            if problem:
                self.issues.append(ConfigIssue(f"{where}[{index}]", problem))
                continue
            out.append(item)
        return tuple(out)

    def integer(self, data: Mapping[str, Any], key: str, path: str, low: int, high: int) -> int | None:
        """An integer in [low, high], or None when absent or wrong (wrong is an issue)."""
        if key not in data:
            return None
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.issues.append(ConfigIssue(f"{path}.{key}", f"expected an integer, got {kind_of(value)}"))
            return None
        if not low <= value <= high:
            self.issues.append(ConfigIssue(f"{path}.{key}", f"must be between {low} and {high}, got {value}"))
            return None
        return value

    def number(self, data: Mapping[str, Any], key: str, path: str, default: float) -> float:
        """A positive number of seconds and the like."""
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.issues.append(ConfigIssue(f"{path}.{key}", f"expected a number, got {kind_of(value)}"))
            return default
        if not value > 0:
            self.issues.append(ConfigIssue(f"{path}.{key}", f"must be more than 0, got {value}"))
            return default
        return float(value)

    def boolean(self, data: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            self.issues.append(ConfigIssue(f"{path}.{key}", f"expected true or false, got {kind_of(value)}"))
            return default
        return value

    def path(self, data: Mapping[str, Any], key: str, path: str, default: str | None) -> Path | None:
        text = self.string(data, key, path, default=default if default is not None else "")
        if not text:
            return None
        return (self.root / Path(text).expanduser()).resolve()


def kind_of(value: object) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list"}
    if isinstance(value, Mapping):
        return "a table"
    return names.get(type(value), type(value).__name__)
