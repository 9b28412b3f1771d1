"""What calling the mapping and placement kernels from Python costs, argument lists spelled
out against arguments bundled in NamedTuples (``mapping.line_counts``, ``policies.assign``,
``policies.estimate``), on a real placement: an 8-GPU direct All-Gather of 10 MB on
``nextgen-4die``, placed under NAP+NAR (one ``assign_threadblocks`` pass), NUMA+NAR (one
``count_stack_lines``) and NAP+NAR with ``auto`` granularity (a placement and an estimate,
``_count_remote``, per granularity).

    python benchmarks/mapping_kernel_calls.py
    python benchmarks/mapping_kernel_calls.py --calls-only   # runs on an older checkout too

Numba types every argument of a call from Python; a NamedTuple it types field by field in
Python, a few microseconds, where an array alone takes a fraction of one. Two measures:

- *dispatch*: each kernel's arguments, as the placement passes them, to an empty compiled
  kernel taking them spelled out and to one taking the bundles (built once, outside the
  timing): the best of ``--repeat`` means over ``--calls`` calls;
- *calls*: each real kernel's calls in one run of the three placements and the estimate
  (best of ``--repeat`` runs, the compile cache warmed first), their count and the median
  and fastest call, and the run's wall time. ``--calls-only`` measures these alone.
  (``count_range``, inside the kernels, is called from compiled code only: no typing.)

Measured (2 shared cores, ``--repeat 40``; "before": the same ``--calls-only`` on the
checkout before the bundles, its kernels taking every array spelled out):

    dispatch per call         spelled out   bundled
    assign_threadblocks       1.1 us        3.7 us    (23 arguments; 4 bundles and 1)
    count_stack_lines         0.6 us        1.3 us    (13 arguments; 1 bundle and 7)
    _count_remote             1.2 us        4.5 us    (27 arguments; 5 bundles and 1)

    calls in one run          calls   before: median, fastest   after: median, fastest
    place_threadblocks        8        44 us,   8.5 us           56 us,  20 us
    lines_per_stack           1       174 us,   158 us           90 us,  82 us
    _count_remote             7       128 us,   111 us          118 us, 103 us
    the run (best)                    28.2-28.5 ms              27.8-29.0 ms

Bundling costs 1-3.5 us of typing per call in a tight loop, and some 12 us a call in the
placement (``place_threadblocks`` also builds its four bundles from ``place.py``'s spelled-out
call, and types them with cold caches): about 0.1 ms of a 28 ms run, within its noise.
``lines_per_stack`` and ``_count_remote`` came out faster, in their compiled counting
(not their calls). Inside compiled code a bundle costs nothing: ``count_range`` runs per range.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from kernel_calls import capturer, hooked, present, print_calls, print_dispatch, timer

from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.policies import estimate, place
from nunasim.policies.estimate import estimate_ps

PLAN, SIZE, PRESET, GPUS = "allgather:direct:gpus=8", 10_000_000, "nextgen-4die", 8


def one_run() -> None:
    """The three placements and the estimate whose kernel calls are timed."""
    plan = builtin_plan(PLAN)
    pod = load_preset(PRESET).pod.with_sockets(GPUS)
    placed = place.place(plan, SIZE, pod, "NAP+NAR")
    place.place(plan, SIZE, pod, "NUMA+NAR")
    place.place(plan, SIZE, pod, "NAP+NAR", "auto")
    estimate_ps(plan, placed, pod)


def _kernels() -> list[tuple[Any, str]]:
    """The placement's kernels as (module, name) where they are called, by their names now
    or before the bundles (``place_threadblocks``, ``lines_per_stack``)."""
    return [
        present(place, "assign_threadblocks", "place_threadblocks"),
        present(place, "count_stack_lines", "lines_per_stack"),
        (estimate, "_count_remote"),
    ]


def measure_calls(repeat: int) -> None:
    """Every real kernel call of ``one_run``, timed where the placement makes it."""
    durations: dict[str, list[float]] = {}
    one_run()  # compile, and the plan's one-off work
    walls = []
    with hooked(_kernels(), timer(durations)):
        for _ in range(repeat):
            started = time.perf_counter()
            one_run()
            walls.append(time.perf_counter() - started)
    print(f"calls in one run (of {repeat}; the run {min(walls) * 1e3:.1f} ms at best)")
    print_calls(durations, repeat, 22, "")


def measure_dispatch(calls: int, repeat: int) -> None:
    """Each kernel's real arguments (its first call's) to an empty kernel, spelled out and
    bundled."""
    captured: dict[str, tuple] = {}
    with hooked(_kernels(), capturer(captured, last=False)):
        one_run()
    print_dispatch(captured, calls, repeat, 22)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per dispatch mean")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--calls-only", action="store_true", help="the real calls alone")
    args = parser.parse_args()
    if not args.calls_only:
        measure_dispatch(args.calls, args.repeat)
    measure_calls(args.repeat)


if __name__ == "__main__":
    main()
