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
import time
from typing import Any

from kernel_calls import capturer, hooked, per_call_us, present, print_calls, print_dispatch, timer

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

    return [present(demand, "group_demands", "_demands"), (engine, "run_flows")]


def measure_calls(repeat: int) -> None:
    """Every real kernel call of one ``Scenario.run()`` of each case, timed where the flow
    engine makes it."""
    print(f"calls in one run (of {repeat}; compile cache warm)")
    for case in CASES:
        scenario = _scenario(case)
        placement = scenario.placement()
        scenario.run(placement)  # compile or load, and the plan's one-off work
        durations: dict[str, list[float]] = {}
        walls = []
        with hooked(_kernels(), timer(durations)):
            for _ in range(repeat):
                started = time.perf_counter()
                scenario.run(placement)
                walls.append(time.perf_counter() - started)
        print_calls(durations, repeat, 16, f"{case:6} ")
        print(f"  {case:6} the run (best)    {min(walls) * 1e3:.2f} ms")


def measure_dispatch(calls: int, repeat: int) -> None:
    """Each kernel's real arguments to an empty kernel, spelled out and bundled; and the
    event loop on its real bundles, cut at its first event."""
    captured: dict[str, dict[str, tuple]] = {case: {} for case in CASES}
    for case, seen in captured.items():
        # The last call's arguments: the loop's run, not its bound.
        with hooked(_kernels(), capturer(seen, last=True)):
            _scenario(case).run()
    print_dispatch(captured["1 MB"], calls, repeat, 16)
    from nunasim.engine.flow.loop import run_flows

    for case, seen in captured.items():
        cut = (*seen["run_flows"][:-1], 0)  # stop_ps = 0: it stops at its first events
        loop_us = per_call_us(run_flows, cut, calls, repeat)
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
