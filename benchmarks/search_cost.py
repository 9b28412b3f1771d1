"""What one threadblock search costs, candidate by candidate.

    python benchmarks/search_cost.py [--collective allgather] [--gpus 32] [--size 10MB]
        [--config UA+NAR] [--threads 1]

Searches one point from nothing (the search's memo cleared, no result cache) on
``nextgen-4die``, after a 2-GPU search that loads the compiled kernels, and prints its
answer, its wall and CPU seconds, and for every candidate its verdict (``tried`` to the
end, ``cut`` at the best so far, ``skipped`` by its bound) and the seconds spent preparing
and running it. The default is the 32-GPU 10 MB All-Gather under UA+NAR, a large point
of Fig. 9 (1,065 s when the shipped grid was computed).
"""

from __future__ import annotations

import argparse
import time

from nunasim.experiments import tbsearch
from nunasim.io.presets import load_preset
from nunasim.units import parse_size


def point_arguments(parser: argparse.ArgumentParser) -> None:
    """The point's options, by default the 32-GPU 10 MB All-Gather under UA+NAR (also read by
    ``route_chains.py``)."""
    parser.add_argument("--collective", default="allgather")
    parser.add_argument("--gpus", type=int, default=32)
    parser.add_argument("--size", default="10MB")
    parser.add_argument("--config", default="UA+NAR")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    point_arguments(parser)
    parser.add_argument("--threads", type=int, default=1, help="runs in flight")
    args = parser.parse_args()
    preset = load_preset("nextgen-4die")
    tbsearch.best_threadblocks(preset.fit(2).pod, "allgather", 4096, "NAP+NAR", gpus=2)
    tbsearch._CACHE.clear()
    pod = preset.fit(args.gpus).pod
    size = parse_size(args.size)
    wall, cpu = time.perf_counter(), time.process_time()
    best = tbsearch.best_threadblocks(
        pod, args.collective, size, args.config, gpus=args.gpus, threads=args.threads
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{args.collective} {args.size} on {args.gpus} GPUs, {args.config}: "
        f"{best.threadblocks} threadblocks, {best.granularity} domains, "
        f"{best.result.completion_ps:,} ps; {wall:.1f} s wall, {cpu:.1f} s CPU"
    )
    for c in best.costs:
        print(
            f"  {c.threadblocks:5d} threadblocks {c.domains:3d} domains {c.verdict:8s} "
            f"prepare {c.prepare_s:6.1f} s  run {c.run_s:6.1f} s"
        )


if __name__ == "__main__":
    main()
