"""A result cache for sweeps: one file per finished point, keyed by what decides its result.

A point's key is a SHA-256 of its content: the preset's name and every parameter of its
pod, the plan (a built-in's name with the point's GPUs and threadblocks, or a plan file's
bytes), and every other field of the point (size, configuration and granularity, seed,
layout, background GEMM, the search, and any field a later version adds, but for a field
added later at the value every earlier point had: ``KEY_NEUTRAL``), with the package version and
the engines' shared model revision (``nunasim.engine.MODEL_REVISION``), the own
``revision`` of every engine the point may run on (``experiments.engines``; a revision of
0, the shared model's, is left out, as keys had it before engines had their own), and, for
a point whose engine ``auto`` chooses, every engine's ``auto`` threshold that differs from
``AUTO_LIMITS_KEYED``.
Changing any of them misses the cache; nothing is ever looked up by a name alone.

Each entry is written whole or not at all (a temporary file moved into place), so a sweep
killed at any moment leaves only finished points behind, and a rerun finds them. Rows are
stored as JSON of plain Python values, which round-trips every int, float (``repr`` is
exact), string, bool and None, so a table read from the cache equals the one first built.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nunasim import __version__
from nunasim.collectives.builtins import is_builtin_name
from nunasim.engine import MODEL_REVISION
from nunasim.engine.base import AUTO, ENGINES
from nunasim.engine.flow.backend import ANY_SIZE
from nunasim.errors import ConfigError, NunasimWarning
from nunasim.experiments.cache_entries import (
    ENTRY_FORMAT,
    ENTRY_SUFFIX,
    BadEntry,
    is_entry_name,
    read_entry,
)
from nunasim.experiments.engines import point_engines, point_plan
from nunasim.io.files import check_output_folder, write_atomically

if TYPE_CHECKING:
    from nunasim.hardware import Preset

CACHE_ENV = "NUNASIM_CACHE"
# The package's own folder of shipped points, beside its subpackages.
SHIPPED_FOLDER = "results"
# Fields a point gained after entries were stored, with the value that means what every
# point meant before: at that value a field is left out of the key, so those entries stay
# hits; at any other it is part of it.
KEY_NEUTRAL: dict[str, object] = {"search": "staged"}
# The engines' ``auto`` thresholds when points began to be keyed by them: a point that
# lets ``auto`` choose its engine keys on every threshold that differs from these, so a
# change of one misses the points it could have moved to another engine.
AUTO_LIMITS_KEYED: dict[str, int | None] = {
    "packet": 4_000_000,
    "flow": ANY_SIZE,
    "analytic": None,
}


def default_cache_dir() -> Path:
    """``$NUNASIM_CACHE``, else ``$XDG_CACHE_HOME/nunasim``, else ``~/.cache/nunasim``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "nunasim"


def plain(value: Any) -> Any:
    """``value`` as a plain Python scalar (a numpy scalar's ``item``), as JSON stores it."""
    return value.item() if isinstance(value, np.generic) else value


def plain_row(row: dict[str, Any]) -> dict[str, Any]:
    return {str(key): plain(value) for key, value in row.items()}


def point_key(point: Any, preset: Preset) -> str:
    """The hex digest naming ``point`` run on ``preset``."""
    content: dict[str, str] = {
        "format": str(ENTRY_FORMAT),
        "nunasim": __version__,
        "model": str(MODEL_REVISION),
        "preset": preset.name,
        "pod": repr(preset.pod),
    }
    for engine in point_engines(point, preset):
        if engine.revision:
            content[engine.name] = str(engine.revision)
    if point.engine == AUTO:  # the thresholds ``auto`` chooses the engine by
        for name in ENGINES:
            limit = ENGINES[name].auto_messages
            if limit != AUTO_LIMITS_KEYED.get(name):
                content[f"{name}_auto_messages"] = repr(limit)
    for field in fields(point):
        value = getattr(point, field.name)
        if field.name in KEY_NEUTRAL and value == KEY_NEUTRAL[field.name]:
            continue  # the result every entry stored before the field existed
        content[field.name] = repr(value)
    if not is_builtin_name(point.plan):
        content["plan_bytes"] = _file_digest(Path(point.plan))
        if point.searched:  # once the estimate's granularity, now the simulated best
            content["granularity_search"] = "simulated"
    if any(protocol.data_polled for protocol in point_plan(point).protocols):
        # Placement charges a CU a step's wire lines (twice LL's data lines) since then.
        content["cu_demand"] = "wire lines"
    text = json.dumps(content, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def answering_points(point: Any) -> list[Any]:
    """``point``, then the points whose stored rows answer it too: a point asked of the fast
    search (``tbsearch.SEARCHES``) takes the exhaustive (``staged``) search's row when one
    is stored, the answer the fast search approximates within its measured band."""
    if getattr(point, "search", "staged") == "fast":
        return [point, replace(point, search="staged")]
    return [point]


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=str(path)) from None


