"""Placement's time as collectives grow: ``place`` (and the flow run's preparation) per
size, GPU count and configuration.

    python benchmarks/placement_scale.py                  # the table of docs/limits.md
    python benchmarks/placement_scale.py --quick          # 1 MB and 100 MB only
    python benchmarks/placement_scale.py --cases allgather:64:504:1GB --configs NAP+NAR
    python benchmarks/placement_scale.py --prepare        # and the flow run's preparation
    python benchmarks/placement_scale.py --digest         # a checksum of every placement

Each case is a built-in direct collective on ``nextgen-4die`` at a number of GPUs,
threadblocks per GPU and size, under a configuration with ``auto`` granularity (NAP+NAR
then places once per granularity and estimates each). The plan's one-off work (proof,
access table, placement facts) and the compile cache are warmed by a first placement;
then the best of ``--repeat`` CPU times (the process's: other work on a shared machine
does not count) of ``place`` is reported, with the pages placed. ``--prepare`` adds
``Scenario.prepare`` (the flow engine's demands, step graph and lower bound; the packet
engine's lowering at small sizes). ``--digest`` adds a SHA-256 over every decision of the
placement (threadblock CUs and domains, every page's region and frame, the flag pages,
the budgets, the granularity), to check that a change leaves placements bit for bit as
they were; it reads only the ``Placement`` fields every version has, so it runs on an
older checkout too.
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np

from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.mapping.placement import Placement
from nunasim.policies.place import place
from nunasim.scenario import Scenario

DEFAULT_CASES = (
    "allgather:8:7:1MB",
    "allgather:64:63:1MB",
    "allgather:64:504:1MB",
    "allgather:8:7:100MB",
    "allreduce:16:60:100MB",
    "allgather:64:63:1GB",
    "allgather:64:504:1GB",
    "allgather:64:1008:1GB",
)
QUICK_CASES = tuple(case for case in DEFAULT_CASES if not case.endswith("1GB"))
DEFAULT_CONFIGS = ("UA", "NAP+NAR")


def digest(placement: Placement) -> str:
    """A checksum of every decision of ``placement``."""
    sha = hashlib.sha256()

    def add(values: object) -> None:
        array = np.ascontiguousarray(np.asarray(values, dtype=np.int64))
        sha.update(str(array.shape).encode())
        sha.update(array.tobytes())

    for gpu in placement.gpus:
        add(gpu.tb_cu)
        add(gpu.tb_domain)
        for pages in (*gpu.buffers.values(), gpu.flags):
            add(pages.region)
            add(pages.frame)
    for used in (*placement.cu_used, *placement.stack_used):
        add(used)
    add([placement.granularity, placement.fallback_tbs, placement.fallback_chunks])
    return sha.hexdigest()[:16]


def measure(
    case: str, config: str, repeat: int, prepare: bool, with_digest: bool
) -> dict[str, object]:
    collective, gpus, tbs, size = case.split(":")
    plan = builtin_plan(collective, gpus=int(gpus), tbs=int(tbs))
    scenario = Scenario(load_preset("nextgen-4die"), plan, size, config, "auto")
    pod = scenario.pod

    def placed() -> Placement:
        return place(plan, scenario.size, pod, config, "auto")

    scenario.placement()  # the plan's proof, access table and facts, and the compiled code
    best, placement = float("inf"), None
    for _ in range(repeat):
        placement = None  # the previous one's tables go before the next is built
        started = time.process_time()
        placement = placed()
        best = min(best, time.process_time() - started)
    assert placement is not None
    pages = sum(len(p.region) for gpu in placement.gpus for p in gpu.buffers.values())
    row: dict[str, object] = {
        "case": case,
        "config": config,
        "pages": pages,
        "domains": placement.granularity,
        "place_s": best,
    }
    if prepare:
        scenario.prepare(placement)  # warm
        started = time.process_time()
        scenario.prepare(placement)
        row["prepare_s"] = time.process_time() - started
    if with_digest:
        row["digest"] = digest(placement)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes below 1 GB only")
    parser.add_argument("--cases", nargs="*", help="collective:gpus:tbs:size (allgather:8:7:1MB)")
    parser.add_argument("--configs", nargs="*", default=list(DEFAULT_CONFIGS))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--prepare", action="store_true", help="time Scenario.prepare too")
    parser.add_argument("--digest", action="store_true", help="a checksum of each placement")
    args = parser.parse_args()
    cases = args.cases or (QUICK_CASES if args.quick else DEFAULT_CASES)
    header = f"| case | config | pages | domains | place (s) |{' prepare (s) |' * args.prepare}"
    print(header + (" digest |" if args.digest else ""))
    print("|---" * (header.count("|") - 1 + args.digest) + "|")
    for case in cases:
        for config in args.configs:
            row = measure(case, config, args.repeat, args.prepare, args.digest)
            cells = [
                str(row["case"]),
                str(row["config"]),
                f"{row['pages']:,}",
                str(row["domains"]),
                f"{row['place_s']:.2f}",
            ]
            if args.prepare:
                cells.append(f"{row['prepare_s']:.2f}")
            if args.digest:
                cells.append(str(row["digest"]))
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
