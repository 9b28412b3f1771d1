"""Synthetic-traffic throughput of the packet core: flit-hops per second, with credit flow
control and without.

Run: python benchmarks/noc_rate.py [--repeat N] [--booksim PATH]
Each case injects uniform traffic for 120,000 cycles (10,000 of warm-up, a 55,000-cycle
window and as many while it drains) and reports link flit-hops per second of
- the core's event loop alone (best of N, compile cache warm),
- ``run_noc(...).result()`` in this process (traffic generation, lowering, run, result and
  its accounting check; best of N),
- the whole ``nunasim noc`` command in a fresh process (start-up and imports included;
  median of N).

With ``--booksim PATH`` (a BookSim2 executable you built) it then times, in pairs, the
whole ``nunasim noc`` command and the whole BookSim run on the same router (mesh8x8-vc's:
BookSim's reference configuration, ``booksim_reference.py``), 1-flit uniform traffic with
self-traffic, 120,000 cycles each, on the 8 x 8 mesh and on a 24 x 6 mesh of the same
routers (a preset file written for the run; BookSim's anynet with shortest-path routing),
and prints both wall times, their ratio (median of N pairs, alternating) and both
simulators' mean latency as a check that they ran the same load.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from booksim_reference import booksim_seconds

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


# mesh, rate (flits/node/cycle): light load and near BookSim's saturation on 8 x 8; on
# 24 x 6 light load only: BookSim's anynet routes shortest paths, not in dimension order,
# and at 0.08 its run had not drained after 10 minutes (a routing deadlock).
PAIRED = (
    ((8, 8), 0.2),
    ((8, 8), 0.26),
    ((24, 6), 0.05),
)
PRESETS = Path(__file__).resolve().parents[1] / "src" / "nunasim" / "hardware" / "presets"


def reference_preset(width: int, height: int, folder: Path) -> str:
    """mesh8x8-vc's routers on a width x height mesh, its stacks and ports moved onto it."""
    if (width, height) == (8, 8):
        return "mesh8x8-vc"
    data = yaml.safe_load((PRESETS / "mesh8x8-vc.yaml").read_text())
    socket = data["socket"]
    socket["mesh"] = {"width": width, "height": height}
    socket["dies"] = [{"x": [0, width - 1], "y": [0, height - 1]}]
    w, h = width - 1, height - 1
    socket["hbm"]["stacks"] = [[w // 2, 0], [w // 2 + 1, h], [0, h // 2], [w, h // 2]]
    socket["ports"] = [{"router": list(r), "count": 1} for r in ((0, 0), (0, h), (w, 0), (w, h))]
    data["name"] = f"mesh{width}x{height}-vc"
    path = folder / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def paired(booksim: Path, repeat: int) -> None:
    print("\nmesh   rate  nunasim s  BookSim s  ratio  latency nunasim  latency BookSim")
    with tempfile.TemporaryDirectory() as scratch:
        for (width, height), rate in PAIRED:
            preset = reference_preset(width, height, Path(scratch))
            argv = [sys.executable, "-m", "nunasim", "noc", "--preset", preset, "--rate", str(rate)]
            argv += ["--cycles", str(CYCLES), "--warmup", str(WARMUP), "--self-traffic", "--json"]
            ours, theirs = [], []
            for _ in range(repeat):
                started = time.perf_counter()
                done = subprocess.run(argv, check=True, capture_output=True, text=True)
                ours.append(time.perf_counter() - started)
                wall, _, stats = booksim_seconds(
                    booksim, width, height, rate, 1, WARMUP + 2 * CYCLES
                )
                theirs.append(wall)
            latency = json.loads(done.stdout)["avg_latency_cycles"]
            mine, bs = float(np.median(ours)), float(np.median(theirs))
            print(
                f"{width}x{height:<3d}{rate:5.2f}{mine:11.2f}{bs:11.2f}{bs / mine:7.1f}"
                f"{latency:17.2f}{stats.get('latency', float('nan')):17.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--booksim", type=Path, help="a BookSim2 executable: time it beside")
    parser.add_argument("--paired-only", action="store_true")
    args = parser.parse_args()
    if args.booksim is not None and args.paired_only:
        paired(args.booksim, args.repeat)
        return
    print("preset           rate  flits  flit-hops   core M/s  run_noc M/s  process M/s")
    for preset, rate, flits in CASES:
        m = measure(preset, rate, flits, args.repeat)
        hops = m["flit_hops"]
        print(
            f"{preset:16s}{rate:5.2f}{flits:7d}{hops:11d}{hops / m['core_s'] / 1e6:11.2f}"
            f"{hops / m['run_s'] / 1e6:13.2f}{hops / m['process_s'] / 1e6:13.2f}"
        )
    if args.booksim is not None:
        paired(args.booksim, args.repeat)


if __name__ == "__main__":
    main()
