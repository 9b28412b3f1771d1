"""The conformance suite: what every engine must do, checked on the same scenarios.

Every engine of the registry (``nunasim.engine.base.ENGINES``) goes through it by its
public interface alone: a built scenario (``Built``: the pod, the plan, its placement and,
for the checks' own expectations, its lowering) becomes a ``Job``, the engine prepares and
runs it, and its ``SimResult`` gives an ``EngineRun``: the completion time, the data bytes
it landed at each (GPU, stack), and a fingerprint of everything it reports that must repeat
bit for bit (as scikit-learn's ``check_estimator`` runs every estimator through the same
checks). A new engine joins by being registered; each check below is a function of one
engine and one scenario that raises on a violation. A check an engine's model cannot
satisfy is listed, with the reason, in ``NOT_MODELLED``.
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
from nunasim.engine.analytic.bound import critical_path_ps, lower_bound_ps
from nunasim.engine.base import ENGINES, Engine, Job
from nunasim.engine.lowering.lower import Lowered, lower
from nunasim.engine.result import SimResult
from nunasim.hardware import Pod
from nunasim.io.mscclpp import load_mscclpp
from nunasim.io.presets import load_preset
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


Runner = Callable[[Built], EngineRun]


def as_run(result: SimResult) -> EngineRun:
    """What the checks read of a result."""
    assert result.stack_bytes is not None, f"the {result.engine} engine gives no stack bytes"
    landed: Counter = Counter()
    for (gpu, stack), data in np.ndenumerate(result.stack_bytes):
        if data:
            landed[(gpu, stack)] += int(data)
    fingerprint = (
        result.engine,
        result.engine_revision,
        result.completion_ps,
        result.gpu_completion_ps.tobytes(),
        result.lower_bound_ps,
        result.messages,
        result.events,
        result.bytes_delivered,
        result.data_bytes_delivered,
        result.stores.to_csv(),
        result.resources.to_csv(),
    )
    return EngineRun(result.completion_ps, landed, fingerprint)


def runner(engine: Engine) -> Runner:
    """``engine`` as the checks call it: a built scenario in, its run out."""

    def run(built: Built) -> EngineRun:
        job = Job(built.pod, built.plan, built.placement)
        engine.admit(built.plan, built.placement.chunk_bytes, built.pod.socket)
        prepared = engine.prepare(job)
        result = prepared.run()
        assert result is not None  # no deadline
        assert result.lower_bound_ps == prepared.lower_bound_ps
        return as_run(result)

    return run


def engine_runner(name: str) -> Runner:
    """The registered engine called ``name``, as the checks call it."""
    return runner(ENGINES[name])


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


def check_zero_load_is_exact(engine: Runner, case: Case) -> None:
    """With nothing to wait for, the run takes exactly its zero-load critical path."""
    built = case.build()
    run = engine(built)
    assert run.completion_ps == critical_path_ps(built.lowered), case


def check_conserves_bytes(engine: Runner, case: Case) -> None:
    """Every data byte of the plan lands once, at the stack its placement gives it."""
    built = case.build()
    amap = built.placement.address_map
    expected: Counter = Counter()
    for gpu, address, data in expected_lines(built.plan, built.placement):
        expected[(gpu, amap.stack_of(address))] += data
    assert engine(built).landed == expected, case


def check_respects_the_lower_bound(engine: Runner, case: Case) -> None:
    """No run beats the analytic lower bound (critical path, busiest resource)."""
    built = case.build()
    completion = engine(built).completion_ps
    lowered = built.lowered
    assert completion >= lower_bound_ps(lowered) >= critical_path_ps(lowered) > 0, case


def check_is_deterministic(engine: Runner, case: Case) -> None:
    """The same scenario twice gives bit-identical reports."""
    built = case.build()
    assert engine(built) == engine(built), case


def check_slower_plane_is_never_faster(engine: Runner, case: Case) -> None:
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
