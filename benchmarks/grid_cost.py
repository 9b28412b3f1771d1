"""What Fig. 9's grid costs to compute, estimated from a fixed sample of its points.

    python benchmarks/grid_cost.py [--points 0,3,11] [--threads 0] [--warm] [--out grid_cost.csv]

Fig. 9's 720 searched points cost 43,463 s of one core when they were computed (the
``point_s`` of the shipped rows). The sample is fixed: the 12 points at the 30th, 90th,
..., 690th place when the grid is ordered by that cost, so each stands for 60 points and
60 times the sample's cost estimates the grid's (40,680 s against the 43,463 s measured:
the heaviest points are under-represented). Each point's search runs here from nothing
(no result cache, the search's own memo cleared) on one thread; the script prints, per
point, the CPU seconds of the whole search, of preparing candidates (placement, lowering,
lower bound) and of running them by verdict (``tried`` to the end, ``cut`` at the
deadline, ``screened`` by a cheaper run: the flow engine's wider waves), its candidate
counts, and its answer beside the shipped one, then the grid's estimate, and what the
winners alone cost (prepared and run to their end): the floor of any search that returns the
exhaustive search's answer, which it must run, without knowing it beforehand. ``--out``
writes the per-candidate costs as CSV.

Searched cold, every point pays for building and proving its plans and working out their
access sets and placement facts, which a sweep pays far less often: that work is kept per
plan object (``builtin_plan`` hands back the same plan for the same recipe, and keeps
every count of a collective on 2-64 GPUs), so a sweep worker pays it once per (collective,
GPUs) it meets, not once per point. With ``--warm`` each point is then searched again with
its plans kept (only the search's memo cleared, as for the next point of a sweep) and the
script prints a second estimate: 60 times the sample's warm cost, plus the plans' cost
(the sample's mean of cold minus warm) once for each of Fig. 9's (collective, GPUs) pairs
per sweep worker (``--workers``, 2 on this machine).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import pandas as pd

from nunasim.experiments import tbsearch
from nunasim.experiments.cache import ResultCache, point_key
from nunasim.experiments.sweep import Point
from nunasim.hardware import Preset
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration

# (collective, size bytes, GPUs, configuration, shipped point_s): the grid's points at
# places 30, 90, ..., 690 by shipped cost.
SAMPLE = (
    ("allgather", 100_000, 8, "NAP*", 0.5),
    ("allreduce", 100_000, 8, "NAP*+NAR", 1.3),
    ("allgather", 100_000, 16, "NUMA+NAR", 2.7),
    ("allreduce", 1_000_000, 8, "NAP+NAR", 5.2),
    ("allgather", 1_000_000, 32, "NUMA", 8.2),
    ("allgather", 100_000, 64, "UA", 13.2),
    ("alltoall", 1_000_000_000, 8, "NUMA+NAR", 21.1),
    ("allgather", 100_000_000, 2, "NAP*+NAR", 34.8),
    ("alltoall", 100_000_000, 32, "UA", 56.0),
    ("alltoall", 100_000_000, 2, "NAP*+NAR", 85.3),
    ("alltoall", 10_000_000, 16, "NAP*", 137.8),
    ("alltoall", 10_000_000, 64, "NAP", 311.9),
)
POINTS_PER_SAMPLE = 60
GRID_SHIPPED_S = 43_463
# Fig. 9's (collective, GPUs) pairs: All-Gather, All-Reduce and All-to-All on 2-64 GPUs.
GRID_PLAN_FAMILIES = 3 * 6


def search_cost(
    preset: Preset, point: Point, threads: int, search: str = "staged"
) -> tuple[tbsearch.BestRun, float]:
    """One search of ``point`` with the search's memo cleared: its result and CPU seconds."""
    tbsearch._CACHE.clear()
    started = time.process_time()
    best = tbsearch.best_threadblocks(
        preset.fit(point.gpus).pod,
        point.plan,
        point.size,
        point.configuration,
        gpus=point.gpus,
        threads=threads,
        search=search,
    )
    return best, time.process_time() - started


