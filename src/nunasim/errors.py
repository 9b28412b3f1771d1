"""Errors that reach the user: every one names where the problem is and what it is."""

from __future__ import annotations

import reprlib
import unicodedata

# A message quotes at most a prefix of an offending value: a value read from a hostile file
# can be megabytes long, or (through YAML aliases) exponentially large when walked.
MAX_REASON_CHARS = 2000
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 6
_SHORT.maxlevel = 3


def quote(value: object) -> str:
    """``repr(value)``, cut short for a message without walking all of a large value."""
    return _SHORT.repr(value)


# Characters a terminal acts on or cannot encode: controls (a newline could forge a
# "nunasim: error:" line, an escape sequence recolour or clear the screen), format characters
# (a right-to-left override reorders what follows), line and paragraph separators, and lone
# surrogates (which no UTF-8 stream, nor matplotlib, can write).
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def printable(text: str, keep: str = "") -> str:
    """``text`` with every unprintable character but those in ``keep`` written as its
    Python escape (``\\x1b``, ``\\n``, ``\\ud800``), so that a name read from a file prints
    as one line of plain text."""
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(
        c
        if c in keep or unicodedata.category(c) not in _UNPRINTABLE
        else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


class NunasimError(Exception):
    """Base of every error nunasim raises on purpose; the CLI turns it into exit status 2."""


class ConfigError(NunasimError, ValueError):
    """Bad input: a file, the element inside it (a key path such as ``socket.hbm.stacks[3]``),
    and the reason.

    ``source`` is a file path or another name for where the input came from; ``where`` is
    the element inside it. Either may be empty when the input has no file (a value built
    in Python) or the problem is the whole input.
    """

    def __init__(self, reason: str, *, source: str = "", where: str = "") -> None:
        if len(reason) > MAX_REASON_CHARS:
            reason = reason[:MAX_REASON_CHARS] + f"... ({len(reason):,} characters in all)"
        self.reason = reason
        self.source = source
        self.where = where
        super().__init__(self._render())

    def _render(self) -> str:
        place = ": ".join(part for part in (self.source, self.where) if part)
        return f"{place}: {self.reason}" if place else self.reason

    def located(self, source: str, prefix: str = "") -> ConfigError:
        """The same error, attributed to ``source`` and nested under the key path ``prefix``."""
        where = self.where
        if prefix:
            where = f"{prefix}.{where}" if where and not where.startswith("[") else prefix + where
        return ConfigError(self.reason, source=source or self.source, where=where)


class NunasimWarning(UserWarning):
    """Something skipped or worked around that the user should know of (the command line
    prints it as one line: ``nunasim: warning: ...``)."""
