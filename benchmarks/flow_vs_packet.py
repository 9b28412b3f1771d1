"""Packet and flow engines on the same placed scenarios: wall time, peak memory and
completion, one line per run (the table in docs/engine.md, "The flow engine").

    python benchmarks/flow_vs_packet.py [--sizes 1MB,4MB] [--gpus 8,16] [--collectives ...]
        [--configs UA,NAP+NAR] [--tbs 56,448] [--nar 4] [--window SLOTS] [--port-scale 0.5]

Each run is a fresh process (so peak memory is the run's own), the compile cache warm.
``--window`` is a sensitivity run: both engines with every CU's request window set to
``SLOTS`` (the placement stays the preset's), e.g. 100000 to take the window out, and
``--port-scale`` one with every port's bandwidth scaled. ``--tbs`` gives threadblocks per
GPU (default: one per peer) and ``--nar`` NAR domains for the NAR configurations (default:
the placement's own choice, ``auto``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

RUN = """
import dataclasses, json, resource, sys, time
from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario
collective, gpus, size, config, engine, window, tbs, nar, port_scale = sys.argv[1:]
plan = builtin_plan(collective, gpus=int(gpus), tbs=int(tbs) if int(tbs) else int(gpus) - 1)
domains = int(nar) if nar != "auto" and config.endswith("NAR") else None
started = time.perf_counter()
preset = load_preset("nextgen-4die")
pod = preset.pod.fit(int(gpus))
if float(port_scale) != 1:
    pod = dataclasses.replace(pod, port_bandwidth=pod.port_bandwidth * float(port_scale))
scenario = Scenario(pod, plan, size, config, domains, engine=engine)
placement = scenario.placement()
if int(window):
    socket = dataclasses.replace(scenario.pod.socket, outstanding_requests=int(window))
    pod = dataclasses.replace(scenario.pod, socket=socket)
    scenario = Scenario(pod, plan, size, config, domains, engine=engine)
placed = time.perf_counter()
result = scenario.run(placement)
print(json.dumps({
    "completion_ps": result.completion_ps,
    "place_s": placed - started,
    "run_s": time.perf_counter() - placed,
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collectives", default="allgather,allreduce,alltoall")
    parser.add_argument("--gpus", default="8")
    parser.add_argument("--sizes", default="1MB,4MB")
    parser.add_argument("--configs", default="UA,NAP+NAR")
    parser.add_argument("--window", type=int, default=0, help="request slots per CU (0: preset)")
    parser.add_argument("--tbs", default="0", help="threadblocks per GPU (0: one per peer)")
    parser.add_argument("--nar", default="auto", help="NAR domains of NAR configurations")
    parser.add_argument("--port-scale", default="1", help="multiplies every port's bandwidth")
    args = parser.parse_args()
    print(
        "| collective | GPUs | threadblocks | size | config | packet us | flow us | flow/packet "
        "| packet run s | flow run s | packet MB | flow MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    cases = [
        (collective, gpus, tbs, size, config)
        for collective in args.collectives.split(",")
        for gpus in args.gpus.split(",")
        for tbs in args.tbs.split(",")
        for size in args.sizes.split(",")
        for config in args.configs.split(",")
    ]
    for collective, gpus, tbs, size, config in cases:
        runs = {}
        window = str(args.window)
        for engine in ("packet", "flow"):
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    RUN,
                    collective,
                    gpus,
                    size,
                    config,
                    engine,
                    window,
                    tbs,
                    args.nar,
                    args.port_scale,
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            runs[engine] = json.loads(out.splitlines()[-1])
        p, f = runs["packet"], runs["flow"]
        print(
            f"| {collective} | {gpus} | {int(tbs) or int(gpus) - 1} | {size} | {config} "
            f"| {p['completion_ps'] / 1e6:.2f} | {f['completion_ps'] / 1e6:.2f} "
            f"| {f['completion_ps'] / p['completion_ps']:.3f} "
            f"| {p['run_s']:.2f} | {f['run_s']:.2f} "
            f"| {p['peak_mb']:.0f} | {f['peak_mb']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
