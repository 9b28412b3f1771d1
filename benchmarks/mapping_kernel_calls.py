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
import statistics
import time
from collections.abc import Callable
from typing import Any

import numba

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


def _patched(targets: list[tuple[Any, str]], hook: Callable[[str, Callable], Callable]) -> list:
    """Replace each ``module.name`` by ``hook(name, original)``; returns what to restore."""
    saved = []
    for module, name in targets:
        original = getattr(module, name)
        saved.append((module, name, original))
        setattr(module, name, hook(name, original))
    return saved


def _restore(saved: list) -> None:
    for module, name, original in saved:
        setattr(module, name, original)


def measure_calls(repeat: int) -> None:
    """Every real kernel call of ``one_run``, timed where the placement makes it (names
    both the spelled-out and the bundled versions have)."""
    durations: dict[str, list[float]] = {}

    def timed(name: str, original: Callable) -> Callable:
        def call(*args: Any) -> Any:
            started = time.perf_counter()
            result = original(*args)
            durations.setdefault(name, []).append(time.perf_counter() - started)
            return result

        return call

    one_run()  # compile, and the plan's one-off work
    targets = [
        (place, "place_threadblocks"),
        (place, "lines_per_stack"),
        (estimate, "_count_remote"),
    ]
    saved = _patched(targets, timed)
    walls = []
    try:
        for _ in range(repeat):
            started = time.perf_counter()
            one_run()
            walls.append(time.perf_counter() - started)
    finally:
        _restore(saved)
    print(f"calls in one run (of {repeat}; the run {min(walls) * 1e3:.1f} ms at best)")
    for name, times in durations.items():
        median, fastest = statistics.median(times) * 1e6, min(times) * 1e6
        print(
            f"  {name:22} {len(times) // repeat:3} calls, median {median:7.1f} us, "
            f"fastest {fastest:7.1f} us"
        )


def _empty_kernel(count: int) -> Callable:
    """A compiled kernel of ``count`` parameters that does nothing."""
    names = ", ".join(f"a{i}" for i in range(count))
    scope: dict[str, Any] = {}
    exec(f"def kernel({names}):\n    return 0\n", scope)  # a fixed template
    return numba.njit(scope["kernel"])


def _spelled_out(args: tuple) -> tuple:
    """``args`` with every bundle's fields in its place."""
    flat: list[Any] = []
    for a in args:
        flat.extend(a if isinstance(a, tuple) else (a,))
    return tuple(flat)


def _per_call_us(kernel: Callable, args: tuple, calls: int, repeat: int) -> float:
    kernel(*args)  # compile for these types
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(calls):
            kernel(*args)
        best = min(best, (time.perf_counter() - started) / calls)
    return best * 1e6


def measure_dispatch(calls: int, repeat: int) -> None:
    """Each kernel's real arguments to an empty kernel, spelled out and bundled."""
    from nunasim.mapping import line_counts
    from nunasim.policies import assign

    captured: dict[str, tuple] = {}

    def capture(name: str, original: Callable) -> Callable:
        def call(*args: Any) -> Any:
            captured.setdefault(name, args)
            return original(*args)

        return call

    targets = [
        (assign, "assign_threadblocks"),
        (line_counts, "count_stack_lines"),
        (estimate, "_count_remote"),
    ]
    saved = _patched(targets, capture)
    try:
        one_run()
    finally:
        _restore(saved)
    print(f"dispatch per call (best of {repeat} means over {calls:,} calls)")
    print(f"  {'':22} {'spelled out':>12} {'bundled':>10}")
    for name, bundled in captured.items():
        flat = _spelled_out(bundled)
        spelled = _per_call_us(_empty_kernel(len(flat)), flat, calls, repeat)
        grouped = _per_call_us(_empty_kernel(len(bundled)), bundled, calls, repeat)
        print(
            f"  {name:22} {spelled:9.1f} us {grouped:7.1f} us"
            f"   ({len(flat)} arguments; {len(bundled)} with bundles)"
        )


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
