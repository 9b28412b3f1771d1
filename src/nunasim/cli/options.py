"""Option parsers shared by several commands."""

from __future__ import annotations

from nunasim.errors import ConfigError


def parse_granularity(text: str) -> int | str:
    """``--nar``: a number of NAR domains, or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"--nar takes a number of domains or 'auto', not {text!r}") from None
