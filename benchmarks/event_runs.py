"""Runs of events beside the packet core's heap, on and off: the loop's time on small and
mid-sized runs (the large ones always gained).

Run: python benchmarks/event_runs.py [--repeat N]
For each run (``nextgen-4die``, the built-in plan's own threadblocks, ``auto``
granularity), the loop's best time over N alternating runs with every push on the heap
(``RUNS_FROM_MESSAGES`` above the run's messages) and with runs (from the first message),
compile cache warm; both give the same events in the same order.
"""

from __future__ import annotations

import argparse

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.lowering.lower import lower
from nunasim.engine.packet import state
from nunasim.engine.packet.engine import simulate
from nunasim.io.presets import load_preset
from nunasim.policies.place import place

RUNS = (  # collective, GPUs, bytes
    ("allgather", 2, 1_000_000),
    ("allgather", 8, 100_000),
    ("allgather", 8, 1_000_000),
    ("allreduce", 8, 1_000_000),
    ("alltoall", 8, 1_000_000),
    ("allgather", 16, 1_000_000),
    ("allgather", 4, 10_000_000),
)
OFF = 1 << 62


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    preset = load_preset("nextgen-4die")
    print("run                                  events   heap only ms   runs ms   ratio")
    for collective, gpus, size in RUNS:
        pod = preset.fit(gpus).pod
        for config in ("UA", "NAP+NAR"):
            plan = builtin_plan(f"{collective}:direct:gpus={gpus}")
            lowered = lower(pod, plan, place(plan, size, pod, config, "auto"))
            best = {OFF: float("inf"), 0: float("inf")}
            for _ in range(args.repeat):
                for threshold in best:
                    state.RUNS_FROM_MESSAGES = threshold
                    trace = simulate(lowered)
                    best[threshold] = min(best[threshold], trace.wall_s)
            name = f"{collective} {size:,} B, {gpus} GPUs, {config}"
            print(
                f"{name:36s}{trace.events:8,d}{best[OFF] * 1e3:14.1f}{best[0] * 1e3:10.1f}"
                f"{best[OFF] / best[0]:8.2f}"
            )


if __name__ == "__main__":
    main()
