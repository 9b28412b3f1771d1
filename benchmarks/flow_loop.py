"""The flow engine's event loop on large runs: rate computations, the pairs they share,
CPU time per computation, and a digest of every step's and flow's times (equal digests:
equal results bit for bit).

Run: python benchmarks/flow_loop.py [--case NAME ...]
Each case is placed and prepared once (not timed), run once to warm the compile cache
when it is the first, then ``run_flows`` is timed in CPU seconds (``time.process_time``:
the machine is shared).
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.flow.engine import FlowRun
from nunasim.engine.flow.loop import run_flows
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration, Scenario

# name: collective, GPUs, size, configuration, threadblocks per GPU (None: the plan's),
# NAR granularity
CASES = {
    "ag64-1g-1008": ("allgather", 64, "1GB", "NAP+NAR", 1008, 2),
    "ag64-1g-504": ("allgather", 64, "1GB", "NAP+NAR", 504, 2),
    "ag64-1g-252": ("allgather", 64, "1GB", "NAP+NAR", 252, 2),
    "ag64-1g-63-nap": ("allgather", 64, "1GB", "NAP+NAR", 63, "auto"),
    "ag64-1g-63-ua": ("allgather", 64, "1GB", "UA", 63, "auto"),
    "ar16-100m": ("allreduce", 16, "100MB", "NAP+NAR", None, "auto"),
    "a2a16-100m": ("alltoall", 16, "100MB", "NAP+NAR", None, "auto"),
    "ag8-100m-1001": ("allgather", 8, "100MB", "NAP+NAR", 1001, "auto"),
    "ag8-10m-ua": ("allgather", 8, "10MB", "UA", None, "auto"),
    "a2a64-10m-1008-nap": ("alltoall", 64, "10MB", "NAP", 1008, "auto"),
    "ar64-10m-1008-napnar": ("allreduce", 64, "10MB", "NAP+NAR", 1008, 8),
}


def prepare(name: str) -> FlowRun:
    collective, gpus, size, config, tbs, granularity = CASES[name]
    overrides = {"gpus": gpus} if tbs is None else {"gpus": gpus, "tbs": tbs}
    plan = builtin_plan(collective, **overrides)
    preset = load_preset("nextgen-4die")
    scenario = Scenario(preset, plan, size, Configuration.parse(config, granularity), engine="flow")
    return FlowRun(scenario.pod, plan, scenario.placement())


def measure(run: FlowRun) -> dict[str, object]:
    started = time.process_time()
    result = run_flows(*run.arguments, False, -1)
    cpu = time.process_time() - started
    begin, end, flow_begin, flow_drain, events, computations = result[:6]
    pairs = result[6] if len(result) > 6 else float("nan")  # not counted before
    digest = hashlib.sha256()
    for times in (begin, end, flow_begin, flow_drain):
        digest.update(np.ascontiguousarray(times).tobytes())
    flows = len(run.demands.flow_ops)
    return {
        "flows": flows,
        "pairs": len(run.demands.entry_res),
        "completion_ps": int(end.max()),
        "events": int(events),
        "computations": int(computations),
        "pairs_per_computation": pairs / max(computations, 1),
        "cpu_s": cpu,
        "digest": digest.hexdigest()[:16],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    args = parser.parse_args()
    warm = False
    for name in args.case or list(CASES):
        run = prepare(name)
        if not warm:
            run_flows(*run.arguments, False, -1)
            warm = True
        m = measure(run)
        print(
            f"{name}: {m['flows']:,} flows, {m['pairs']:,} pairs, completion "
            f"{m['completion_ps']:,} ps, {m['events']:,} events, {m['computations']} "
            f"computations of {m['pairs_per_computation']:,.0f} pairs, {m['cpu_s']:.2f} s CPU "
            f"({1e3 * m['cpu_s'] / max(m['computations'], 1):.1f} ms a computation), "
            f"digest {m['digest']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