def regret_text(found_ps: int, shipped_ps: int | None) -> str:
    """The answer's completion over the shipped exhaustive one, less one, as a percentage."""
    return "-" if not shipped_ps else f"{100 * (found_ps / shipped_ps - 1):+.2f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", help="indices into the sample (default: all)")
    parser.add_argument("--threads", type=int, default=0, help="runs in flight (0: serial)")
    parser.add_argument("--out", help="CSV of every candidate's cost")
    parser.add_argument(
        "--warm", action="store_true", help="search each point again with its plans kept"
    )
    parser.add_argument("--workers", type=int, default=2, help="a sweep's workers (--warm)")
    parser.add_argument(
        "--search", default="staged", choices=tbsearch.SEARCHES, help="the search to cost"
    )
    args = parser.parse_args()
    preset = load_preset("nextgen-4die")
    shipped = ResultCache(shipped=True)
    # Compile and load the kernels first, so that the first point does not pay for them.
    tbsearch.best_threadblocks(preset.fit(2).pod, "allgather", 4096, "NAP+NAR", gpus=2)
    chosen = range(len(SAMPLE)) if not args.points else list(map(int, args.points.split(",")))
    candidates, total_before, total_after, total_warm = [], 0.0, 0.0, 0.0
    total_winner = 0.0  # what each search would cost had it known its answer
    warm_column = " warm CPU s |" if args.warm else ""
    print(
        f"| point | shipped s | CPU s |{warm_column} prepare | tried | cut | screened "
        "| candidates (tried/cut/screened/skipped) | shipped answer | answer | regret |\n"
        f"|---|---|---|{'---|' if args.warm else ''}---|---|---|---|---|---|---|---|"
    )
    for index in chosen:
        collective, size, gpus, name, before = SAMPLE[index]
        point = Point(collective, size, Configuration.parse(name), gpus=gpus, threadblocks="auto")
        stored = shipped.get(point_key(point, preset)) or {}
        best, spent = search_cost(preset, point, args.threads, args.search)
        warm = ""
        if args.warm:
            again, warm_s = search_cost(preset, point, args.threads, args.search)
            assert again.result.completion_ps == best.result.completion_ps
            total_warm += warm_s
            warm = f" {warm_s:.1f} |"
        costs, result = best.costs, best.result
        verdicts = Counter(c.verdict for c in costs)
        run_s = {
            v: sum(c.run_s for c in costs if c.verdict == v) for v in ("tried", "cut", "screened")
        }
        answer = (result.info.threadblocks, result.info.granularity, result.completion_ps)
        winner = [
            c for c in costs if c.verdict == "tried" and (c.threadblocks, c.domains) == answer[:2]
        ]
        assert len(winner) == 1, f"the winner {answer[:2]} is not one tried candidate"
        total_winner += winner[0].prepare_s + winner[0].run_s
        was = (stored.get("threadblocks"), stored.get("granularity"), stored.get("completion_ps"))
        print(
            f"| {collective} {size:,} B, {gpus} GPUs, {name} | {before:.1f} | {spent:.1f} |{warm}"
            f" {sum(c.prepare_s for c in costs):.1f} | {run_s['tried']:.1f} | {run_s['cut']:.1f} "
            f"| {run_s['screened']:.1f} | {verdicts['tried']}/{verdicts['cut']}/"
            f"{verdicts['screened']}/{verdicts['skipped']} | {was} | {answer} "
            f"| {regret_text(answer[2], was[2])} |",
            flush=True,
        )
        total_before += before
        total_after += spent
        candidates += [{"point": index, **vars(c)} for c in costs]
    estimate = POINTS_PER_SAMPLE * total_after
    print(
        f"\nsample: {total_before:.0f} s shipped, {total_after:.0f} s here; grid estimate "
        f"{estimate:,.0f} s of CPU ({estimate / 3600:.2f} h; shipped {GRID_SHIPPED_S:,} s)"
    )
    # The floor of a search that returns the exhaustive answer without knowing it: the
    # winner must still be prepared and run to its end.
    floor = POINTS_PER_SAMPLE * total_winner
    print(
        f"winners alone (prepared and run): {total_winner:.0f} s of the sample; a search "
        f"that knew its answers: {floor:,.0f} s ({floor / 3600:.2f} h)"
    )
    if args.warm:
        plans_s = (total_after - total_warm) / len(chosen)  # a (collective, GPUs) pair's plans
        swept = POINTS_PER_SAMPLE * total_warm + GRID_PLAN_FAMILIES * args.workers * plans_s
        print(
            f"warm: {total_warm:.0f} s, plans {plans_s:.1f} s a point; as a sweep of "
            f"{args.workers} workers builds them: {swept:,.0f} s of CPU ({swept / 3600:.2f} h)"
        )
    if args.out:
        pd.DataFrame(candidates).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
