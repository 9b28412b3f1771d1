"""A tuning table's size ranges widened to tile every size, as the runtimes' lookups take
them: inclusive ``[low, high]`` ranges, the first from 0, each to one byte below the next
range's start, the last to the largest 64-bit size. This is the tuning table's own rule
(the last range starting at or below a size, below the first the first) written out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

LARGEST = (1 << 64) - 1


def tiled(ranges: Sequence[dict[str, Any]]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(low, high, entry)`` for each of a collective's ranges (ascending ``from_bytes``)."""
    for i, entry in enumerate(ranges):
        low = 0 if i == 0 else int(entry["from_bytes"])
        high = int(ranges[i + 1]["from_bytes"]) - 1 if i + 1 < len(ranges) else LARGEST
        yield low, high, entry
