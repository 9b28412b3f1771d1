"""Where and how an experiment's points run: the result cache, the Dask cluster, and what
reports progress; one object the figures, ``tune`` and the command line pass around."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from nunasim.experiments.cache import ResultCache
from nunasim.experiments.executor import Tracker
from nunasim.experiments.sweep import Point, PointTimes, grid_points, run_points
from nunasim.hardware import Preset


@dataclass(frozen=True)
class RunOptions:
    """Where and how a figure's points run (``run_points``)."""

    cache: ResultCache | None = None
    scheduler: str | None = None
    workers: int | None = 1
    tracker: Callable[[str], Tracker] | None = None  # a figure's name -> its tracker
    search: str = "staged"  # the threadblock search of every searched point (``Point.search``)
    # label -> the computing time of its points so far, cached ones included (``PointTimes``)
    times: dict[str, PointTimes] = field(default_factory=dict, compare=False)

    def run(self, label: str, points: Sequence[Point], preset: Preset) -> pd.DataFrame:
        if self.search != "staged":
            points = [replace(point, search=self.search) for point in points]
        rows = run_points(
            points,
            preset,
            cache=self.cache,
            scheduler=self.scheduler,
            workers=self.workers,
            tracker=self.tracker(label) if self.tracker else None,
        )
        self.times[label] = self.times.get(label, PointTimes()) + PointTimes.of(rows)
        return rows

    def sweep(self, label: str, grid: Mapping[str, Any], preset: Preset) -> pd.DataFrame:
        return self.run(label, grid_points(grid), preset)
