"""How many hops of a lowered run could be handled in the event before them.

    python benchmarks/route_chains.py [--collective allgather] [--gpus 32] [--size 10MB]
        [--config UA+NAR] [--threadblocks 124] [--granularity 4]

A hop onto a resource that every route reaches from the same resource, with the same pure
delay, and that no route starts at, sees its messages arrive in the order the resource
before served them, each its latency later: such a hop could be reserved in the event of
the hop before it, and the packet core would handle one event fewer for it. This counts
those route entries, by resource kind, for one placed and lowered run (it changes
nothing): an upper bound on the events that merging such hops would save.
"""

from __future__ import annotations

import argparse

import numpy as np
from search_cost import point_arguments  # beside this script, on its path

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.kernel.kinds import RESOURCE_NAMES
from nunasim.engine.lowering.lower import lower
from nunasim.io.presets import load_preset
from nunasim.policies.place import place
from nunasim.units import parse_size


def single_feeder_entries(route: np.ndarray, start: np.ndarray, post: np.ndarray) -> np.ndarray:
    """Per route entry, whether its resource is reached from one (resource, delay) only,
    over every route, and starts none."""
    first = np.zeros(len(route), dtype=bool)
    first[start[:-1][start[:-1] < start[1:]]] = True
    before = np.full(len(route), -1, dtype=np.int64)
    before[1:] = route[:-1]
    delay = np.full(len(route), -1, dtype=np.int64)
    delay[1:] = post[:-1]
    before[first], delay[first] = -2, -2  # a route's start: fed by no resource
    order = np.lexsort((delay, before, route))
    resource, feeder, wait = route[order], before[order], delay[order]
    new_resource = np.r_[True, resource[1:] != resource[:-1]]
    new_feeder = new_resource | np.r_[True, (feeder[1:] != feeder[:-1]) | (wait[1:] != wait[:-1])]
    feeders = np.add.reduceat(new_feeder.astype(np.int64), np.nonzero(new_resource)[0])
    single = np.zeros(int(route.max(initial=-1)) + 1, dtype=bool)
    single[resource[new_resource][feeders == 1]] = True
    single[np.unique(route[first])] = False
    return single[route] & ~first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    point_arguments(parser)
    parser.add_argument("--threadblocks", type=int, default=124)
    parser.add_argument("--granularity", default="4")
    args = parser.parse_args()
    granularity = int(args.granularity) if args.granularity.isdigit() else args.granularity
    pod = load_preset("nextgen-4die").fit(args.gpus).pod
    plan = builtin_plan(args.collective, gpus=args.gpus, tbs=args.threadblocks)
    placement = place(plan, parse_size(args.size), pod, args.config, granularity)
    lowered = lower(pod, plan, placement)
    merge = single_feeder_entries(lowered.route, lowered.route_start, lowered.route_post_ps)
    print(
        f"{lowered.messages:,} messages, {len(merge):,} route entries: {int(merge.sum()):,} "
        f"({merge.mean():.1%}) on a resource with a single feeder"
    )
    kinds = lowered.resources.kind[lowered.route]
    for kind in np.unique(kinds):
        mine = kinds == kind
        print(f"  {RESOURCE_NAMES[kind]}: {int(mine.sum()):,} entries, {int(merge[mine].sum()):,}")


if __name__ == "__main__":
    main()
