"""Which resource bounds an All-Gather as it grows, and how NAP+NAR's speedup over UA follows
it: the sensitivity run behind Fig. 12's explanation in docs/reproduction.md.

    python benchmarks/size_bottleneck.py [--sizes 10MB,100MB,1GB] [--port-scale 1,0.5]
        [--gpus 8] [--engine flow]

For each port bandwidth (the preset's, times each scale: the one thing changed) and size,
UA and NAP+NAR each run at their best threadblock count and granularity (the search of
``simulate``), and the line gives their completions, the speedup, and each run's busiest
mesh link and port (busy time: the flits it carried times its occupancy). When a run is
bandwidth-bound its completion follows its busiest resource; the speedup then follows the
ratio of the two runs' busiest-link times if the mesh bounds them, and tends to 1 if the
ports (which NAP+NAR cannot relieve) do.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from nunasim.engine.result import SimResult
from nunasim.experiments.tbsearch import best_threadblocks
from nunasim.io.presets import load_preset
from nunasim.units import format_size, parse_size


def busiest_us(result: SimResult, kind: str) -> float:
    """The busiest resource of ``kind``'s busy time, us."""
    return result.busiest_ps(kind) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10MB,100MB,1GB")
    parser.add_argument("--port-scale", default="1,0.5", help="port bandwidth multipliers")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--engine", default="flow", choices=("auto", "packet", "flow"))
    parser.add_argument("--preset", default="nextgen-4die")
    args = parser.parse_args()
    preset = load_preset(args.preset)
    print(
        "| port bandwidth | size | UA (us) | busiest link, port | NAP+NAR (us) "
        "| busiest link, port | speedup | link ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for scale in (float(x) for x in args.port_scale.split(",")):
        bandwidth = preset.pod.port_bandwidth * scale
        pod = dataclasses.replace(preset.pod, port_bandwidth=bandwidth).fit(args.gpus)
        for size in (parse_size(x) for x in args.sizes.split(",")):
            started = time.perf_counter()
            runs = {
                config: best_threadblocks(
                    pod, "allgather", size, config, gpus=args.gpus, engine=args.engine
                )
                for config in ("UA", "NAP+NAR")
            }
            ua, nap = runs["UA"].result, runs["NAP+NAR"].result
            cells = [
                f"{bandwidth / 1e9:g} GB/s",
                format_size(size),
                f"{ua.completion_ps / 1e6:.2f} ({runs['UA'].threadblocks} tbs)",
                f"{busiest_us(ua, 'link'):.2f}, {busiest_us(ua, 'port'):.2f}",
                f"{nap.completion_ps / 1e6:.2f} ({runs['NAP+NAR'].threadblocks} tbs, "
                f"{runs['NAP+NAR'].granularity} domains)",
                f"{busiest_us(nap, 'link'):.2f}, {busiest_us(nap, 'port'):.2f}",
                f"{ua.completion_ps / nap.completion_ps:.3f}",
                f"{busiest_us(ua, 'link') / busiest_us(nap, 'link'):.3f}",
            ]
            print("| " + " | ".join(cells) + " |", flush=True)
            print(f"<!-- {time.perf_counter() - started:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
