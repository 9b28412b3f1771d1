"""The conformance suite: what every engine must do, checked on the same scenarios.

An engine is a function from a built scenario (``Built``: the pod, the plan, its placement
and its lowering) to an ``EngineRun``: its completion time, the data bytes it landed at
each (GPU, stack), and a fingerprint of everything it reports that must repeat bit for bit.
A new engine joins the suite by adding itself to ``ENGINES`` (as scikit-learn's
``check_estimator`` runs every estimator through the same checks); each check below is a
function of one engine and one scenario that raises on a violation. A check an engine's
model cannot satisfy is listed, with the reason, in ``NOT_MODELLED``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from conservation import expected_lines
from nunasim.collectives.builtins import builtin_plan
from nunasim.collectives.plan import Plan
from nunasim.engine.analytic import critical_path_ps, lower_bound_ps
from nunasim.engine.flow.demand import flow_demands
from nunasim.engine.flow.engine import _tables, simulate_flow
from nunasim.engine.lower import Lowered, lower
from nunasim.engine.messages import STORE, WRITE
from nunasim.engine.packet.engine import simulate
from nunasim.engine.resources import resource_numbering
from nunasim.hardware import Pod
from nunasim.io.mscclpp import load_mscclpp
from nunasim.io.presets import load_preset
from nunasim.mapping.accesses import plan_accesses
from nunasim.mapping.placement import Placement
from nunasim.policies.place import place
from small_plans import one_store_plan

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "plans")


class EngineRun(NamedTuple):
    completion_ps: int
    landed: Counter  # (GPU, stack) -> data bytes written or stored there
    fingerprint: tuple  # everything the engine reports, to compare run against run


class Built(NamedTuple):
    pod: Pod
    plan: Plan
    placement: Placement
    lowered: Lowered


Engine = Callable[[Built], EngineRun]


def packet_engine(built: Built) -> EngineRun:
    lowered = built.lowered
    trace = simulate(lowered)
    delivered = np.isin(lowered.msg_kind, [STORE, WRITE]) & (trace.msg_done >= 0)
    landed: Counter = Counter()
    for gpu, stack, data in zip(
        lowered.msg_dst_gpu[delivered].tolist(),
        lowered.msg_stack[delivered].tolist(),
        lowered.msg_bytes[delivered].tolist(),
        strict=True,
    ):
        landed[(gpu, stack)] += data
    fingerprint = (
        trace.events,
        trace.step_begin.tobytes(),
        trace.step_end.tobytes(),
        trace.msg_issue.tobytes(),
        trace.msg_done.tobytes(),
        trace.res_flits.tobytes(),
        trace.res_wait_max.tobytes(),
    )
    return EngineRun(int(trace.step_end.max()), landed, fingerprint)


def flow_engine(built: Built) -> EngineRun:
    pod, plan, placement, _ = built
    result = simulate_flow(pod, plan, placement)
    numbering = resource_numbering(pod, plan.ngpus)
    demands = flow_demands(
        pod, plan, placement, plan_accesses(plan), numbering, _tables(pod), "bf16"
    )
    landed: Counter = Counter()
    for (gpu, stack), data in np.ndenumerate(demands.landed):
        if data:
            landed[(gpu, stack)] += int(data)
    fingerprint = (
        result.gpu_completion_ps.tobytes(),
        result.lower_bound_ps,
        result.stores.to_csv(),
        result.resources.to_csv(),
    )
    return EngineRun(result.completion_ps, landed, fingerprint)


ENGINES: dict[str, Engine] = {"packet": packet_engine, "flow": flow_engine}

# Checks an engine's model cannot pass, and why.
NOT_MODELLED = {
    ("flow", "check_zero_load_is_exact"): "a flow drains at a rate before its tail latency: "
    "one line costs its bottleneck's occupancy on top of the zero-load path",
}


@dataclass(frozen=True)
class Case:
    """One scenario: a plan (built-in name or fixture file), a size and a configuration."""

    plan: str
    size: int
    config: str
    preset: str = "nextgen-4die"

    def __str__(self) -> str:
        return f"{self.plan}@{self.size}-{self.config}-{self.preset}"

    def build(self, pod: Pod | None = None) -> Built:
        plan = (
            load_mscclpp(os.path.join(FIXTURES, self.plan))
            if self.plan.endswith(".json")
            else one_store_plan()
            if self.plan == "one-store"
            else builtin_plan(self.plan)
        )
        pod = pod or load_preset(self.preset).pod.with_sockets(plan.ngpus)
        placement = place(plan, self.size, pod, self.config)
        return Built(pod, plan, placement, lower(pod, plan, placement))


CASES = [
    Case("allgather:direct:gpus=4:tbs=6", 100_000, "UA"),
    Case("allgather:direct:gpus=8", 1_000_000, "NAP+NAR"),
    Case("allgather:direct:gpus=4:proto=LL", 64_000, "UA+NAR"),
    Case("reducescatter:direct:gpus=4", 100_000, "NAP*"),
    Case("allreduce:direct:gpus=3", 30_000, "NUMA+NAR"),
    Case("allreduce:ring:gpus=4:tbs=2:chunks=2", 64_000, "NAP+NAR"),
    Case("alltoall:direct:gpus=8", 100_000, "NUMA"),
    Case("allgather:ring:gpus=3", 30_000, "NAP"),
    Case("reducescatter:direct:gpus=16", 100_000, "NAP"),
    Case("allreduce_packet.json", 64 * 1024, "NAP+NAR"),
    Case("allreduce.json", 64 * 1024, "NAP*+NAR"),
]

# One store at zero load, on every shipped floorplan.
ZERO_LOAD_CASES = [
    Case("one-store", 256, config, preset)
    for preset in ("nextgen-4die", "nextgen-2die", "monolithic")
    for config in ("UA", "UA+NAR", "NAP+NAR")
]


def check_zero_load_is_exact(engine: Engine, case: Case) -> None:
    """With nothing to wait for, the run takes exactly its zero-load critical path."""
    built = case.build()
    run = engine(built)
    assert run.completion_ps == critical_path_ps(built.lowered), case


def check_conserves_bytes(engine: Engine, case: Case) -> None:
    """Every data byte of the plan lands once, at the stack its placement gives it."""
    built = case.build()
    amap = built.placement.address_map
    expected: Counter = Counter()
    for gpu, address, data in expected_lines(built.plan, built.placement):
        expected[(gpu, amap.stack_of(address))] += data
    assert engine(built).landed == expected, case


def check_respects_the_lower_bound(engine: Engine, case: Case) -> None:
    """No run beats the analytic lower bound (critical path, busiest resource)."""
    built = case.build()
    completion = engine(built).completion_ps
    lowered = built.lowered
    assert completion >= lower_bound_ps(lowered) >= critical_path_ps(lowered) > 0, case


def check_is_deterministic(engine: Engine, case: Case) -> None:
    """The same scenario twice gives bit-identical reports."""
    built = case.build()
    assert engine(built) == engine(built), case


def check_slower_plane_is_never_faster(engine: Engine, case: Case) -> None:
    """Lengthening the switch plane's latency never shortens a run."""
    pod, *_ = case.build()
    times = [
        engine(case.build(replace(pod, plane_latency_ps=ps))).completion_ps
        for ps in (pod.plane_latency_ps // 2, pod.plane_latency_ps, 2 * pod.plane_latency_ps)
    ]
    assert times == sorted(times), (case, times)


CHECKS = [
    check_conserves_bytes,
    check_respects_the_lower_bound,
    check_is_deterministic,
    check_slower_plane_is_never_faster,
]
