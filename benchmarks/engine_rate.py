"""Packet engine throughput: events and flit-hops per second, and the time lowering takes.

Run: python benchmarks/engine_rate.py [--repeat N]
Measures, with the numba compile cache warm (one run discarded first), the 8-GPU 1 MB
direct All-Gather under UA and NAP+NAR: the engine's rate, lowering's time (best of N, after
one run that builds the socket's distance table) against a whole placed
``Scenario.run()``, and the wall time of the README headline command in a fresh process
(start-up included).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.kernel.kinds import LINK
from nunasim.engine.lowering.lower import lower
from nunasim.engine.packet.engine import simulate
from nunasim.io.presets import load_preset
from nunasim.policies.place import place
from nunasim.scenario import Scenario


def measure(config: str, repeat: int) -> dict[str, float]:
    pod = load_preset("nextgen-4die").pod
    plan = builtin_plan("allgather:direct:gpus=8")
    placement = place(plan, 1_000_000, pod, config, "auto")
    lowered = lower(pod, plan, placement)
    lower_s = best_of(repeat, lambda: lower(pod, plan, placement))
    scenario = Scenario(pod, plan, 1_000_000, config)
    scenario.run(placement)  # warm the compile cache
    run_s = best_of(repeat, lambda: scenario.run(placement))
    best = float("inf")
    for _ in range(repeat):
        trace = simulate(lowered)
        best = min(best, trace.wall_s)
    hops = int(trace.res_flits[lowered.resources.kind == LINK].sum())
    return {
        "events": trace.events,
        "flit_hops": hops,
        "engine_s": best,
        "events_per_s": trace.events / best,
        "flit_hops_per_s": hops / best,
        "lower_s": lower_s,
        "run_s": run_s,
    }


def best_of(repeat: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def noc_rate(repeat: int) -> dict[str, float]:
    from nunasim.engine.noc.run import run_noc

    socket = load_preset("nextgen-4die").socket
    run_noc(socket, "uniform", 0.05, 1, cycles=2_000, warmup=200)  # warm the compile cache
    best, events, hops = float("inf"), 0, 0
    for _ in range(repeat):
        started = time.perf_counter()
        run = run_noc(socket, "uniform", 0.05, 1, cycles=20_000, warmup=2_000)
        best = min(best, time.perf_counter() - started)
        events = run.events
        hops = int(run.link_busy_ps.sum() // socket.link_flit_ps)
    return {"events": events, "flit_hops": hops, "s": best}


def headline_wall() -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "nunasim", "simulate", "--config", "UA", "--json"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for config in ("UA", "NAP+NAR"):
        m = measure(config, args.repeat)
        print(
            f"8-GPU 1 MB All-Gather, {config}: {m['events']} events, {m['flit_hops']} "
            f"flit-hops in {m['engine_s']:.3f} s: {m['events_per_s'] / 1e6:.2f} M events/s, "
            f"{m['flit_hops_per_s'] / 1e6:.2f} M flit-hops/s; lowering {m['lower_s']:.3f} s of "
            f"{m['run_s']:.3f} s per placed Scenario.run()"
        )
    noc = noc_rate(args.repeat)
    print(
        f"synthetic 24 x 6 mesh, uniform 0.05 flits/node/cycle, 22000 cycles: "
        f"{noc['events']} events in {noc['s']:.3f} s (traffic generation included): "
        f"{noc['events'] / noc['s'] / 1e6:.2f} M events/s, "
        f"{noc['flit_hops'] / noc['s'] / 1e6:.2f} M flit-hops/s"
    )
    walls = [headline_wall() for _ in range(3)]
    print(
        f"`nunasim simulate --config UA` (8-GPU 1 MB All-Gather), fresh process: "
        f"{np.median(walls):.2f} s wall (median of 3)"
    )


if __name__ == "__main__":
    main()
