"""Reading an MSCCL++ plan's text as JSON, refusing what no plan holds.

Separate from the importer because it is about JSON, not about the plan format: repeated
keys, integers too long to be any count or id, non-finite numbers, the constants ``NaN`` and
``Infinity``, and nesting too deep are all refused here, as ``ConfigError``s naming the
file, before any element of the plan is looked at.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from nunasim.errors import ConfigError, quote

# Longer integers are no count, id or sentinel a plan could hold (MSCCL++ writes 2**64 - 1,
# 20 digits, for "none"), and Python refuses to convert integers of thousands of digits.
MAX_JSON_DIGITS = 20


def load_json(content: str, source: str) -> Any:
    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        repeated = [key for key, n in Counter(key for key, _ in pairs).items() if n > 1]
        if repeated:
            # A repeated key would silently lose one of its values.
            raise ConfigError(f"not valid JSON: key {repeated[0]!r} appears twice", source=source)
        return dict(pairs)

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_JSON_DIGITS:
            raise ConfigError(
                f"not valid here: a number of {len(digits):,} digits ({quote(digits)})",
                source=source,
            )
        return int(digits)

    def real(digits: str) -> float:
        value = float(digits)
        if not math.isfinite(value):
            raise ConfigError(
                f"not valid here: the number {quote(digits)} is not finite", source=source
            )
        return value

    def constant(name: str) -> None:
        raise ConfigError(f"not valid JSON: {name}", source=source)

    try:
        return json.loads(
            content,
            object_pairs_hook=unique_keys,
            parse_int=integer,
            parse_float=real,
            parse_constant=constant,
        )
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise ConfigError(f"not valid JSON: {exc.msg}", source=source, where=where) from None
    except RecursionError:
        raise ConfigError("not valid JSON: nested too deeply", source=source) from None
