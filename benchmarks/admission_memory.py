"""Is admission's memory estimate honest? Peak memory of real runs against the estimate.

Run: python benchmarks/admission_memory.py [--quick]
Each run goes in a fresh process: it builds the scenario, notes its resident memory when
the run is admitted, places and simulates it, and reports its peak resident memory. The
growth (peak minus memory at admission) is what the budget must cover; the estimate
(``packet_bytes``) should stay above it, by little. ``BYTES_PER_MESSAGE`` is calibrated
from the ``beyond fixed`` column: growth beyond ``BYTES_PER_RUN``, per message. Also times
the packet engine's refusal of the 64-GPU 1 GB All-Gather from a fresh process (start-up
included).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from nunasim.engine.lowering.admission import BYTES_PER_RUN

CHILD = """
import json, resource, sys
from nunasim.engine.lowering.admission import packet_bytes, packet_messages
from nunasim.io.presets import load_preset
from nunasim.collectives.builtins import builtin_plan
from nunasim.scenario import Scenario

def rss():
    with open("/proc/self/status") as lines:
        for line in lines:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

plan_name, size, config = sys.argv[1], int(sys.argv[2]), sys.argv[3]
preset = load_preset("nextgen-4die")
plan = builtin_plan(plan_name)
scenario = Scenario(preset, plan, size, config, engine="packet")
messages = packet_messages(plan, plan.chunk_bytes(size), preset.pod.socket.line_bytes)
before = rss()
result = scenario.run()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"messages": messages, "before": before, "peak": peak,
                  "estimate": packet_bytes(messages), "simulated": result.summary()["messages"]}))
"""

RUNS = [
    ("allgather:direct:gpus=8:tbs=7", 1_000_000, "UA"),
    ("allgather:direct:gpus=8:tbs=7", 8_000_000, "UA"),
    ("allgather:direct:gpus=8:tbs=7", 8_000_000, "NAP+NAR"),
    ("allreduce:direct:gpus=8:tbs=7", 8_000_000, "UA"),
    ("alltoall:direct:gpus=8:tbs=7", 8_000_000, "NAP+NAR"),
    ("allgather:ring:gpus=8:tbs=7", 8_000_000, "UA"),
    ("allgather:direct:gpus=8:tbs=7", 32_000_000, "UA"),
    ("allgather:direct:gpus=16:tbs=15", 32_000_000, "UA"),
    ("allgather:direct:gpus=8:tbs=56", 128_000_000, "UA"),
    ("alltoall:direct:gpus=8:tbs=56", 128_000_000, "NAP+NAR"),
    ("allgather:direct:gpus=16:tbs=960", 100_000_000, "UA"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the runs below 1 GB of growth")
    args = parser.parse_args()
    runs = RUNS[:6] if args.quick else RUNS
    print(
        f"{'run':<44} {'messages':>10} {'growth MB':>10} {'estimate MB':>12} {'per msg':>8} "
        f"{'beyond fixed':>12}"
    )
    for plan, size, config in runs:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, plan, str(size), config],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(done.stdout)
        growth = row["peak"] - row["before"]
        print(
            f"{plan + ' ' + str(size // 10**6) + 'MB ' + config:<44} {row['messages']:>10,} "
            f"{growth / 1e6:>10,.0f} {row['estimate'] / 1e6:>12,.0f} "
            f"{growth / row['messages']:>8,.0f} "
            f"{(growth - BYTES_PER_RUN) / row['messages']:>12,.0f}"
        )
    start = time.perf_counter()
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "nunasim",
            "simulate",
            "--gpus",
            "64",
            "--size",
            "1GB",
            "--engine",
            "packet",
        ],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    print(f"\n64 GPUs at 1 GB: exit {refused.returncode} after {wall:.2f} s")
    print(refused.stderr.strip())


if __name__ == "__main__":
    main()
