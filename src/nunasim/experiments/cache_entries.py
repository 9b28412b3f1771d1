"""What a result-cache entry on disk must be before any of it is used.

A cache folder is shared between users and machines (one ships inside the package), so
nothing in it is trusted: an entry is read only if it is a regular file (not a link, a
FIFO or a device) of at most ``MAX_ENTRY_BYTES``, named by a key (64 hex digits), whose
JSON is an object of this format holding a row of plain scalars in which every column
this code reads has its type and range. Anything else is refused with the reason, and the
cache treats it as a miss (``ResultCache.get``), so a bad row is never served.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

# Bumped when an entry's layout changes, so old entries are misses rather than misreads.
ENTRY_FORMAT = 1
ENTRY_SUFFIX = ".json"
# An entry holds one row of a few dozen scalars (about 750 bytes); anything far larger is
# not one, and is not read.
MAX_ENTRY_BYTES = 64 * 1024
_KEY = re.compile(r"[0-9a-f]{64}")

# Columns every stored row has, and what each must be. Times and counts are never
# negative; a completion is a positive whole number of picoseconds.
_POSITIVE_INT = ("completion_ps", "gpus", "size_bytes")
_NON_NEGATIVE_INT = (
    "lower_bound_ps",
    "threadblocks",
    "granularity",
    "bytes_delivered",
    "data_bytes_delivered",
    "stores",
    "messages",
    "events",
)
# A run with too few stores for a percentile stores NaN there (JSON's NaN, as Python
# writes it); no other column may be NaN.
_STATISTICS = ("store_mean_ns", "store_p50_ns", "store_p99_ns", "store_max_ns")
_TEXT = ("preset", "plan", "collective", "configuration", "engine")
# Columns a row may lack (rows stored before they existed), checked when present.
_OPTIONAL_NON_NEGATIVE = ("wall_s", "point_s")


class BadEntry(ValueError):
    """An entry that is not a cache entry this code may use; the message says why."""


def is_entry_name(path: Path) -> bool:
    """Whether ``path`` is named as an entry is: a key and the entry suffix."""
    return path.suffix == ENTRY_SUFFIX and bool(_KEY.fullmatch(path.stem))


def read_entry(path: Path) -> dict[str, Any]:
    """The row ``path`` holds, checked; ``BadEntry`` (its reason) when it is not one, and
    ``FileNotFoundError`` when there is no such file."""
    try:
        status = path.lstat()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BadEntry(f"cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(status.st_mode):
        raise BadEntry("not a regular file")
    if status.st_size > MAX_ENTRY_BYTES:
        raise BadEntry(f"{status.st_size:,} bytes, more than an entry's {MAX_ENTRY_BYTES:,}")
    # Opened without following a link and without blocking, in case the file was swapped
    # for a link or a FIFO since it was looked at; read no more than the limit either way.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        raise BadEntry(f"cannot read: {exc.strerror}") from None
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise BadEntry("not a regular file")
        data = file.read(MAX_ENTRY_BYTES + 1)
    if len(data) > MAX_ENTRY_BYTES:
        raise BadEntry(f"more than an entry's {MAX_ENTRY_BYTES:,} bytes")
    try:
        entry = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadEntry(f"not JSON: {exc}") from None
    if not isinstance(entry, dict) or entry.get("format") != ENTRY_FORMAT:
        raise BadEntry(f"not an entry of format {ENTRY_FORMAT}")
    row = entry.get("row")
    if not isinstance(row, dict):
        raise BadEntry("no row")
    check_row(row)
    return row


def check_row(row: dict[str, Any]) -> None:
    """Refuse a row (``BadEntry``) whose columns are not plain scalars, or whose columns
    this code reads are missing, of the wrong type or out of range."""
    for column, value in row.items():
        if not isinstance(value, str | int | float | bool) and value is not None:
            raise BadEntry(f"column {column!r}: {type(value).__name__}, not a scalar")
        if isinstance(value, float) and math.isinf(value):
            raise BadEntry(f"column {column!r}: {value} is not finite")
        if isinstance(value, float) and math.isnan(value) and column not in _STATISTICS:
            raise BadEntry(f"column {column!r}: NaN")
    for column in _POSITIVE_INT:
        if not _is_int(row.get(column)) or row[column] <= 0:
            raise BadEntry(f"column {column!r}: {row.get(column)!r}, not a positive integer")
    for column in _NON_NEGATIVE_INT:
        if not _is_int(row.get(column)) or row[column] < 0:
            raise BadEntry(f"column {column!r}: {row.get(column)!r}, not an integer >= 0")
    for column in _STATISTICS:
        if not _is_number(row.get(column)) or row[column] < 0:
            raise BadEntry(f"column {column!r}: {row.get(column)!r}, not a number >= 0")
    for column in _OPTIONAL_NON_NEGATIVE:
        if column in row and (not _is_number(row[column]) or row[column] < 0):
            raise BadEntry(f"column {column!r}: {row[column]!r}, not a number >= 0")
    for column in _TEXT:
        if not isinstance(row.get(column), str) or not row[column]:
            raise BadEntry(f"column {column!r}: {row.get(column)!r}, not a name")
    if row["lower_bound_ps"] > row["completion_ps"]:
        raise BadEntry("its lower bound is after its completion")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
