"""What the threadblock search's granularity rule misses: the search the figures use against
the joint search over threadblock counts and NAR granularities.

    python benchmarks/granularity_search.py --collectives allgather,allreduce,alltoall \
        --sizes 100kB,1MB --gpus 8 --configs UA+NAR,NUMA+NAR,NAP+NAR [--engine auto]

The figures' search (``experiments.tbsearch.best_threadblocks`` with granularity ``auto``)
runs every threadblock count at the granularity the placement policy's estimate picks,
then every other granularity at the best count only. The joint search runs the count
search once at each granularity ``auto`` may use, fixed, and keeps the fastest run: every
(count, granularity) pair. A line gives both answers and the joint search's gain; a gain
above 1 is a run the figures' search did not find. (``best_threadblocks(search="joint")``
runs the same space in one search; this script builds it from the count search alone, a
check of that one, and its answers agree with it.)
"""

from __future__ import annotations

import argparse
import itertools
import time

from nunasim.experiments.tbsearch import best_threadblocks
from nunasim.hardware import Pod
from nunasim.io.presets import load_preset
from nunasim.policies.place import auto_granularities
from nunasim.units import format_size, parse_size


def searched(
    pod: Pod,
    collective: str,
    size: int,
    gpus: int,
    config: str,
    granularity: int | str,
    engine: str,
) -> tuple[int, int, int]:
    """The search's fastest run: completion ps, threadblocks per GPU, domains."""
    found = best_threadblocks(
        pod, collective, size, config, granularity=granularity, gpus=gpus, engine=engine
    )
    return found.result.completion_ps, found.threadblocks, found.granularity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collectives", default="allgather,allreduce,alltoall")
    parser.add_argument("--sizes", default="100kB,1MB")
    parser.add_argument("--gpus", default="8")
    parser.add_argument("--configs", default="UA+NAR,NUMA+NAR,NAP+NAR")
    parser.add_argument("--engine", default="auto", choices=("auto", "packet", "flow"))
    parser.add_argument("--preset", default="nextgen-4die")
    args = parser.parse_args()
    preset = load_preset(args.preset)
    print(
        "| collective | size | GPUs | configuration | figures' search: us (tbs, domains) "
        "| joint search: us (tbs, domains) | gain | search seconds, figures' / joint |"
    )
    print("|---|---|---|---|---|---|---|---|")
    cases = itertools.product(
        args.collectives.split(","),
        [parse_size(x) for x in args.sizes.split(",")],
        [int(x) for x in args.gpus.split(",")],
        args.configs.split(","),
    )
    for collective, size, gpus, config in cases:
        pod = preset.pod.fit(gpus)
        started = time.perf_counter()
        figures = searched(pod, collective, size, gpus, config, "auto", args.engine)
        figures_s = time.perf_counter() - started
        joint = min(
            searched(pod, collective, size, gpus, config, g, args.engine)
            for g in auto_granularities(pod.socket)
        )
        joint_s = time.perf_counter() - started - figures_s
        cells = [
            collective,
            format_size(size),
            str(gpus),
            config,
            f"{figures[0] / 1e6:.3f} ({figures[1]}, {figures[2]})",
            f"{joint[0] / 1e6:.3f} ({joint[1]}, {joint[2]})",
            f"{figures[0] / joint[0]:.3f}",
            f"{figures_s:.1f} / {joint_s:.1f}",
        ]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
