"""Call overhead of the flow engine's compiled kernels, which take their arrays in bundles.

    python benchmarks/flow_kernel_calls.py [--calls N] [--repeat N]
    python benchmarks/flow_kernel_calls.py --calls-only   # runs on an older checkout too

A compiled kernel takes at most 12 arguments, so the flow engine's two kernels called from
Python take NamedTuples of arrays: the demand count (``demand_kernel.group_demands``) nine,
``DemandAccesses``, ``DemandGroups``, the line counter's ``PageTables``, ``Regions``,
``PortMap`` and ``WireFormat``, ``MeshPaths``, ``ResourceLayout`` and ``RouteLatencies`` (54
arguments before), and the event loop (``loop.run_flows``) two, ``FlowGraph`` and
``FlowLoads``, and three scalars (23 before). Its inlined helpers (``_start_phase``,
``_drain``) take the bundles and tuples of the loop's arrays, inside compiled code: no
typing. numba types every argument of a call from Python; a NamedTuple field by field, a
few microseconds. Two measures:

- *dispatch*: each kernel's real arguments (those of the 8-GPU 1 MB run below) to an empty
  compiled kernel taking them spelled out (the former convention) and to one taking the
  bundles: the best of ``--repeat`` means over ``--calls`` calls; and ``run_flows`` on the
  real bundles of both cases below cut at time 0 (``stop_ps=0``): typing and unboxing them,
  the loop's setup and its first events (the steps ready at 0, a first rate computation);
- *calls*: every call of the real kernels in one ``Scenario.run()``, on the smallest case
  (2-GPU 4 KB direct All-Gather on ``nextgen-4die``, UA) and on ``Scenario(nextgen-4die,
  allgather:direct:gpus=8, 1MB, NAP+NAR, engine="flow")``: calls per run, the median and
  fastest call, the run's wall time (best of ``--repeat`` runs, compile cache warm).
  ``--calls-only`` measures these alone, and finds the former kernel (``demand._demands``).

Measured (2 shared cores, numba 0.68, ``--repeat 40``, two runs each, their range; "before":
``--calls-only`` on the checkout before the bundles, its kernels taking every array spelled
out):

    dispatch per call         spelled out   bundled
    group_demands             2.8-2.9 us    9.0-9.3 us   (54 arguments; 9 with bundles)
    run_flows                 1.0-1.1 us    2.9-3.2 us   (23 arguments; 5 with bundles)
    run_flows cut at time 0: 16.6 us a call on the tiny run's bundles, 76 us on the 1 MB's

    calls in one run       calls   before: median, fastest    after: median, fastest
    tiny  demand count     1        30-31 us,   26-29 us        41-48 us,   37-44 us
    tiny  run_flows        2        33-41 us,   14-15 us        34-47 us,   18-22 us
    tiny  the run (best)            1.75-1.76 ms                1.67-1.95 ms
    1 MB  demand count     1       319-331 us, 291-313 us      318-321 us, 298-301 us
    1 MB  run_flows        2      1252-1400 us,  53-57 us     1237-1297 us,  59-63 us
    1 MB  the run (best)            5.50-5.93 ms                5.56-5.65 ms

Typing the bundles adds about 6 us to the demand count's one call and 2 us to each of the
loop's two: some 10 us a run, 0.2 % of the 1 MB run's 5.6 ms and 0.6 % of the tiny run's
1.7 ms, within both runs' noise (the tiny demand count's call also unboxes nine bundles and
counts through the line counter's own bundles: 10-15 us more in all). A larger run's kernels
do more work per call for the same overhead, so the share only falls.
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
from nunasim.scenario import Scenario

PRESET = "nextgen-4die"
CASES = {  # name: (plan, size, configuration)
    "tiny": ("allgather:direct:gpus=2", "4KB", "UA"),
    "1 MB": ("allgather:direct:gpus=8", "1MB", "NAP+NAR"),
}


def _scenario(case: str) -> Scenario:
    plan, size, configuration = CASES[case]
    return Scenario(load_preset(PRESET), builtin_plan(plan), size, configuration, engine="flow")


def _kernels() -> list[tuple[Any, str]]:
    """The flow engine's kernels called from Python, as (module, name) where they are
    called: the demand count (``_demands`` before the bundles) and the event loop."""
    from nunasim.engine.flow import demand, engine

    count = "group_demands" if hasattr(demand, "group_demands") else "_demands"
    return [(demand, count), (engine, "run_flows")]


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
    """Every real kernel call of one ``Scenario.run()`` of each case, timed where the flow
    engine makes it."""
    print(f"calls in one run (of {repeat}; compile cache warm)")
    for case in CASES:
        scenario = _scenario(case)
        placement = scenario.placement()
        scenario.run(placement)  # compile or load, and the plan's one-off work
        durations: dict[str, list[float]] = {}

        def timed(name: str, original: Callable, durations: dict = durations) -> Callable:
            def call(*args: Any) -> Any:
                started = time.perf_counter()
                result = original(*args)
                durations.setdefault(name, []).append(time.perf_counter() - started)
                return result

            return call

        saved = _patched(_kernels(), timed)
        walls = []
        try:
            for _ in range(repeat):
                started = time.perf_counter()
                scenario.run(placement)
                walls.append(time.perf_counter() - started)
        finally:
            _restore(saved)
        for name, times in durations.items():
            median, fastest = statistics.median(times) * 1e6, min(times) * 1e6
            print(
                f"  {case:6} {name:16} {len(times) // repeat:3} calls, median {median:7.1f} us, "
                f"fastest {fastest:7.1f} us"
            )
        print(f"  {case:6} the run (best)    {min(walls) * 1e3:.2f} ms")


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
    """Each kernel's real arguments to an empty kernel, spelled out and bundled; and the
    event loop on its real bundles, cut at its first event."""
    captured: dict[str, dict[str, tuple]] = {case: {} for case in CASES}
    for case, seen in captured.items():

        def capture(name: str, original: Callable, seen: dict = seen) -> Callable:
            def call(*args: Any) -> Any:
                seen[name] = args  # the last call's: the loop's run, not its bound
                return original(*args)

            return call

        saved = _patched(_kernels(), capture)
        try:
            _scenario(case).run()
        finally:
            _restore(saved)
    print(f"dispatch per call (best of {repeat} means over {calls:,} calls)")
    print(f"  {'':16} {'spelled out':>12} {'bundled':>10}")
    for name, bundled in captured["1 MB"].items():
        flat = _spelled_out(bundled)
        spelled = _per_call_us(_empty_kernel(len(flat)), flat, calls, repeat)
        grouped = _per_call_us(_empty_kernel(len(bundled)), bundled, calls, repeat)
        print(
            f"  {name:16} {spelled:9.1f} us {grouped:7.1f} us"
            f"   ({len(flat)} arguments; {len(bundled)} with bundles)"
        )
    from nunasim.engine.flow.loop import run_flows

    for case, seen in captured.items():
        cut = (*seen["run_flows"][:-1], 0)  # stop_ps = 0: it stops at its first events
        loop_us = _per_call_us(run_flows, cut, calls, repeat)
        print(f"  run_flows on the {case} bundles cut at time 0: {loop_us:.1f} us a call")


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
