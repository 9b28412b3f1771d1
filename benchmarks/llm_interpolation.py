"""How well the LLM study's collective times between simulated sizes follow the simulator:
each collective is run, searched over threadblock counts and NAR granularities as the study
and Fig. 9 run it, at the geometric midpoints of a size grid, and compared with the
interpolations of the grid's neighbours.

    python benchmarks/llm_interpolation.py --cache reproduction/cache \\
        [--collectives allreduce,allgather] [--gpus 8] [--sizes 100kB,1MB,10MB,100MB] \\
        [--midpoint-cache /tmp/midpoints] [--workers 1]

The grid's points are taken from (or run into) ``--cache``; the midpoints from (or run into)
``--midpoint-cache``, which defaults to the same folder. Prints, per collective, pod and
configuration, the simulated midpoint, the log-log and the linear-in-size (alpha-beta
between the two neighbours) interpolations and their errors, then per midpoint the NAP+NAR
speedup over UA simulated and interpolated, and the range of each method's errors.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

from nunasim.experiments.cache import ResultCache
from nunasim.experiments.llm_study import collective_point
from nunasim.experiments.sweep import Point, run_points
from nunasim.io.presets import load_preset
from nunasim.units import format_size, parse_size

CONFIGURATIONS = ("UA", "NAP+NAR")


def searched(collective: str, size: int, gpus: int, configuration: str) -> Point:
    """The study's point (and so Fig. 9's at its sizes): the paper's search, engine auto."""
    return collective_point(collective, size, gpus, configuration, "auto", "auto")


def log_log(s0: int, t0: float, s1: int, t1: float, size: int) -> float:
    w = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
    return math.exp((1 - w) * math.log(t0) + w * math.log(t1))


def linear(s0: int, t0: float, s1: int, t1: float, size: int) -> float:
    return t0 + (t1 - t0) * (size - s0) / (s1 - s0)


METHODS = {"log-log": log_log, "linear": linear}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", required=True)
    parser.add_argument("--midpoint-cache")
    parser.add_argument("--collectives", default="allreduce,allgather")
    parser.add_argument("--gpus", default="8")
    parser.add_argument("--sizes", default="100kB,1MB,10MB,100MB")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    preset = load_preset("nextgen-4die")
    grid_cache = ResultCache(args.cache)
    mid_cache = ResultCache(args.midpoint_cache or args.cache)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    mids = [round(math.sqrt(a * b)) for a, b in itertools.pairwise(sizes)]
    cases = [
        (collective, gpus, configuration)
        for collective in args.collectives.split(",")
        for gpus in (int(g) for g in args.gpus.split(","))
        for configuration in CONFIGURATIONS
    ]
    started = time.perf_counter()
    grid_points = [searched(c, s, g, k) for c, g, k in cases for s in sizes]
    grid_rows = run_points(grid_points, preset, cache=grid_cache, workers=args.workers)
    mid_points = [searched(c, s, g, k) for c, g, k in cases for s in mids]
    mid_rows = run_points(mid_points, preset, cache=mid_cache, workers=args.workers)
    print(f"# {time.perf_counter() - started:.0f} s (cached points cost nothing)")

    def times(points, rows) -> dict:
        return {
            (p.plan, p.gpus, p.configuration.name, p.size): int(t)
            for p, t in zip(points, rows["completion_ps"], strict=True)
        }

    known = times(grid_points, grid_rows)
    simulated = times(mid_points, mid_rows)
    errors: dict[str, list[float]] = {name: [] for name in METHODS}
    estimate: dict[tuple, dict[str, float]] = {}
    print(
        "collective | GPUs | configuration | size | simulated us | "
        + " | ".join(f"{name} us | {name} error" for name in METHODS)
    )
    for collective, gpus, configuration in cases:
        for (s0, s1), mid in zip(itertools.pairwise(sizes), mids, strict=True):
            t0 = known[(collective, gpus, configuration, s0)]
            t1 = known[(collective, gpus, configuration, s1)]
            truth = simulated[(collective, gpus, configuration, mid)]
            cells = []
            for name, method in METHODS.items():
                value = method(s0, t0, s1, t1, mid)
                estimate.setdefault((collective, gpus, configuration, mid), {})[name] = value
                errors[name].append(value / truth - 1)
                cells.append(f"{value / 1e6:.2f} | {100 * (value / truth - 1):+.1f}%")
            print(
                f"{collective} | {gpus} | {configuration} | {format_size(mid)} | "
                f"{truth / 1e6:.2f} | " + " | ".join(cells)
            )
    print(
        "\ncollective | GPUs | size | speedup simulated | "
        + " | ".join(f"speedup {name}" for name in METHODS)
    )
    for collective in args.collectives.split(","):
        for gpus in (int(g) for g in args.gpus.split(",")):
            for mid in mids:
                ua, nap = ((collective, gpus, k, mid) for k in CONFIGURATIONS)
                cells = [f"{estimate[ua][name] / estimate[nap][name]:.3f}" for name in METHODS]
                print(
                    f"{collective} | {gpus} | {format_size(mid)} | "
                    f"{simulated[ua] / simulated[nap]:.3f} | " + " | ".join(cells)
                )
    for name, values in errors.items():
        worst = max(values, key=abs)
        mean_abs = sum(abs(v) for v in values) / len(values)
        print(f"# {name}: mean |error| {100 * mean_abs:.1f}%, worst {100 * worst:+.1f}%")


if __name__ == "__main__":
    main()
