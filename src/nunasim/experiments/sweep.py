"""Sweeps: one row per point of a grid of plans, sizes, pod sizes, configurations,
threadblock counts and seeds.

A sweep is a plain list of points (``grid_points``) and one function per point
(``run_point``): each point is an independent task that carries everything it needs but the
hardware, so the points can run anywhere, in any order; ``sweep`` and ``run_points`` run
them here one after the other or on Dask (``executor.py``), skipping those a result cache
holds (``cache.py``). The experiments (``headline``, ``microbench``, ``figures``) and
``nunasim simulate`` are built on the same pieces, so one point gives one number wherever
it is run from.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nunasim.collectives.builtins import builtin_plan, is_builtin_name
from nunasim.collectives.plan import Plan
from nunasim.engine.result import SimResult
from nunasim.errors import ConfigError
from nunasim.experiments.cache import ResultCache
from nunasim.experiments.executor import Tracker, execute
from nunasim.experiments.tbsearch import BestRun, best_threadblocks, effective_search
from nunasim.hardware import Preset
from nunasim.io.plans import load_plan
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration, Scenario, as_configuration, check_background
from nunasim.units import format_size, parse_size

if TYPE_CHECKING:
    import pandas as pd

    from nunasim.workload import GemmTile

Progress = Callable[[str], None]

# The grid's keys, outermost first: a sweep's rows come in this nesting order.
GRID_KEYS = ("plan", "size", "gpus", "configuration", "threadblocks", "seed", "layout", "search")
_DEFAULTS: dict[str, Any] = {
    "gpus": None,
    "threadblocks": None,
    "seed": 0,
    "layout": "aligned",
    "search": "staged",
}


@dataclass(frozen=True)
class Point:
    """One run of a sweep, checked when built.

    ``plan`` is a built-in (``"allgather"``, ``"allreduce:ring"``; see ``builtin_plan``) or
    a plan file. ``gpus`` and ``threadblocks`` (per GPU) replace a built-in's; ``None``
    keeps the plan's own, and ``threadblocks="auto"`` runs the built-in at its
    best-performing count (and, with granularity ``auto``, its best granularity), searched
    without the background GEMM: the collective's own choice. A plan file fixes its
    threadblocks; with granularity ``auto`` (and domains to use) it runs at its
    best granularity, found by simulating each (``best_threadblocks``), also without the
    GEMM. ``search`` is that search's (``tbsearch.SEARCHES``); where it cannot change the
    answer (no search, one granularity to try, or a plan file's granularity round:
    ``tbsearch.effective_search``) it is ``staged``, so such a point is one point
    whichever is asked.
    """

    plan: str
    size: int
    configuration: Configuration
    gpus: int | None = None
    threadblocks: int | str | None = None
    seed: int = 0
    layout: str = "aligned"
    gemm_tiles: int = 0  # background GEMM tiles per GPU (``Scenario``)
    gemm_tile: GemmTile | None = None
    engine: str = "auto"  # ``Scenario``'s engine: "auto", "packet" or "flow"
    search: str = "staged"  # the threadblock search's (``tbsearch.SEARCHES``)

    def __post_init__(self) -> None:
        check_background(self.gemm_tiles, self.gemm_tile)
        count = self.threadblocks
        if not (count is None or count == "auto" or (isinstance(count, int) and count >= 1)):
            raise ConfigError(f"threadblocks is a count, 'auto' or None, not {count!r}")
        configuration = self.configuration
        granularities = configuration.granularity == "auto" and configuration.uses_domains
        search = effective_search(self.search, granularities, not is_builtin_name(self.plan))
        if not self.searched:
            search = "staged"  # no search: one name for the point whichever is asked
        object.__setattr__(self, "search", search)
        given = self.gpus is not None or count is not None
        if given and not is_builtin_name(self.plan) and Path(self.plan).is_file():
            raise ConfigError("a plan file fixes its own GPUs and threadblocks", source=self.plan)

    @property
    def searched(self) -> bool:
        """Whether the point runs at a search's answer: a built-in's best threadblock count,
        or a plan file's best granularity (``Point``)."""
        if self.threadblocks == "auto":
            return True
        configuration = self.configuration
        return (
            not is_builtin_name(self.plan)
            and configuration.granularity == "auto"
            and configuration.uses_domains
        )

    def base_plan(self) -> Plan:
        """The plan, at the point's threadblock count when it gives one."""
        if not is_builtin_name(self.plan):
            return load_plan(self.plan)
        count = self.threadblocks if isinstance(self.threadblocks, int) else None
        return builtin_plan(self.plan, gpus=self.gpus, tbs=count)

    def describe(self) -> str:
        """A short name for progress reports."""
        gpus = "" if self.gpus is None else f", {self.gpus} GPUs"
        return f"{self.plan} {format_size(self.size)}{gpus}, {self.configuration}"


