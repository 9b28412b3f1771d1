"""The NUMA proxy read two ways (section 3.3: prior NUMA schemes group threadblocks with
their data, then "distribute [them] evenly ... using simple round-robin scheduling"):

    python benchmarks/numa_readings.py [--gpus 8] [--sizes 100kB,1MB] [--tbs 7,56,224]

``first-fit`` (the configurations' NUMA): each threadblock on the first CU with budget in
order of line-weighted distance to its data. ``die-even``: each on the die that holds most
of its data, dispatched over that die as UA dispatches. Each against UA+NAR at the same
threadblock count and NAR granularity ``auto``: completion (ns) and NUMA+NAR's speedup over
UA+NAR (above 1: the paper's "NUMA+NAR at least UA+NAR" holds there).
"""

from __future__ import annotations

import argparse

from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.policies.place import NUMA_READINGS, place
from nunasim.scenario import Scenario
from nunasim.units import PS_PER_NS, parse_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--sizes", default="100kB,1MB")
    parser.add_argument("--tbs", default="7,56,224")
    parser.add_argument("--collectives", default="allgather,allreduce,alltoall")
    args = parser.parse_args()
    pod = load_preset("nextgen-4die").fit(args.gpus).pod
    print(
        "| collective | size | threadblocks | UA+NAR | "
        + " | ".join(f"NUMA+NAR {r}" for r in NUMA_READINGS)
        + " |\n|---|---|---|---|"
        + "---|" * len(NUMA_READINGS)
    )
    wins = dict.fromkeys(NUMA_READINGS, 0)
    cells = 0
    for collective in args.collectives.split(","):
        for size_text in args.sizes.split(","):
            size = parse_size(size_text)
            for tbs in map(int, args.tbs.split(",")):
                plan = builtin_plan(collective, gpus=args.gpus, tbs=tbs)
                base = Scenario(pod, plan, size, "UA+NAR").run().completion_ps
                cells += 1
                shown = []
                for reading in NUMA_READINGS:
                    placement = place(plan, size, pod, "NUMA+NAR", "auto", numa_reading=reading)
                    scenario = Scenario(pod, plan, size, "NUMA+NAR")
                    time = scenario.prepare(placement).run().completion_ps
                    wins[reading] += time <= base
                    shown.append(f"{time / PS_PER_NS:,.0f} ({base / time:.3f}x)")
                print(
                    f"| {collective} | {size_text} | {tbs} | {base / PS_PER_NS:,.0f} | "
                    + " | ".join(shown)
                    + " |",
                    flush=True,
                )
    print(
        "\nNUMA+NAR at least UA+NAR: "
        + ", ".join(f"{r} in {n} of {cells}" for r, n in wins.items())
    )


if __name__ == "__main__":
    main()