@dataclass(frozen=True)
class CacheInfo:
    folder: Path
    points: int
    bytes: int
    shipped: Path | None = None  # the read-only layer under the folder, if any
    shipped_points: int = 0


def shipped_folder() -> Path | None:
    """The finished points that ship inside the package (``nunasim/results``: the paper's
    grids, run with this version), or None when this installation has none."""
    folder = Path(__file__).resolve().parent.parent / SHIPPED_FOLDER
    return folder if folder.is_dir() else None


def _entries(folder: Path | None) -> list[Path]:
    if folder is None or not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if is_entry_name(path))


def _read(path: Path) -> dict[str, Any] | None:
    """The row of the entry at ``path``, or None: no such file, or one that is not an
    entry this code may use, which is skipped with a warning naming it."""
    try:
        return read_entry(path)
    except FileNotFoundError:
        return None
    except BadEntry as exc:
        warnings.warn(f"{path}: skipped, {exc}", CacheWarning, stacklevel=3)
        return None


class CacheWarning(NunasimWarning):
    """A cache entry that was skipped because it is not one this code may use."""


class ResultCache:
    """Finished points' rows in ``folder`` (created when the first is stored), over the
    points the package ships (``shipped``, read-only: looked up after ``folder``, never
    written or cleared). Every entry is checked before use (``cache_entries``)."""

    def __init__(self, folder: str | Path | None = None, shipped: bool = True) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_dir()
        self.shipped = shipped_folder() if shipped else None

    def check(self) -> None:
        """Refuse, before any run, a folder the cache could not write into."""
        check_output_folder(self.folder)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}{ENTRY_SUFFIX}"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored row of ``key`` (this folder's, else a shipped one), or None; an
        entry that is not one is a miss (rewritten when the point runs again)."""
        row = _read(self._path(key))
        if row is None and self.shipped is not None:
            row = _read(self.shipped / f"{key}{ENTRY_SUFFIX}")
        return row

    def find(self, point: Any, preset: Preset) -> dict[str, Any] | None:
        """The stored row that answers ``point`` (``answering_points``): its own, else, for
        a point of the fast search, the exhaustive search's, whose answer is never slower.
        The row names the search that produced it (a row stored before rows did is the
        search its key was computed for)."""
        for candidate in answering_points(point):
            row = self.get(point_key(candidate, preset))
            if row is not None:
                if "search" not in row:
                    row = {**row, "search": candidate.search if candidate.searched else None}
                return row
        return None

    def put(self, key: str, row: dict[str, Any], what: str = "") -> None:
        """Store ``row`` under ``key``, whole or not at all."""
        self.folder.mkdir(parents=True, exist_ok=True)
        entry = {"format": ENTRY_FORMAT, "point": what, "row": plain_row(row)}
        text = json.dumps(entry, indent=1)
        write_atomically(self._path(key), lambda tmp: tmp.write_text(text, encoding="utf-8"))

    def entries(self) -> list[Path]:
        """The files of this folder named as entries are (the shipped ones aside)."""
        return _entries(self.folder)

    def info(self) -> CacheInfo:
        entries = self.entries()
        size = sum(path.lstat().st_size for path in entries)
        shipped = len(_entries(self.shipped)) if self.shipped != self.folder.resolve() else 0
        return CacheInfo(self.folder, len(entries), size, self.shipped, shipped)

    def computing_time(self) -> tuple[int, float]:
        """How many of this folder's entries say what their point took to compute (a sweep
        row's ``point_s``; rows stored before points were timed do not), and those seconds
        summed."""
        timed, seconds = 0, 0.0
        for path in self.entries():
            row = _read(path)
            spent = row.get("point_s") if row is not None else None
            if isinstance(spent, int | float):
                timed, seconds = timed + 1, seconds + float(spent)
        return timed, seconds

    def clear(self) -> tuple[int, list[Path]]:
        """Delete every entry of this folder that reads as one (and any temporary file a
        killed write of one left); the number deleted, and the files named as entries
        that were kept because they are not (left for their owner to look at). The
        shipped points are never touched."""
        if self.shipped is not None and self.folder.resolve() == self.shipped:
            raise ConfigError("the points the package ships are read-only", source=str(self.folder))
        deleted, kept = 0, []
        for path in self.entries():
            if _read(path) is None:
                kept.append(path)
                continue
            path.unlink(missing_ok=True)
            deleted += 1
        if self.folder.is_dir():
            for path in self.folder.iterdir():
                if _is_temporary(path):
                    path.unlink(missing_ok=True)
        return deleted, kept


def _is_temporary(path: Path) -> bool:
    # What ``write_atomically`` names an entry's temporary file: ".<key>.json.<random>.json".
    if not path.name.startswith(".") or path.suffix != ENTRY_SUFFIX or path.is_symlink():
        return False
    return is_entry_name(Path(path.name[1:].split(".", 1)[0] + ENTRY_SUFFIX))
