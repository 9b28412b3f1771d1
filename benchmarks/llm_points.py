"""What the LLM study's simulated points decide, and what tighter bounds would save.

    python benchmarks/llm_points.py [--model llama-3.1-70b] [--gpus 64]
        [--cache-dir reproduction/cache] [--bound-fraction 0.5 0.7 0.9]

The study (``nunasim llm``) prices every cut, batch and sequence length of a model from
searched collective points, and prices a step only while its lower bound (compute, and
every collective at the ports' full bandwidth) is below the fastest step meeting the
throughput floor so far (``llm_search.contenders``). This script runs the study with the
result cache's rows as its simulations (every point must be in the cache: run the
``llm`` command with that cache first) and reports:

- every point the study asks for, with the CPU seconds its row records (``point_s``);
- the points that price the steps the table reports (each configuration's chosen step,
  and its own choice beside it), and the rest, which only show that other steps are slower;
- with ``--bound-fraction F``: the same study had each point a lower bound of ``F`` times
  its cached time (the port bound where that is higher): how many points it would ask
  for. No such bound exists; the figure says how tight one would have to be to pay.

Nothing is simulated; a run takes seconds.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nunasim.experiments.cache import ResultCache, point_key
from nunasim.experiments.llm_search import Pricer, best, load_study, rates_for
from nunasim.experiments.llm_study import CollectiveTimer, Key, collective_point, llm_table
from nunasim.hardware import Preset
from nunasim.io.models import load_inference_settings, load_model
from nunasim.io.presets import load_preset
from nunasim.llm.operators import Step


class CachedPoints:
    """The cache's rows of the study's points, and which were asked for."""

    def __init__(self, cache: ResultCache, preset: Preset) -> None:
        self.cache, self.preset = cache, preset
        self.study = load_study()
        self.rows: dict[Key, dict[str, Any]] = {}

    def row(self, key: Key) -> dict[str, Any] | None:
        if key not in self.rows:
            study = self.study
            point = collective_point(*key, study.threadblocks, study.engine)
            row = self.cache.get(point_key(point, self.preset))
            if row is None:
                return None
            self.rows[key] = row
        return self.rows[key]

    def simulate(self, asked: set[Key]) -> Callable[[str, int, int, str], int]:
        def completion(kind: str, size: int, gpus: int, configuration: str) -> int:
            key = (kind, size, gpus, configuration)
            row = self.row(key)
            if row is None:
                raise SystemExit(f"{key} is not in the cache: run the llm command with it first")
            asked.add(key)
            return int(row["completion_ps"])

        return completion


@dataclass
class WhatIfTimer(CollectiveTimer):
    """A timer whose lower bound of a grid point is ``fraction`` of its cached time (the
    port bound where that is higher, and where the point is not cached), interpolated in
    size as the timer interpolates times, so that it stays below every time it prices."""

    points: CachedPoints | None = None
    fraction: float = 0.0

    def lower_bound_ps(
        self, kind: str, size: int, gpus: int, configuration: str | None = None
    ) -> float:
        port = super().lower_bound_ps(kind, size, gpus)
        if gpus == 1 or configuration is None or self.points is None:
            return port

        def at(grid_size: int) -> float:
            row = self.points.row((kind, grid_size, gpus, configuration))
            port_there = super(WhatIfTimer, self).lower_bound_ps(kind, grid_size, gpus)
            return port_there if row is None else self.fraction * row["completion_ps"]

        grid = self.sizes
        if size <= grid[0]:
            return max(port, at(grid[0]))
        if size >= grid[-1]:
            return max(port, at(grid[-1]))
        upper = next(i for i, s in enumerate(grid) if s >= size)
        s0, s1 = grid[upper - 1], grid[upper]
        b0, b1 = at(s0), at(s1)
        return max(port, b0 + (b1 - b0) * (size - s0) / (s1 - s0))


def chosen_points(
    points: CachedPoints, model_name: str, gpus: tuple[int, ...], preset: Preset
) -> set[Key]:
    """The points that price the table's steps: each configuration's own choice, and the
    first configuration's choice under every configuration (``execution: shared``)."""
    study, settings = points.study, load_inference_settings()
    model, rates = load_model(model_name), rates_for(preset, settings)
    used: set[Key] = set()
    timer = CollectiveTimer(preset, study.collective_sizes, simulate=points.simulate(set()))
    pricing = CollectiveTimer(preset, study.collective_sizes, simulate=points.simulate(used))
    for n in gpus:
        for phase in study.phases:
            reference = None
            for configuration in study.configurations:
                own, _ = best(model, n, phase, configuration, timer, study, settings, rates)
                reference = reference or own
                pricer = Pricer(model, configuration, pricing, settings, rates)
                for chosen in (own, reference):
                    pricer.candidate(chosen.parallelism, Step(phase, chosen.batch, chosen.seq))
    return used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.1-70b")
    parser.add_argument("--gpus", type=int, nargs="+", default=[64])
    parser.add_argument("--cache-dir", default="reproduction/cache")
    parser.add_argument("--bound-fraction", type=float, nargs="*", default=[0.5, 0.7, 0.9])
    args = parser.parse_args()
    preset = load_preset("nextgen-4die")
    points = CachedPoints(ResultCache(args.cache_dir, shipped=False), preset)
    study, gpus = points.study, tuple(args.gpus)

    def ask(fraction: float) -> tuple[set[Key], Any]:
        asked: set[Key] = set()
        timer = WhatIfTimer(
            preset,
            study.collective_sizes,
            simulate=points.simulate(asked),
            points=points,
            fraction=fraction,
        )
        return asked, llm_table([args.model], gpus, timer=timer)

    def cost(keys: set[Key]) -> float:
        return sum(points.rows[key]["point_s"] for key in keys)

    asked, table = ask(0.0)
    used = chosen_points(points, args.model, gpus, preset)
    assert used <= asked, "a chosen step is priced from a point the study did not ask for"
    print(f"{args.model} on {', '.join(map(str, gpus))} GPUs")
    print(f"points the study asks for: {len(asked)}, {cost(asked):,.0f} s recorded")
    print(f"  pricing the table's steps: {len(used)}, {cost(used):,.0f} s")
    rest = asked - used
    print(f"  only showing other steps slower: {len(rest)}, {cost(rest):,.0f} s")
    for fraction in args.bound_fraction:
        fewer, again = ask(fraction)
        assert again.equals(table), "a valid bound changed the table"
        share = cost(fewer) / max(cost(asked), math.ulp(1.0))
        print(
            f"bound at {fraction:g} of each point's time: {len(fewer)} points, "
            f"{cost(fewer):,.0f} s ({share:.0%} of the cost)"
        )


if __name__ == "__main__":
    main()
