"""Collective times for the LLM study (paper section 6.7): the one place the study meets
the simulator.

Each distinct (collective, size, GPUs, configuration) runs once through the sweep API and is
remembered (in memory, and in the sweeps' result cache when one is given); between the
simulated grid's sizes the time is a straight line in size (``CollectiveTimer``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from nunasim.errors import ConfigError
from nunasim.experiments.cache import ResultCache
from nunasim.experiments.sweep import Point, PointTimes, run_points
from nunasim.hardware import Preset
from nunasim.io.presets import load_preset
from nunasim.llm.collectives import wire_factor
from nunasim.scenario import Configuration
from nunasim.units import PS_PER_S

Progress = Callable[[str], None]

# The simulator's built-in collective for each kind a step issues. A point-to-point message
# of M bytes is a 2-GPU All-to-All of 2M: each GPU keeps half its buffer and sends M.
_PLANS = {
    "allreduce": "allreduce",
    "allgather": "allgather",
    "reducescatter": "reducescatter",
    "alltoall": "alltoall",
}

# The ``threadblocks`` value that keeps each built-in plan's own count (one threadblock per
# peer and chunk), where "auto" runs the paper's search.
PLAN_COUNT = "plan"


def collective_point(
    collective: str,
    size: int,
    gpus: int,
    configuration: str,
    threadblocks: int | str | None = None,
    engine: str | None = None,
    search: str = "staged",
) -> Point:
    """The sweep point that prices one ``collective`` of ``size`` bytes on ``gpus`` GPUs
    (``threadblocks``: ``"plan"`` or None, the plan's own count; a count; or ``"auto"``,
    the paper's search, by ``search``: ``tbsearch.SEARCHES``).
    ``engine`` is handed to the point when the sweep API has an engine field, and is
    otherwise the packet engine every point runs on."""
    if collective == "sendrecv":
        collective, size, gpus = "alltoall", 2 * size, 2
    if collective not in _PLANS:
        raise ConfigError(f"no simulated collective for {collective!r}")
    extra: dict[str, Any] = {}
    if engine is not None and "engine" in {f.name for f in fields(Point)}:
        extra["engine"] = engine
    return Point(
        _PLANS[collective],
        max(size, 1),
        Configuration.parse(configuration),
        gpus=gpus,
        threadblocks=None if threadblocks == PLAN_COUNT else threadblocks,
        search=search,
        **extra,
    )


def collective_time(
    collective: str,
    size: int,
    gpus: int,
    configuration: str,
    preset: Preset | str = "nextgen-4die",
    threadblocks: int | str | None = None,
    cache: ResultCache | None = None,
) -> int:
    """Completion time in picoseconds of one ``collective`` (``collective_point``), run
    through the sweep API and its result cache when given: the one place the study meets
    the simulator."""
    hardware = preset if isinstance(preset, Preset) else load_preset(preset)
    point = collective_point(collective, size, gpus, configuration, threadblocks)
    rows = run_points([point], hardware, cache=cache, workers=1)
    return int(rows["completion_ps"].iloc[0])


Key = tuple[str, int, int, str]  # (collective, size, GPUs, configuration): one grid point


@dataclass
class CollectiveTimer:
    """Collective times at any size from simulations on a grid of ``sizes``: memoised here,
    and kept across runs in the sweeps' result cache (``cache``; None: nothing kept), so
    ``nunasim cache info|clear`` covers them."""

    preset: Preset
    sizes: tuple[int, ...]
    cache: ResultCache | None = None
    progress: Progress | None = None
    simulate: Callable[[str, int, int, str], int] | None = None
    threadblocks: int | str | None = None
    engine: str | None = None
    search: str = "staged"  # the threadblock search of its points (``tbsearch.SEARCHES``)
    simulated: dict[Key, int] = field(default_factory=dict)
    runs: int = 0
    extrapolated: int = 0
    times: PointTimes = field(default_factory=PointTimes)  # cached points included
    # the search that produced each point it knows (its row's), counted: a point asked of
    # the fast search is answered by the exhaustive search's row where one is stored
    searches: dict[str, int] = field(default_factory=dict)

    def point(self, kind: str, size: int, gpus: int, configuration: str) -> int:
        """The simulated time of one grid point (run on first use, unless cached)."""
        key = (kind, size, gpus, configuration)
        if key not in self.simulated:
            if self.simulate is not None:
                self.simulated[key] = self.simulate(*key)
            else:
                self.learn(key, self._run(*key))
        return self.simulated[key]

    def _run(self, kind: str, size: int, gpus: int, configuration: str) -> dict[str, Any]:
        point = collective_point(
            kind, size, gpus, configuration, self.threadblocks, self.engine, self.search
        )
        cached = self.cache is not None and self.cache.find(point, self.preset)
        if not cached:
            self.runs += 1
            if self.progress:
                self.progress(f"simulating {kind} {size} B on {gpus} GPUs, {configuration}")
        # One point at a time, here: the search asks for the points it needs as it goes,
        # and each finished one is in the cache at once, so a stopped study resumes.
        return run_points([point], self.preset, cache=self.cache, workers=1).to_dict("records")[0]

    def planner(self, missing: dict[Key, Point]) -> CollectiveTimer:
        """A timer for a search that finds which points are needed: it prices from what
        this timer knows (its points, then the cache, which it adds to this timer) and puts
        every other grid point it is asked for in ``missing``, pricing it meanwhile at its
        lower bound. No simulation is faster than that bound, so the search it prices
        prices no candidate the true search would not, and asks for no point the true
        search would not need (``llm_table``)."""

        def known(kind: str, size: int, gpus: int, configuration: str) -> int:
            key = (kind, size, gpus, configuration)
            if key not in self.simulated:
                point = collective_point(*key, self.threadblocks, self.engine, self.search)
                row = self.cache.find(point, self.preset) if self.cache else None
                if row is None:
                    missing[key] = point
                    return math.ceil(self.lower_bound_ps(kind, size, gpus, configuration))
                self.learn(key, row)
            return self.simulated[key]

        return CollectiveTimer(self.preset, self.sizes, simulate=known)

    def learn(self, key: Key, row: dict[str, Any]) -> None:
        """Take a simulated point's ``row`` (a sweep's) as the time of grid point ``key``."""
        self.simulated[key] = int(row["completion_ps"])
        self.times += PointTimes.of_row(row)
        search = row.get("search")
        name = search if isinstance(search, str) else "none"
        self.searches[name] = self.searches.get(name, 0) + 1

    def time(self, kind: str, size: int, gpus: int, configuration: str) -> int:
        """Interpolated time: a straight line in size between the two neighbouring grid
        sizes (the alpha-beta model between them), the smallest's below the grid, and above
        it the largest's plus the extra bytes at ``slope_ps_per_byte``."""
        if gpus == 1:
            return 0
        grid = self.sizes
        if size <= grid[0]:
            return self.point(kind, grid[0], gpus, configuration)
        if size >= grid[-1]:
            hi = self.point(kind, grid[-1], gpus, configuration)
            if size == grid[-1]:
                return hi
            self.extrapolated += 1
            slope = self.slope_ps_per_byte(kind, gpus, configuration)
            return round(hi + slope * (size - grid[-1]))
        upper = next(i for i, s in enumerate(grid) if s >= size)
        s0, s1 = grid[upper - 1], grid[upper]
        t0 = self.point(kind, s0, gpus, configuration)
        t1 = self.point(kind, s1, gpus, configuration)
        # Measured against searched runs at the midpoints of 10x steps, a line in size is
        # 2.5% off on average and a line in log-log space 6.7% (docs/llm.md).
        return round(t0 + (t1 - t0) * (size - s0) / (s1 - s0))

    def slope_ps_per_byte(self, kind: str, gpus: int, configuration: str) -> float:
        """The alpha-beta model's beta beyond the grid: the least-squares slope of the
        simulated times over the grid's top sizes (within 16x of the largest), never less
        than the ideal, the bytes each GPU sends over all its ports at full bandwidth."""
        ideal = self.ideal_ps_per_byte(kind, gpus)
        top = [s for s in self.sizes if s * 16 >= self.sizes[-1]]
        if len(top) < 2:
            return ideal
        times = [self.point(kind, s, gpus, configuration) for s in top]
        fitted = float(np.polyfit(np.array(top, float), np.array(times, float), 1)[0])
        return max(fitted, ideal)

    def ideal_ps_per_byte(self, kind: str, gpus: int) -> float:
        """Picoseconds per byte of a collective's size at the ports' full bandwidth: its
        wire bytes per GPU over every port of the GPU."""
        return wire_factor(kind, gpus) * PS_PER_S / self.injection_bandwidth

    def lower_bound_ps(
        self, kind: str, size: int, gpus: int, configuration: str | None = None
    ) -> float:
        """No simulated run of the collective is faster: each GPU must put its wire bytes
        through its ports (and an extrapolated time is never below it either). The bound
        holds under every ``configuration``; a tighter one may depend on it."""
        return 0.0 if gpus == 1 else self.ideal_ps_per_byte(kind, gpus) * size

    def covers(self, size: int, gpus: int) -> bool:
        """Whether the time of a collective of ``size`` bytes on ``gpus`` GPUs comes from
        the simulated grid (interpolated, or the smallest size's), not from the alpha-beta
        extrapolation beyond it."""
        return gpus == 1 or size <= self.sizes[-1]

    @property
    def injection_bandwidth(self) -> float:
        """Bytes per second one GPU can send: all its ports, one direction."""
        return len(self.preset.socket.ports) * self.preset.pod.port_bandwidth
