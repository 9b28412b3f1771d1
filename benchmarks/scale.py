"""The packet engine at scale: events, time and peak memory of growing runs, and what
placement costs per threadblock.

    python benchmarks/scale.py                # docs/engine-measured.md, "Performance at scale"
    python benchmarks/scale.py --quick        # the two smallest runs only
    python benchmarks/scale.py --runs 64:1MB --configs UA
    python benchmarks/scale.py --command           # the 64-GPU 1 MB command, fresh processes

``--command`` times ``nunasim simulate --gpus 64 --size 1MB --collective allgather --tbs
252 --engine packet`` (252 threadblocks per GPU: the count the NAP+NAR search picks at
64 GPUs and 1 MB) under NAP+NAR and UA: the wall time, CPU time and peak memory of the
command in ``--repeat`` fresh processes (median), then one more fresh process that runs
the same command line through ``nunasim.cli.main`` as the whole process (so with what the
command line does to the garbage collector) with a timer around each phase: imports,
plan, proof, admission, placement, lowering, lower bound, event loop, result tables,
numba's compile-cache loads (inside whichever phase first calls a compiled function) and
the garbage collector's passes (inside whichever phase set them off).

Every run is a fresh process (``nunasim simulate`` from the command line, one threadblock
per peer, NAR granularity ``auto``), so start-up, compilation-cache loading, placement,
lowering and the event loop all count, and its peak resident memory is the process's.
A second fresh process runs the same scenario phase by phase through the API and reports
each phase's CPU time (CPU rather than wall time, so that other work on the machine does
not count; the command's CPU time is reported beside its wall time for the same reason).
Placement per threadblock is timed in one process: the first placement of a
plan (which works out its access sets and logical groups) and a second one (which reuses
them), at 1, 4 and 16 threadblocks per peer on 64 GPUs (``--per-peer``), 1 MB, at two NAR
domains and at granularity ``auto`` (every valid granularity up to 12 placed and estimated,
the best kept: what ``nunasim simulate`` does by default).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

DEFAULT_RUNS = ("8:1MB", "64:100kB", "64:1MB", "8:10MB", "8:100MB")
DEFAULT_CONFIGS = ("UA", "NAP+NAR")

_PHASES = """
import json, resource, sys, time
from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario
from nunasim.engine.lowering.lower import lower
from nunasim.engine.analytic.bound import lower_bound_ps
from nunasim.engine.packet.engine import simulate
gpus, size, config = int(sys.argv[1]), sys.argv[2], sys.argv[3]
out = {}
def phase(name, work):
    start = time.process_time()
    value = work()
    out[name] = round(time.process_time() - start, 3)
    return value
plan = phase("plan_cpu_s", lambda: builtin_plan(f"allgather:direct:gpus={gpus}:tbs={gpus - 1}"))
scenario = Scenario(load_preset("nextgen-4die"), plan, size, config, "auto")
placement = phase("place_cpu_s", scenario.placement)
lowered = phase("lower_cpu_s", lambda: lower(scenario.pod, plan, placement))
phase("bound_cpu_s", lambda: lower_bound_ps(lowered))
trace = phase("simulate_cpu_s", lambda: simulate(lowered))
out["events"] = int(trace.events)
out["messages"] = int(lowered.messages)
out["route_entries"] = int(len(lowered.route))
out["completion_ps"] = int(trace.step_end.max())
out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(out))
"""

_PLACEMENT = """
import json, sys, time
from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.policies.place import place
gpus, config = int(sys.argv[1]), sys.argv[2]
counts = [int(x) for x in sys.argv[3].split(",")]
pod = load_preset("nextgen-4die").fit(gpus).pod
place(builtin_plan("allgather:direct:gpus=2:tbs=1"), 1 << 20, pod, config, 2)  # compile, load
rows = []
for per_peer in counts:
  for granularity in (2, "auto"):
    plan = builtin_plan(f"allgather:direct:gpus={gpus}:tbs={per_peer * (gpus - 1)}")
    times = []
    for _ in range(2):
        start = time.process_time()
        place(plan, 1 << 20, pod, config, granularity)
        times.append(time.process_time() - start)
    tbs = per_peer * (gpus - 1) * gpus
    rows.append({"threadblocks": tbs, "granularity": granularity, "first_s": round(times[0], 3),
                 "again_s": round(times[1], 3),
                 "first_us_per_tb": round(times[0] / tbs * 1e6, 1),
                 "again_us_per_tb": round(times[1] / tbs * 1e6, 1)})
