"""Call overhead of the packet engine's compiled kernels, which take their arrays in bundles.

Run: python benchmarks/packet_kernel_calls.py [--calls N] [--repeat N]
A compiled kernel takes at most 12 arguments, so the packet core's event loop takes the run's
``CoreInputs`` and ``CoreOutputs`` whole, ``_loop(inputs, outputs, state)``, and the route writer
of lowering two bundles and its table, ``_write_routes(ends, network, table)``; numba types
a bundle from its fields on every call. Measured, with the compile cache warm, best of
``--repeat`` means over ``--calls`` calls:
- each kernel called on empty bundles of the same types as a real call's (the 2-GPU 4 KB
  direct All-Gather on ``nextgen-4die``), so that all its time is overhead: typing and
  unboxing the bundles, the loop's setup, the result; with, for the event loop, the whole
  ``core.run`` call, a compiled no-op taking the two bundles, and one taking their 39
  fields one by one (the former convention: what the bundles cost more);
- that tiny run's ``simulate`` (its core call's time and the whole call), and the share
  of its core call the overhead is;
- a real scenario, ``Scenario(nextgen-4die, allgather:direct:gpus=8, 1MB, NAP+NAR,
  engine="packet").run()`` (one call of each kernel): the share of its wall time that is
  call overhead.

Measured (2-core shared machine, numba 0.68; "before": the same measurements on the former
code, whose kernels took the fields one by one): ``core.run`` on empty inputs 7.7 us per
call before, 10.5 us after; ``_loop`` alone 4.3 us, 7.0 us; the compiled no-ops 5.1 us for
the two bundles against 2.5 us for their 39 fields (typing the bundles: 2.5 us more per
call); ``_write_routes`` on empty inputs 1.0 us with its 17 arguments, 2.6 us with the two
bundles. The tiny run (222 events): its core call 27 us before, 29 us after (the overhead is
35 % of it); ``simulate`` 81 us, 76 us (noise). The real scenario: 0.145 s per ``run()``
before, 0.13 s after (noise), of which the two kernels' call overhead, 13 us, is 0.010 %
(what bundling added, about 4 us: 0.003 %). ``benchmarks/engine_rate.py`` (M events/s, two
runs each), before: UA 7.9 and 7.9, NAP+NAR 8.1 and 7.5, the NoC case 7.4 and 7.0; after:
8.3 and 7.8, 7.8 and 7.5, 7.3 and 7.6: the same, the loop's body being unchanged.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.lowering import routes
from nunasim.engine.lowering.lower import Lowered, lower
from nunasim.engine.packet import core
from nunasim.engine.packet.core import CoreInputs, CoreOutputs
from nunasim.engine.packet.engine import core_inputs, simulate
from nunasim.engine.packet.state import loop_state
from nunasim.io.presets import load_preset
from nunasim.policies.place import place
from nunasim.scenario import Scenario

# The CSR starts of the core's inputs: one entry more than their owners, so one when empty.
_STARTS = ("succ_start", "lineop_start", "flag_start", "release_start", "route_start")


@numba.njit(cache=True)
def _bundled(inputs: Any, outputs: Any) -> int:  # the dispatch of the two bundles alone
    return 0


@numba.njit(cache=True)
def _flat(*fields: Any) -> int:  # the same with the fields one by one (the former convention)
    return 0


def per_call_s(work: Callable[[], object], calls: int, repeat: int) -> float:
    """The best over ``repeat`` rounds of the mean time of one of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(calls):
            work()
        best = min(best, (time.perf_counter() - started) / calls)
    return best


def _empty(array: Any) -> Any:
    return array[:0] if isinstance(array, np.ndarray) else array


def empty_core_inputs(lowered: Lowered) -> CoreInputs:
    """A run of nothing whose inputs have the types of ``lowered``'s."""
    inputs = core_inputs(lowered)
    empty = CoreInputs(*(_empty(field) for field in inputs))
    empty = empty._replace(**{name: getattr(inputs, name)[:1] for name in _STARTS})
    assert numba.typeof(empty) == numba.typeof(inputs)
    return empty


