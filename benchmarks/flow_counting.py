"""The flow engine's line counting: the time ``flow_demands`` takes on large runs.

    python benchmarks/flow_counting.py                     # the table of docs/engine.md
    python benchmarks/flow_counting.py --quick             # 8 GPUs at 100 MB only
    python benchmarks/flow_counting.py --cases allgather:64:63:1GB --configs UA
    python benchmarks/flow_counting.py --digest            # a checksum of every demand

Each case is a collective on ``nextgen-4die`` at a number of GPUs, threadblocks per GPU
and size, placed once; ``flow_demands`` then runs once to warm the compile cache and
``--repeat`` times more, and the best CPU time (the process's, so that other work on a
shared machine does not count) is reported with the wire lines the run moves (a local
range read by several steps counts once per step, though it is counted once) and the time
per line. ``--digest`` adds a SHA-256 over every array of the demands, to check
that a change to the counting leaves them bit for bit as they were.
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.flow.demand import Demands, flow_demands
from nunasim.engine.flow.engine import _tables
from nunasim.engine.lowering.resources import resource_numbering
from nunasim.io.presets import load_preset
from nunasim.mapping.accesses import plan_accesses
from nunasim.scenario import Configuration, Scenario

DEFAULT_CASES = (
    "allgather:8:7:100MB",
    "allreduce:8:7:100MB",
    "alltoall:8:7:100MB",
    "allgather:64:63:1GB",
    "allgather:64:1008:1GB",
    "allreduce:64:63:1GB",
    "alltoall:64:63:1GB",
)
DEFAULT_CONFIGS = ("UA", "NAP+NAR")


def digest(demands: Demands) -> str:
    """A checksum of every array of ``demands``, in field order."""
    sha = hashlib.sha256()
    for array in demands:
        sha.update(np.ascontiguousarray(array).tobytes())
    return sha.hexdigest()[:16]


def measure(case: str, config: str, repeat: int, with_digest: bool) -> dict[str, object]:
    collective, gpus, tbs, size = case.split(":")
    plan = builtin_plan(collective, gpus=int(gpus), tbs=int(tbs))
    scenario = Scenario(
        load_preset("nextgen-4die"), plan, size, Configuration.parse(config), engine="flow"
    )
    started = time.process_time()
    placement = scenario.placement()
    place_s = time.process_time() - started
    pod = scenario.pod
    accesses = plan_accesses(plan)
    numbering = resource_numbering(pod, plan.ngpus)
    tables = _tables(pod)

    def run() -> Demands:
        return flow_demands(pod, plan, placement, accesses, numbering, tables, scenario.dtype)

    demands = run()
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    lines = int(demands.access_lines.sum())
    row: dict[str, object] = {
        "case": case,
        "config": config,
        "place_s": place_s,
        "lines": lines,
        "demands_s": best,
        "ns_per_line": 1e9 * best / max(lines, 1),
    }
    if with_digest:
        row["digest"] = digest(demands)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", default=list(DEFAULT_CASES))
    parser.add_argument("--configs", nargs="*", default=list(DEFAULT_CONFIGS))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="8 GPUs at 100 MB only")
    parser.add_argument("--digest", action="store_true", help="print a checksum of the demands")
    args = parser.parse_args()
    cases = args.cases[:1] if args.quick else args.cases
    header = "| case | config | lines | flow_demands (CPU) | ns/line | placement (CPU) |"
    print(header + " digest |" * args.digest)
    print("|---|---|---|---|---|---|" + "---|" * args.digest)
    for case in cases:
        for config in args.configs:
            row = measure(case, config, args.repeat, args.digest)
            print(
                f"| {row['case']} | {row['config']} | {row['lines']:,} | "
                f"{row['demands_s']:.3f} s | {row['ns_per_line']:.2f} | {row['place_s']:.1f} s |"
                + (f" {row['digest']} |" if args.digest else ""),
                flush=True,
            )


if __name__ == "__main__":
    main()
