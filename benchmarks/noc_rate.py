"""Synthetic-traffic throughput of the packet core: flit-hops per second, with credit flow
control and without.

Run: python benchmarks/noc_rate.py [--repeat N]
Each case injects uniform traffic for 120,000 cycles (10,000 of warm-up, a 55,000-cycle
window and as many while it drains) and reports link flit-hops per second of
- the core's event loop alone (best of N, compile cache warm),
- ``run_noc(...).result()`` in this process (traffic generation, lowering, run, result and
  its accounting check; best of N),
- the whole ``nunasim noc`` command in a fresh process (start-up and imports included;
  median of N).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

from nunasim.engine.noc.inputs import noc_inputs
from nunasim.engine.noc.run import run_noc
from nunasim.engine.packet.engine import run_core
from nunasim.io.presets import load_preset

WARMUP, CYCLES = 10_000, 55_000  # 120,000 cycles of injection in all

CASES = (  # preset, rate (flits/node/cycle), flits per packet
    ("mesh8x8-vc", 0.2, 4),
    ("mesh8x8-vc", 0.08, 1),
    ("nextgen-4die-vc", 0.08, 1),
    ("nextgen-4die-vc", 0.08, 4),
    ("nextgen-4die", 0.08, 1),
    ("nextgen-4die", 0.08, 4),
)


def measure(preset: str, rate: float, flits: int, repeat: int) -> dict[str, float]:
    socket = load_preset(preset).socket
    run_noc(socket, "uniform", rate, flits, cycles=500, warmup=100)  # warm the compile cache
    whole_run, core_s = float("inf"), float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        noc = run_noc(socket, "uniform", rate, flits, cycles=CYCLES, warmup=WARMUP)
        noc.result()
        whole_run = min(whole_run, time.perf_counter() - started)
        inputs = noc_inputs(socket, noc.packets, noc.inject_ps, flits, noc.stop)
        core_s = min(core_s, run_core(inputs).wall_s)
    hops = int(noc.link_busy_ps.sum() // socket.link_flit_ps)
    argv = [sys.executable, "-m", "nunasim", "noc", "--preset", preset, "--rate", str(rate)]
    argv += ["--packet-flits", str(flits), "--cycles", str(CYCLES), "--warmup", str(WARMUP)]
    walls = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([*argv, "--json"], check=True, capture_output=True)
        walls.append(time.perf_counter() - started)
    return {
        "flit_hops": hops,
        "events": noc.events,
        "core_s": core_s,
        "run_s": whole_run,
        "process_s": float(np.median(walls)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("preset           rate  flits  flit-hops   core M/s  run_noc M/s  process M/s")
    for preset, rate, flits in CASES:
        m = measure(preset, rate, flits, args.repeat)
        hops = m["flit_hops"]
        print(
            f"{preset:16s}{rate:5.2f}{flits:7d}{hops:11d}{hops / m['core_s'] / 1e6:11.2f}"
            f"{hops / m['run_s'] / 1e6:13.2f}{hops / m['process_s'] / 1e6:13.2f}"
        )


if __name__ == "__main__":
    main()