def route_bundles(lowered_by: Callable[[], Lowered]) -> tuple[Any, ...]:
    """The arguments of the one ``_write_routes`` call ``lowered_by()`` makes."""
    seen: list[tuple[Any, ...]] = []
    kernel = routes._write_routes

    def recording(*args: Any) -> None:
        seen.append(args)
        kernel(*args)

    routes._write_routes = recording
    try:
        lowered_by()
    finally:
        routes._write_routes = kernel
    return seen[0]


def measure(calls: int, repeat: int) -> dict[str, float]:
    pod = load_preset("nextgen-4die").pod
    plan = builtin_plan("allgather:direct:gpus=2")
    placement = place(plan, 4096, pod, "NAP+NAR", "auto")
    lowered = lower(pod, plan, placement)
    empty = empty_core_inputs(lowered)
    outputs = CoreOutputs.unfilled(0, 0)
    fields = (*empty, *outputs)
    ends, network, table = route_bundles(lambda: lower(pod, plan, placement))
    empty_ends = type(ends)(*(_empty(field) for field in ends))
    empty_table = table[:0]
    assert numba.typeof(empty_ends) == numba.typeof(ends)
    # Warm: compile (or load) every specialization before timing.
    core.run(empty, outputs)
    _bundled(empty, outputs)
    _flat(*fields)
    routes._write_routes(empty_ends, network, empty_table)
    trace = simulate(lowered)
    m: dict[str, float] = {"tiny_events": trace.events}
    m["run_s"] = per_call_s(lambda: core.run(empty, outputs), calls, repeat)
    state = loop_state(empty)
    m["loop_s"] = per_call_s(lambda: core._loop(empty, outputs, state), calls, repeat)
    m["bundled_s"] = per_call_s(lambda: _bundled(empty, outputs), calls, repeat)
    m["flat_s"] = per_call_s(lambda: _flat(*fields), calls, repeat)
    m["routes_s"] = per_call_s(
        lambda: routes._write_routes(empty_ends, network, empty_table), calls, repeat
    )
    tiny = max(calls // 10, 1)
    m["tiny_simulate_s"] = per_call_s(lambda: simulate(lowered), tiny, repeat)
    m["tiny_core_s"] = min(simulate(lowered).wall_s for _ in range(tiny))
    scenario = Scenario(
        load_preset("nextgen-4die"),
        builtin_plan("allgather:direct:gpus=8"),
        "1MB",
        "NAP+NAR",
        engine="packet",
    )
    scenario.run()  # warm
    m["scenario_s"] = per_call_s(scenario.run, 1, repeat)
    return m


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    m = measure(args.calls, args.repeat)
    us = 1e6
    print(
        f"event loop on empty inputs: core.run {m['run_s'] * us:.2f} us, _loop "
        f"{m['loop_s'] * us:.2f} us per call; a compiled no-op of the two bundles "
        f"{m['bundled_s'] * us:.2f} us, of their 39 fields {m['flat_s'] * us:.2f} us "
        f"(bundling adds {(m['bundled_s'] - m['flat_s']) * us:.2f} us)"
    )
    print(f"_write_routes on empty bundles: {m['routes_s'] * us:.2f} us per call")
    print(
        f"2-GPU 4 KB All-Gather ({m['tiny_events']:.0f} events): core call "
        f"{m['tiny_core_s'] * us:.1f} us (overhead {m['run_s'] / m['tiny_core_s']:.0%}), "
        f"simulate {m['tiny_simulate_s'] * us:.1f} us"
    )
    overhead = m["run_s"] + m["routes_s"]
    added = m["bundled_s"] - m["flat_s"]
    print(
        f"8-GPU 1 MB All-Gather, NAP+NAR, packet: Scenario.run() {m['scenario_s']:.3f} s; "
        f"kernel call overhead {overhead * us:.1f} us = {overhead / m['scenario_s']:.4%} "
        f"of it (bundling's share {added / m['scenario_s']:.4%})"
    )


if __name__ == "__main__":
    main()