def grid_points(grid: Mapping[str, Any]) -> list[Point]:
    """The points of ``grid``, a mapping of ``GRID_KEYS`` (``collective`` is another name for
    ``plan``) to a list of values or one value; ``plan``, ``size`` and ``configuration`` are
    required. Every point is checked, and its plan built once, before any runs."""
    given = dict(grid)
    if "collective" in given:
        if "plan" in given:
            raise ConfigError("give plans as 'plan' or as 'collective', not both")
        given["plan"] = given.pop("collective")
    unknown = sorted(set(given) - set(GRID_KEYS))
    if unknown:
        known = ", ".join(("collective", *GRID_KEYS))
        raise ConfigError(f"unknown sweep key {unknown[0]!r} (known: {known})")
    missing = [key for key in GRID_KEYS if key not in given and key not in _DEFAULTS]
    if missing:
        raise ConfigError(f"a sweep needs {', '.join(repr(key) for key in missing)}")
    axes = {key: _values(given.get(key, _DEFAULTS.get(key))) for key in GRID_KEYS}
    empty = [key for key, values in axes.items() if not values]
    if empty:
        raise ConfigError(f"the sweep's {empty[0]!r} has no values")
    axes["plan"] = [str(plan) for plan in axes["plan"]]  # a plan file may be a Path
    axes["size"] = [parse_size(size) for size in axes["size"]]
    axes["configuration"] = [as_configuration(c) for c in axes["configuration"]]
    points = [Point(**dict(zip(axes, combo, strict=True))) for combo in product(*axes.values())]
    for point in {(p.plan, p.gpus, p.threadblocks): p for p in points}.values():
        point.base_plan()  # a bad plan is refused before anything runs
    return points


def _values(value: Any) -> list[Any]:
    if isinstance(value, str | Configuration) or not isinstance(value, Iterable):
        return [value]
    return list(value)


def point_scenario(point: Point, preset: Preset, progress: Progress | None = None) -> Scenario:
    """The scenario ``point`` runs: where it is ``searched``, the plan (and, with
    granularity ``auto``, the granularity) of the fastest run of the search."""
    plan, granularity = point.base_plan(), point.configuration.granularity
    if point.searched:
        best = _search(point, preset, progress)
        plan = best.plan
        granularity = best.granularity if granularity == "auto" else granularity
    return Scenario(
        preset,
        plan,
        point.size,
        point.configuration,
        granularity,
        point.seed,
        layout=point.layout,
        gemm_tiles=point.gemm_tiles,
        gemm_tile=point.gemm_tile,
        engine=point.engine,
    )


def run_point(
    point: Point, preset: Preset, progress: Progress | None = None, threads: int = 0
) -> SimResult:
    """Run ``point`` on ``preset`` (its pod grown to the plan's GPUs). ``threads``: runs of
    a threadblock search that may go on at once beside its preparation (``best_threadblocks``;
    0, as in a sweep whose points already fill the cores: one at a time)."""
    if point.searched and not point.gemm_tiles:
        return _search(point, preset, progress, threads).result  # the search ran it already
    if progress:
        progress(point.describe())
    return point_scenario(point, preset, progress).run()


def point_search(
    point: Point, preset: Preset, progress: Progress | None = None, threads: int = 0
) -> BestRun | None:
    """The search a ``searched`` point runs at (the same run ``run_point`` reports: searches
    are cached per process), or None for a point that is not searched."""
    return _search(point, preset, progress, threads) if point.searched else None


