"""Walking a parsed YAML/JSON document with exact key paths for every error.

``Node`` wraps one mapping (or value) of the document together with its key path. Reading
a key marks it as used; ``close()`` then refuses any key nobody read, so a misspelt key is
an error instead of a silently ignored setting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from nunasim.errors import ConfigError, printable, quote

T = TypeVar("T")
_MISSING = object()


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Node:
    def __init__(self, value: Any, path: str, source: str) -> None:
        self.value = value
        self.path = path
        self.source = source
        self._used: set[str] = set()

    def error(self, reason: str, key: str | int | None = None) -> ConfigError:
        where = self.path if key is None else _join(self.path, key)
        return ConfigError(reason, source=self.source, where=where)

    def _mapping(self) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.error(f"expected a mapping of keys to values, got {_kind(self.value)}")
        return self.value

    def has(self, key: str) -> bool:
        return key in self._mapping()

    def child(self, key: str, default: Any = _MISSING) -> Node:
        mapping = self._mapping()
        if key not in mapping:
            if default is _MISSING:
                raise self.error(f"missing required key {quote(key)}")
            return Node(default, _join(self.path, key), self.source)
        self._used.add(key)
        return Node(mapping[key], _join(self.path, key), self.source)

    def get(self, key: str, parse: Callable[[Any], T], default: Any = _MISSING) -> T:
        """``parse`` applied to the value at ``key``, its errors located at the key; the
        ``default`` itself (not parsed) when the key is absent and a default is given."""
        if default is not _MISSING and key not in self._mapping():
            return default
        return self.child(key).parse(parse)

    def parse(self, parse: Callable[[Any], T]) -> T:
        try:
            return parse(self.value)
        except ConfigError as exc:
            raise ConfigError(exc.reason, source=self.source, where=self.path) from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc), source=self.source, where=self.path) from None

    def items(self) -> Iterator[Node]:
        """The elements of a list value, each with its indexed path."""
        if not isinstance(self.value, list):
            raise self.error(f"expected a list, got {_kind(self.value)}")
        for index, element in enumerate(self.value):
            yield Node(element, _join(self.path, index), self.source)

    def entries(self) -> Iterator[tuple[str, Node]]:
        """The (key, value) pairs of a mapping value, all marked as used."""
        for key, value in self._mapping().items():
            self._used.add(key)
            yield str(key), Node(value, _join(self.path, str(key)), self.source)

    def close(self) -> None:
        """Refuse keys of this mapping that no reader asked for."""
        unknown = [k for k in self._mapping() if k not in self._used]
        if unknown:
            raise self.error(f"unknown key {quote(unknown[0])}", unknown[0])


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), f"a {type(value).__name__}"
    )


def integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"expected a whole number, got {quote(value)}")
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"expected true or false, got {quote(value)}")
    return value


def text(value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"expected a string, got {quote(value)}")
    return value


def one_line(value: Any) -> str:
    """A name read from a file, as it will be printed: one line, with control characters
    and lone surrogates escaped (``errors.printable``)."""
    return printable(text(value))


def prose(value: Any) -> str:
    """A description read from a file, as it will be printed: ``one_line`` but for its
    line breaks."""
    return printable(text(value), keep="\n")


def _int_pair(value: Any, what: str) -> tuple[int, int]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or any(isinstance(v, bool) or not isinstance(v, int) for v in value)
    ):
        raise ConfigError(f"expected {what}, got {quote(value)}")
    return value[0], value[1]


def coordinate(value: Any) -> tuple[int, int]:
    return _int_pair(value, "a router coordinate [x, y]")


def int_range(value: Any) -> tuple[int, int]:
    return _int_pair(value, "an inclusive range [low, high]")
