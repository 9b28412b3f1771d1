"""Array operations numpy offers only slowly, done exactly as numpy does them."""

from __future__ import annotations

import numpy as np


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` for a 2-D integer array: the distinct
    rows in lexicographic order and each row's index among them, by a numeric sort of the
    columns rather than numpy's sort of the rows as opaque records (16 k rows of 16 stacks:
    12 ms against 51)."""
    order = np.lexsort(rows.T[::-1])
    ordered = rows[order]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(rows), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse
