"""Shared routes in the packet core: how many distinct routes runs have, and what reading
one copy of each saves the loop.

Run: python benchmarks/shared_routes.py [--repeat N]
For each run (``nextgen-4die``, ``auto`` granularity): its messages, its distinct routes and
their share of the route entries, the time ``share_routes`` takes with its default limit
(None: the run keeps its own routes), and the loop's best time over N alternating runs with
its own routes and with shared ones (the limit lifted), compile cache warm.
"""

from __future__ import annotations

import argparse
import time

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.lowering.lower import lower
from nunasim.engine.packet import shared_routes
from nunasim.engine.packet.engine import simulate
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario

RUNS = (  # collective, GPUs, threadblocks per GPU, configuration, bytes
    ("allgather", 8, 7, "NAP+NAR", 1_000_000),
    ("allgather", 8, 56, "NAP+NAR", 1_000_000),
    ("allreduce", 8, 56, "NAP+NAR", 1_000_000),
    ("alltoall", 8, 56, "NAP+NAR", 1_000_000),
    ("allgather", 8, 56, "UA", 1_000_000),
    ("allgather", 8, 56, "NAP", 1_000_000),
    ("allgather", 8, 448, "NAP+NAR", 10_000_000),
    ("allgather", 32, 124, "NAP+NAR", 10_000_000),
    ("allgather", 32, 124, "UA+NAR", 10_000_000),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    preset = load_preset("nextgen-4die")
    print("run                                   messages  routes  share  find s   own s  shared s")
    for collective, gpus, tbs, config, size in RUNS:
        pod = preset.fit(gpus).pod
        plan = builtin_plan(collective, gpus=gpus, tbs=tbs)
        lowered = lower(pod, plan, Scenario(pod, plan, size, config, "auto").placement())
        start, table = lowered.route_start, lowered.route_table
        every = shared_routes.share_routes(start, table, at_most=1.0)
        assert every is not None
        started = time.perf_counter()
        shared_routes.share_routes(start, table)
        find_s = time.perf_counter() - started
        best = {0.0: float("inf"), 1.0: float("inf")}
        for _ in range(args.repeat):
            for limit in best:
                shared_routes.SHARE_AT_MOST = limit
                best[limit] = min(best[limit], simulate(lowered).wall_s)
        name = f"{collective} {size:,} B, {gpus} GPUs, {tbs} tbs, {config}"
        print(
            f"{name:38s}{lowered.messages:9,d}{len(every.start) - 1:8,d}"
            f"{len(every.table) / len(table):7.3f}{find_s:8.3f}{best[0.0]:8.3f}{best[1.0]:10.3f}"
        )


if __name__ == "__main__":
    main()
