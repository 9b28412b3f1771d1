"""The regret of a search against the shipped exhaustive answers, on a figure's points.

    python benchmarks/search_band.py fig9 [--search fast] [--workers 2]
        [--cache-dir band-cache] [--sizes 100kB,1MB] [--out band.csv]
    python benchmarks/search_band.py fig15 ...

Every point of the figure (Fig. 9: its 720 searched points; Fig. 15: the 355 collectives
its LLM study prices) that the search can change runs again with ``--search``, from an
empty cache (``--cache-dir``, so a stopped run resumes), as ``nunasim reproduce`` runs
them: a sweep of ``--workers`` processes. The others are the shipped points by
construction (the fast search differs from the staged one only where the winner's engine
has a screen); ``--all`` runs them too. Each is compared with the shipped row of the same
point under the exhaustive search (``staged``): its regret is its completion over the
shipped one, less one, which is 0 where it found the same run and may be negative where
the exhaustive search's own screen ruled out a run that was slightly faster. The script
prints the band (mean, worst, the share of points with no regret), the worst points, and
what the points cost to compute (``point_s``, the wall seconds each took in its worker,
summed) beside the shipped rows' cost, and writes one row per point with ``--out``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import pandas as pd
from grid_cost import search_cost

from nunasim.engine.base import ENGINES
from nunasim.experiments.cache import ResultCache, point_key
from nunasim.experiments.collective_timer import CollectiveTimer, collective_point
from nunasim.experiments.figures import fig9
from nunasim.experiments.llm_study import llm_table, load_study
from nunasim.experiments.sweep import Point, grid_points, run_points
from nunasim.experiments.tbsearch import SEARCHES
from nunasim.hardware import Preset
from nunasim.io.models import model_names
from nunasim.io.presets import load_preset
from nunasim.units import parse_size

PRESET = "nextgen-4die"  # the preset the shipped points were computed on


def figure_points(figure: str, preset: Preset) -> list[Point]:
    """The searched points of ``figure`` whose shipped rows the band is measured against."""
    if figure == "fig9":
        return grid_points(fig9.grid(False))
    # Fig. 15's collectives: the grid points its study priced, read from the shipped rows.
    study = load_study()
    timer = CollectiveTimer(
        preset,
        study.collective_sizes,
        ResultCache(shipped=True),
        threadblocks=study.threadblocks,
        engine=study.engine,
    )
    llm_table(tuple(model_names()), study.gpus, preset=preset, timer=timer)
    return [
        collective_point(*key, study.threadblocks, study.engine) for key in sorted(timer.simulated)
    ]


def paired_cost(preset: Preset, points: list[Point], search: str) -> None:
    """Each point searched by ``staged`` and by ``search`` in turn, twice, alternating the
    order (the search's memo cleared each time, its plans kept after a first warm-up
    search, as a sweep's worker keeps them): CPU seconds of each, and the answers."""

    for point in points:
        search_cost(preset, point, 0, search)  # builds the plans, as a sweep's worker does
        order = ("staged", search, search, "staged")
        spent = {name: [] for name in ("staged", search)}
        answers = {}
        for name in order:
            best, seconds = search_cost(preset, point, 0, name)
            spent[name].append(seconds)
            answers[name] = best.result.completion_ps
        print(
            f"{point.describe()}: staged {' / '.join(f'{s:.1f}' for s in spent['staged'])} s, "
            f"{search} {' / '.join(f'{s:.1f}' for s in spent[search])} s; "
            f"regret {answers[search] / answers['staged'] - 1:+.3%}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figure", choices=("fig9", "fig15"))
    parser.add_argument("--search", default="fast", choices=SEARCHES)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache-dir", default="band-cache")
    parser.add_argument("--sizes", help="only these sizes, comma-separated (e.g. 100kB,1MB)")
    parser.add_argument("--gpus", help="only these pods, comma-separated (e.g. 32,64)")
    parser.add_argument(
        "--all", action="store_true", help="also run the points the search cannot change"
    )
    parser.add_argument(
        "--paired",
        help="instead: these places in the list of points run (e.g. 0,5,9), each searched "
        "staged and by --search alternately in this process, plans kept, CPU seconds",
    )
    parser.add_argument("--out", help="CSV of every point's regret and cost")
    args = parser.parse_args()
    preset = load_preset(PRESET)
    shipped = ResultCache(shipped=True)
    points = [p for p in figure_points(args.figure, preset) if p.searched]
    if args.sizes:
        sizes = {parse_size(s) for s in args.sizes.split(",")}
        points = [p for p in points if p.size in sizes]
    if args.gpus:
        pods = {int(g) for g in args.gpus.split(",")}
        points = [p for p in points if p.gpus in pods]

    # A point the search does not change is the shipped point: no granularity to rank, or
    # (the fast search) a best count whose engine has no screen, where its granularity
    # round is the staged one (unless --all asks to run them too).
    def same(point: Point) -> bool:
        if replace(point, search=args.search).search == point.search:
            return True
        row = shipped.get(point_key(point, preset))
        engine = ENGINES[row["engine"]] if row else None
        unscreened = engine is not None and not getattr(engine, "screens", False)
        return args.search == "fast" and unscreened and not args.all

    kept = [p for p in points if not same(p)]
    print(
        f"{len(points) - len(kept)} points are the exhaustive search's by construction; "
        f"{len(kept)} run"
    )
    points = kept
    if args.paired:
        paired_cost(preset, [points[int(i)] for i in args.paired.split(",")], args.search)
        return
    stored = [shipped.get(point_key(p, preset)) for p in points]
    missing = sum(row is None for row in stored)
    if missing:
        raise SystemExit(f"{missing} of {len(points)} points have no shipped row")
    searched = [replace(p, search=args.search) for p in points]
    rows = run_points(
        searched, preset, cache=ResultCache(args.cache_dir, shipped=False), workers=args.workers
    )
    table = pd.DataFrame(
        {
            "collective": rows["collective"],
            "size_bytes": rows["size_bytes"],
            "gpus": rows["gpus"],
            "configuration": rows["configuration"],
            "engine": rows["engine"],
            "search": rows["search"],
            "threadblocks": rows["threadblocks"],
            "granularity": rows["granularity"],
            "completion_ps": rows["completion_ps"],
            "shipped_threadblocks": [r["threadblocks"] for r in stored],
            "shipped_granularity": [r["granularity"] for r in stored],
            "shipped_ps": [r["completion_ps"] for r in stored],
            "point_s": rows["point_s"],
            "shipped_point_s": [r.get("point_s") for r in stored],
        }
    )
    table["regret"] = table["completion_ps"] / table["shipped_ps"] - 1
    regret = table["regret"]
    print(
        f"{args.figure}, {args.search} search: {len(table)} points; regret mean "
        f"{regret.mean():+.3%}, worst {regret.max():+.3%}, best {regret.min():+.3%}; "
        f"{(regret == 0).mean():.0%} found the shipped run; "
        f"{(regret > 0.005).sum()} beyond 0.5 %, {(regret > 0.03).sum()} beyond 3 %"
    )
    spent = table["point_s"].sum()
    print(
        f"cost: {spent:,.0f} s of point time ({spent / 3600:.2f} h); the shipped rows "
        f"recorded {table['shipped_point_s'].sum():,.0f} s"
    )
    by_size = table.groupby("size_bytes").agg(
        points=("regret", "size"),
        mean=("regret", "mean"),
        worst=("regret", "max"),
        point_s=("point_s", "sum"),
    )
    print(by_size.to_string())
    print(table.sort_values("regret", ascending=False).head(12).to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
