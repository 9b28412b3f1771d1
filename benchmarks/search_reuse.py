"""What a sweep's threadblock searches cost one after another in one process: the first
search of a (collective, GPUs) pays for building its candidate plans and the work kept per
plan (structural proof, access table, placement facts, the step graph's plan-only part);
the searches of the other configurations and sizes reuse them (``builtin_plan`` hands back
the same plan object). The table in docs/engine-measured.md, "Work kept per plan".

    python benchmarks/search_reuse.py                       # 64-GPU All-Reduce, 100 kB
    python benchmarks/search_reuse.py --collective allgather --size 10MB
    python benchmarks/search_reuse.py --configs UA,NAP+NAR --gpus 32

Each configuration's search (``threadblocks="auto"``, as ``nunasim reproduce fig9`` runs
it, one run at a time) is timed in wall seconds on this process, the compile cache warmed
first by an 8-GPU search; the completion is printed so that a change can be checked to
leave the answers as they were.
"""

from __future__ import annotations

import argparse
import resource
import time

from nunasim.experiments.sweep import Point, run_point
from nunasim.io.presets import load_preset
from nunasim.scenario import as_configuration
from nunasim.units import parse_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collective", default="allreduce")
    parser.add_argument("--size", default="100kB")
    parser.add_argument("--gpus", type=int, default=64)
    parser.add_argument("--configs", default="NAP,NAP+NAR,UA+NAR,UA")
    parser.add_argument("--preset", default="nextgen-4die")
    args = parser.parse_args()
    preset = load_preset(args.preset)
    warm = Point("allgather", 100_000, as_configuration("UA"), gpus=8, threadblocks="auto")
    run_point(warm, preset)
    print(f"{args.collective}, {args.size}, {args.gpus} GPUs, one search after another:")
    print("| configuration | search (s) | completion (ns) | peak RSS (GB) |")
    print("|---|---|---|---|")
    for config in args.configs.split(","):
        point = Point(
            args.collective,
            parse_size(args.size),
            as_configuration(config),
            gpus=args.gpus,
            threadblocks="auto",
        )
        started = time.perf_counter()
        result = run_point(point, preset)
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        print(f"| {config} | {seconds:.1f} | {result.completion_ps / 1000:,.1f} | {peak:.2f} |")


if __name__ == "__main__":
    main()