print(json.dumps(rows))
"""


def _child(code: str, *args: str) -> object:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cli(gpus: int, size: str, config: str) -> dict[str, float]:
    """Wall time, CPU time and peak memory of ``nunasim simulate`` in a fresh process."""
    command = [
        "/usr/bin/time",
        "-f",
        "%e %U %S %M",
        sys.executable,
        "-m",
        "nunasim",
        "simulate",
        "--gpus",
        str(gpus),
        "--size",
        size,
        "--collective",
        "allgather",
        "--config",
        config,
        "--tbs",
        str(gpus - 1),
        "--json",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    wall, user, system, peak_kb = done.stderr.strip().splitlines()[-1].split()
    return {
        "cli_wall_s": float(wall),
        "cli_cpu_s": float(user) + float(system),
        "cli_peak_mb": round(int(peak_kb) / 1024),
    }


COMMAND = [
    *("simulate", "--gpus", "64", "--size", "1MB", "--collective", "allgather"),
    *("--tbs", "252", "--engine", "packet", "--json"),
]

_BREAKDOWN = """
import gc, importlib, json, sys, time
began = (time.perf_counter(), time.process_time())
phases = {}

def add(name, wall, cpu):
    total = phases.setdefault(name, [0.0, 0.0])
    total[0] += wall
    total[1] += cpu

