"""The flow engine's screen against its runs: how much later (or earlier) a run with the
screen's wider waves completes, and what it costs, over a grid of flow-engine runs.

    python benchmarks/flow_screen_band.py [--gpus 8,16] [--sizes 100MB,1GB] [--out band.csv]
    python benchmarks/flow_screen_band.py --case allreduce,64,10MB,NAP+NAR,1008,1 \
        --case allreduce,64,10MB,NAP+NAR,1008,8 --width 0.04

A search trusts the screen (``FlowRun.screen``) to rule out a candidate only when its
wider-wave run is still unfinished ``SCREEN_MARGIN`` past the deadline, so the band this
prints (the largest error above all) is what that margin must cover. Each case is placed
and prepared once, then run with the engine's tolerance and with the screen's, both to the
end, timed in CPU seconds. ``--case`` (collective, GPUs, size, configuration, threadblocks
per GPU, domains) runs the cases given instead of the grid, and ``--width`` replaces the
screen's width.
"""

from __future__ import annotations

import argparse
import itertools
import time

import pandas as pd

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.flow.engine import SCREEN_MARGIN, SCREEN_TOLERANCE, FlowRun
from nunasim.engine.flow.loop import run_flows
from nunasim.experiments.tbsearch import candidate_counts
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration, Scenario
from nunasim.units import parse_size

COLLECTIVES = ("allgather", "allreduce", "alltoall")
CONFIGURATIONS = ("UA", "NAP", "NAP+NAR", "NUMA+NAR")


def measure(
    collective: str, gpus: int, size: int, config: str, tbs: int, domains: int, width: float
) -> dict:
    preset = load_preset("nextgen-4die")
    plan = builtin_plan(collective, gpus=gpus, tbs=tbs)
    scenario = Scenario(preset, plan, size, Configuration.parse(config, domains), engine="flow")
    run = FlowRun(scenario.pod, plan, scenario.placement())
    graph, loads, tolerance = run.arguments
    seconds, ends = [], []
    for wave in (tolerance, width):
        started = time.process_time()
        ends.append(int(run_flows(graph, loads, wave, False, -1)[1].max()))
        seconds.append(time.process_time() - started)
    return {
        "collective": collective,
        "gpus": gpus,
        "size": size,
        "configuration": config,
        "threadblocks": tbs,
        "domains": domains,
        "completion_ps": ends[0],
        "screen_ps": ends[1],
        "error": ends[1] / ends[0] - 1,
        "run_s": seconds[0],
        "screen_s": seconds[1],
    }


def grid(gpus: str, sizes: str) -> list[tuple]:
    """The grid's cases: (collective, GPUs, size, configuration, threadblocks, domains)."""
    cases = []
    for n, size, collective, config in itertools.product(
        map(int, gpus.split(",")), sizes.split(","), COLLECTIVES, CONFIGURATIONS
    ):
        counts = candidate_counts(n)
        domains = (1, 8) if Configuration.parse(config).uses_domains else (1,)
        for tbs, granularity in itertools.product((counts[0], counts[-1]), domains):
            cases.append((collective, n, size, config, tbs, granularity))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", default="8,16")
    parser.add_argument("--sizes", default="100MB,1GB")
    parser.add_argument("--case", action="append", help="one case instead of the grid")
    parser.add_argument("--width", type=float, default=SCREEN_TOLERANCE, help="the screen's")
    parser.add_argument("--out", help="CSV of every case")
    args = parser.parse_args()
    rows = []
    cases = [case.split(",") for case in args.case] if args.case else grid(args.gpus, args.sizes)
    for collective, gpus, size, config, tbs, granularity in cases:
        row = measure(
            collective, int(gpus), parse_size(size), config, int(tbs), int(granularity), args.width
        )
        rows.append(row)
        print(
            f"{collective} {gpus} GPUs {row['size']:,} B {config} {tbs} tbs {granularity} "
            f"domains: {row['error']:+.2%}, {row['screen_s']:.2f} s against "
            f"{row['run_s']:.2f} s",
            flush=True,
        )
    table = pd.DataFrame(rows)
    print(
        f"\n{len(table)} runs: error {table.error.min():+.2%} to {table.error.max():+.2%} "
        f"(median {table.error.median():+.2%}; the margin is {SCREEN_MARGIN:.0%}); the "
        f"wider waves cost {table.screen_s.sum() / table.run_s.sum():.2f} of the runs' "
        f"{table.run_s.sum():.1f} s"
    )
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
