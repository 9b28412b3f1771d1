"""Packet and flow engines on the same placed scenarios: wall time, peak memory and
completion, one line per run (the table in docs/engine.md, "The flow engine").

    python benchmarks/flow_vs_packet.py [--sizes 1MB,4MB] [--gpus 8,16] [--collectives ...]
        [--window SLOTS]

Each run is a fresh process (so peak memory is the run's own), the compile cache warm.
``--window`` is a sensitivity run: both engines with every CU's request window set to
``SLOTS`` (the placement stays the preset's), e.g. 100000 to take the window out.
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
collective, gpus, size, config, engine, window = sys.argv[1:]
plan = builtin_plan(collective, gpus=int(gpus), tbs=int(gpus) - 1)
started = time.perf_counter()
scenario = Scenario(load_preset("nextgen-4die"), plan, size, config, engine=engine)
placement = scenario.placement()
if int(window):
    socket = dataclasses.replace(scenario.pod.socket, outstanding_requests=int(window))
    pod = dataclasses.replace(scenario.pod, socket=socket)
    scenario = Scenario(pod, plan, size, config, engine=engine)
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
    args = parser.parse_args()
    print(
        "| collective | GPUs | size | config | packet us | flow us | flow/packet "
        "| packet run s | flow run s | packet MB | flow MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for collective in args.collectives.split(","):
        for gpus in args.gpus.split(","):
            for size in args.sizes.split(","):
                for config in args.configs.split(","):
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
                            ],
                            capture_output=True,
                            text=True,
                            check=True,
                        ).stdout
                        runs[engine] = json.loads(out.splitlines()[-1])
                    p, f = runs["packet"], runs["flow"]
                    print(
                        f"| {collective} | {gpus} | {size} | {config} "
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
