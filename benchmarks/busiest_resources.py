"""Which resource bounds each configuration of one Fig. 9 point, at the threadblock count
and granularity its search chose: the sensitivity runs behind the large-size explanations
of Fig. 9 in docs/reproduction.md.

    python benchmarks/busiest_resources.py allreduce 1GB 64 \
        UA+NAR:1008:4 NAP+NAR:504:2 NAP+NAR:1008:4 [--engine auto|packet|flow]

Each CONFIG:THREADBLOCKS:GRANULARITY (a number of domains, or auto: the placement
policy's estimate, as the search's count round uses) runs once (seed 0, the point's engine unless
``--engine`` says otherwise). A line gives the completion and its lower bound, then for
links, ports, stacks and plane outputs the busy time of the busiest one (the flits it
carried times its occupancy) and how much busier it is than the mean of its kind's used
resources: a bandwidth-bound run ends near its busiest resource's busy time, and a
busiest-to-mean ratio well above 1 says the load is concentrated, not large.
"""

from __future__ import annotations

import argparse
import time

import nunasim as ns
from nunasim.units import parse_size

KINDS = ("link", "port", "stack", "plane")


def parse_spec(text: str) -> tuple[str, int, int | str]:
    name, threadblocks, granularity = text.split(":")
    return name, int(threadblocks), granularity if granularity == "auto" else int(granularity)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collective")
    parser.add_argument("size")
    parser.add_argument("gpus", type=int)
    parser.add_argument("specs", nargs="+", metavar="CONFIG:THREADBLOCKS:GRANULARITY")
    parser.add_argument("--engine", default="auto", choices=("auto", "packet", "flow"))
    parser.add_argument("--preset", default="nextgen-4die")
    args = parser.parse_args()
    preset = ns.load_preset(args.preset)
    size = parse_size(args.size)
    header = ["configuration", "tbs", "domains", "engine", "us (bound)"]
    header += [f"busiest {kind} us (x mean)" for kind in KINDS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, threadblocks, granularity in map(parse_spec, args.specs):
        started = time.perf_counter()
        plan = ns.builtin_plan(args.collective, gpus=args.gpus, tbs=threadblocks)
        configuration = ns.Configuration.parse(name, granularity)
        result = ns.Scenario(preset, plan, size, configuration, engine=args.engine).run()
        resources = result.resources
        cells = [
            name,
            str(threadblocks),
            str(result.info.granularity if result.info else granularity),
            result.engine,
            f"{result.completion_ps / 1e6:.2f} ({result.lower_bound_ps / 1e6:.2f})",
        ]
        for kind in KINDS:
            busy = resources.loc[resources["kind"] == kind, "busy_ps"]
            used = busy[busy > 0]
            cells.append(f"{used.max() / 1e6:.2f} ({used.max() / used.mean():.2f})")
        print("| " + " | ".join(cells) + " |", flush=True)
        print(f"<!-- {time.perf_counter() - started:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