def _search(point: Point, preset: Preset, progress: Progress | None, threads: int = 0) -> BestRun:
    gpus = point.base_plan().ngpus
    return best_threadblocks(
        preset.fit(gpus).pod,
        point.plan,
        point.size,
        point.configuration,
        seed=point.seed,
        layout=point.layout,
        progress=progress,
        gpus=point.gpus,
        engine=point.engine,
        threads=threads,
        search=point.search,
    )


# Columns of a row that time the machine, not the model: they differ between runs.
TIMING_COLUMNS = ("wall_s", "point_s")


@dataclass(frozen=True)
class PointTimes:
    """What a sweep's points took to compute, wherever and whenever they ran (a point
    read from the cache brings the time it took when it ran): the seconds summed over the
    ``timed`` points, of ``points``; rows stored before points were timed have none."""

    points: int = 0
    timed: int = 0
    seconds: float = 0.0

    @classmethod
    def of(cls, rows: pd.DataFrame) -> PointTimes:
        if "point_s" not in rows:
            return cls(len(rows), 0, 0.0)
        known = rows["point_s"].dropna()
        return cls(len(rows), len(known), float(known.sum()))

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> PointTimes:
        """One point's: its row may have no ``point_s``, or a missing one (NaN) in a table
        of rows some of which were stored before points were timed."""
        seconds = row.get("point_s")
        if seconds is None or seconds != seconds:
            return cls(1, 0, 0.0)
        return cls(1, 1, float(seconds))

    def __add__(self, other: PointTimes) -> PointTimes:
        return PointTimes(
            self.points + other.points, self.timed + other.timed, self.seconds + other.seconds
        )


def _point_row(point: Point, preset: Preset, progress: Progress | None = None) -> dict[str, Any]:
    """One point's row (a task for any runner): the preset's name, ``SimResult.to_row``, and
    ``point_s``, the wall seconds the whole point took, its threadblock search included
    (``wall_s`` is its final run's), so that a grid run in parts has a measured total."""
    started = time.perf_counter()
    row = run_point(point, preset, progress).to_row()
    return {
        "preset": preset.name,
        **row,
        "search": search_name(point),
        "point_s": time.perf_counter() - started,
    }


def search_name(point: Point) -> str | None:
    """The search that produced ``point``'s row (``tbsearch.SEARCHES``), None where it
    runs no search (a stored row that predates the column gets it from ``ResultCache.find``)."""
    return point.search if point.searched else None


def run_points(
    points: Sequence[Point],
    preset: Preset | str = "nextgen-4die",
    progress: Progress | None = None,
    *,
    cache: ResultCache | None = None,
    scheduler: str | None = None,
    workers: int | None = 1,
    tracker: Tracker | None = None,
) -> pd.DataFrame:
    """Run ``points`` on ``preset``: one row per point, in their order. Points ``cache``
    holds are not run again, and every point run is stored in it as it finishes. With
    ``workers`` 1 and no ``scheduler`` the points run here one after the other; otherwise
    as Dask tasks, on a local cluster of ``workers`` processes (None: one per core) or on
    the cluster whose scheduler is at ``scheduler`` (``tcp://HOST:PORT``)."""
    hardware = preset if isinstance(preset, Preset) else load_preset(preset)
    rows = execute(
        points,
        hardware,
        _point_row,
        cache=cache,
        scheduler=scheduler,
        workers=workers,
        tracker=tracker,
        progress=progress,
    )
    import pandas as pd  # slow to load: ``nunasim simulate`` runs one point and needs none

    return pd.DataFrame(rows)


def sweep(
    grid: Mapping[str, Any],
    preset: Preset | str = "nextgen-4die",
    progress: Progress | None = None,
    *,
    cache: ResultCache | None = None,
    scheduler: str | None = None,
    workers: int | None = 1,
    tracker: Tracker | None = None,
) -> pd.DataFrame:
    """Run every point of ``grid`` (see ``grid_points``) on ``preset`` (a Preset, a shipped
    preset's name or a preset file): one row per point (``SimResult.to_row``), in the
    grid's nesting order, with the preset's name. ``cache``, ``scheduler``, ``workers``
    and ``tracker`` are ``run_points``'s."""
    return run_points(
        grid_points(grid),
        preset,
        progress,
        cache=cache,
        scheduler=scheduler,
        workers=workers,
        tracker=tracker,
    )