def timed(module, attribute, name):
    work = getattr(module, attribute)
    def wrapper(*args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return work(*args, **kwargs)
        finally:
            add(name, time.perf_counter() - wall, time.process_time() - cpu)
    setattr(module, attribute, wrapper)

wall, cpu = time.perf_counter(), time.process_time()
importlib.import_module("nunasim.cli.simulate")
add("imports", time.perf_counter() - wall, time.process_time() - cpu)
import numba.core.dispatcher
import nunasim.cli.simulate, nunasim.engine.packet.core, nunasim.experiments.sweep
import nunasim.scenario
scenario, core = nunasim.scenario, nunasim.engine.packet.core
timed(nunasim.experiments.sweep, "builtin_plan", "plan")
timed(scenario, "prove_once", "proof")
timed(scenario, "admit", "admission")
timed(scenario, "place", "placement")
timed(scenario, "lower", "lowering")
timed(scenario, "lower_bound_ps", "lower bound")
timed(core, "_loop", "event loop")
timed(scenario, "build_result", "result tables")
timed(numba.core.dispatcher.Dispatcher, "_compile_for_args", "(numba cache loads)")
collecting = [0.0, 0.0]
def collector(phase, info):
    if phase == "start":
        collecting[:] = time.perf_counter(), time.process_time()
    else:
        add("(garbage collector)", time.perf_counter() - collecting[0],
            time.process_time() - collecting[1])
gc.callbacks.append(collector)
from nunasim.cli import main
sys.argv = ["nunasim", *sys.argv[1:]]
with open("/dev/null", "w") as sink:
    stdout, sys.stdout = sys.stdout, sink
    main()
    sys.stdout = stdout
add("total", time.perf_counter() - began[0], time.process_time() - began[1])
print(json.dumps({name: [round(w, 3), round(c, 3)] for name, (w, c) in phases.items()}))
"""


def _command_wall(config: str, repeat: int) -> dict[str, float]:
    """Median wall and CPU time and peak memory of the command in fresh processes."""
    runs = [_timed_command([*COMMAND, "--config", config]) for _ in range(repeat)]
    middle = len(runs) // 2
    return {
        key: sorted(run[key] for run in runs)[middle]
        for key in ("cli_wall_s", "cli_cpu_s", "cli_peak_mb")
    }


def _timed_command(arguments: list[str]) -> dict[str, float]:
    command = ["/usr/bin/time", "-f", "%e %U %S %M", sys.executable, "-m", "nunasim"]
    done = subprocess.run([*command, *arguments], capture_output=True, text=True, check=True)
    wall, user, system, peak_kb = done.stderr.strip().splitlines()[-1].split()
    return {
        "cli_wall_s": float(wall),
        "cli_cpu_s": float(user) + float(system),
        "cli_peak_mb": round(int(peak_kb) / 1024),
    }


def command_table(configs: list[str], repeat: int) -> None:
    """The 64-GPU 1 MB command: fresh-process times, then a breakdown per phase."""
    for config in configs:
        whole = _command_wall(config, repeat)
        print(
            f"{config}: wall {whole['cli_wall_s']:.2f} s, CPU {whole['cli_cpu_s']:.2f} s, "
            f"peak {whole['cli_peak_mb']} MB (median of {repeat} fresh processes)",
            flush=True,
        )
        phases = _child(_BREAKDOWN, *COMMAND, "--config", config)
        assert isinstance(phases, dict)
        print("| phase | wall s | CPU s |\n|---|---|---|")
        for name, (wall, cpu) in phases.items():
            print(f"| {name} | {wall:.2f} | {cpu:.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=",".join(DEFAULT_RUNS), help="GPUS:SIZE,...")
    parser.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    parser.add_argument("--quick", action="store_true", help="the two smallest runs only")
    parser.add_argument("--no-placement", action="store_true", help="skip placement per tb")
    parser.add_argument(
        "--per-peer", default="1,4,16", help="threadblocks per peer to time placement at"
    )
    parser.add_argument(
        "--command", action="store_true", help="only the 64-GPU 1 MB command, phase by phase"
    )
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per command")
    args = parser.parse_args()
    if args.command:
        os.environ["MPLBACKEND"] = "Agg"
        command_table(args.configs.split(","), args.repeat)
        return
    runs = [r.split(":") for r in args.runs.split(",")]
    if args.quick:
        runs = runs[:2]
    os.environ["MPLBACKEND"] = "Agg"
    print(
        "| run | config | events | messages | CLI wall | CLI CPU | CLI peak | plan | place | lower "
        "| bound | simulate (CPU s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for gpus, size in runs:
        for config in args.configs.split(","):
            cli = _cli(int(gpus), size, config)
            phases = _child(_PHASES, gpus, size, config)
            assert isinstance(phases, dict)
            print(
                f"| {gpus} GPUs, {size} | {config} | {phases['events'] / 1e6:.2f} M "
                f"| {phases['messages'] / 1e6:.2f} M | {cli['cli_wall_s']:.1f} s "
                f"| {cli['cli_cpu_s']:.1f} s "
                f"| {cli['cli_peak_mb']} MB | {phases['plan_cpu_s']:.2f} "
                f"| {phases['place_cpu_s']:.2f} "
                f"| {phases['lower_cpu_s']:.2f} | {phases['bound_cpu_s']:.2f} "
                f"| {phases['simulate_cpu_s']:.2f} |",
                flush=True,
            )
    if args.no_placement:
        return
    print(
        "\n| config | threadblocks (64 GPUs) | granularity | first placement | again "
        "| per tb first | again |"
    )
    print("|---|---|---|---|---|---|---|")
    for config in args.configs.split(","):
        rows = _child(_PLACEMENT, "64", config, args.per_peer)
        assert isinstance(rows, list)
        for row in rows:
            print(
                f"| {config} | {row['threadblocks']} | {row['granularity']} "
                f"| {row['first_s']:.2f} s "
                f"| {row['again_s']:.2f} s | {row['first_us_per_tb']} us "
                f"| {row['again_us_per_tb']} us |",
                flush=True,
            )


if __name__ == "__main__":
    main()
