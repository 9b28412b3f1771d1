"""NAR ``auto``'s estimate, counted by pairs, against the estimate written line by line.

``estimate_ps`` counts the remote lines per (router, port), (port, stack), (GPU, port) and
(GPU, stack) instead of listing them; the reference below is the formula over every
resolved line (``remote_lines``), as the estimate was first written. Both must agree to
the bit: the estimate picks the granularity, and a tie broken differently would change
which placement a run uses.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.collectives.plan import Plan
from nunasim.hardware import Pod
from nunasim.io.presets import load_preset
from nunasim.mapping.placement import Placement
from nunasim.mapping.resolve import remote_chunks, remote_lines
from nunasim.policies import estimate
from nunasim.policies.estimate import estimate_ps
from nunasim.policies.place import auto_granularities, place
from nunasim.units import transfer_ps


def reference_estimate_ps(plan: Plan, placement: Placement, pod: Pod) -> float:
    socket = placement.socket
    chunks, per_chunk = remote_chunks(plan), placement.lines_per_chunk
    sampled = min(per_chunk, max(1, estimate.MAX_ESTIMATE_LINES // max(chunks, 1)))
    lines = remote_lines(plan, placement, None if sampled == per_chunk else sampled)
    scale = 1 if sampled == per_chunk else per_chunk / sampled
    if not lines.size:
        return 0.0
    port = socket.port_routers[lines.port]
    table = socket.router_paths.latency_ps
    stack_latency = np.array([s.latency_ps for s in socket.stacks], dtype=np.int64)
    latency = (
        socket.l1_latency_ps
        + (table[lines.router, port] + table[port, socket.stack_routers[lines.stack]]).mean()
        + pod.port_flit_ps
        + pod.plane_latency_ps
        + stack_latency[lines.stack].mean()
    )
    ports, stacks = len(socket.ports), len(socket.stacks)
    egress = np.bincount(lines.gpu * ports + lines.port).max() * scale
    ingress = np.bincount(lines.memory_gpu * ports + lines.port).max() * scale
    stack_flit = np.array([transfer_ps(socket.line_bytes, s.bandwidth) for s in socket.stacks])
    per_stack = np.bincount(
        lines.memory_gpu * stacks + lines.stack, minlength=plan.ngpus * stacks
    ).reshape(plan.ngpus, stacks)
    stack_time = (per_stack * stack_flit[None, :]).max() * scale
    return float(latency + max(egress, ingress) * pod.port_flit_ps + stack_time)


@settings(max_examples=15, deadline=None)
@given(
    collective=st.sampled_from(["allgather", "allreduce", "alltoall"]),
    algorithm=st.sampled_from(["direct", "ring"]),
    gpus=st.sampled_from([2, 3, 4, 8]),
    per_gpu=st.integers(1, 3),
    size=st.integers(1, 3_000_000),
    config=st.sampled_from(["UA+NAR", "NUMA+NAR", "NAP", "NAP+NAR", "NAP*+NAR"]),
    preset=st.sampled_from(["nextgen-4die", "nextgen-2die"]),
)
def test_estimate_by_pairs_is_the_estimate_line_by_line(
    collective: str,
    algorithm: str,
    gpus: int,
    per_gpu: int,
    size: int,
    config: str,
    preset: str,
) -> None:
    if algorithm == "ring" and collective == "alltoall":
        algorithm = "direct"
    tbs = per_gpu * (gpus - 1) if algorithm == "direct" else per_gpu
    plan = builtin_plan(f"{collective}:{algorithm}:gpus={gpus}:tbs={tbs}")
    pod = load_preset(preset).fit(gpus).pod
    for granularity in auto_granularities(pod.socket):
        placement = place(plan, size, pod, config, granularity)
        assert estimate_ps(plan, placement, pod) == reference_estimate_ps(plan, placement, pod)


@pytest.mark.parametrize("granularity", [2, 4, 12])
def test_estimate_of_a_sampled_collective_is_the_sampled_estimate_line_by_line(
    granularity: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # More remote lines than one estimate resolves (the limit lowered, so that a small
    # collective needs it): both sample each chunk's first lines and scale the counts up.
    monkeypatch.setattr(estimate, "MAX_ESTIMATE_LINES", 1000)
    plan = builtin_plan("allgather:direct:gpus=8:tbs=14")
    pod = load_preset("nextgen-4die").fit(8).pod
    placement = place(plan, 10**6, pod, "NAP+NAR", granularity)
    assert remote_chunks(plan) * placement.lines_per_chunk > estimate.MAX_ESTIMATE_LINES
    assert estimate_ps(plan, placement, pod) == reference_estimate_ps(plan, placement, pod)


def test_the_estimate_and_the_oracle_take_the_same_trip_of_a_store() -> None:
    # ``Pod.store_trip`` is the one list of a remote store's zero-load terms: its total is
    # every field (a term added there reaches the estimate), and the oracle's store latency
    # is the same trip from the source NoC on, term for term as the hardware gives them.
    from nunasim.engine.analytic.bound import store_latency_ps

    pod = load_preset("nextgen-4die").fit(2).pod
    socket = pod.socket
    trip = pod.store_trip(1_234, 567)
    assert trip.total_ps == sum(trip)
    assert trip.after_l1_ps == sum(trip) - socket.l1_latency_ps
    for cu_router, port, stack in [(0, 0, 0), (5, 3, 2), (socket.mesh.routers - 1, 7, 1)]:
        port_router = socket.ports[port].router
        memory = socket.stacks[stack]
        expected = (
            socket.path_latency_ps(cu_router, port_router)
            + pod.port_flit_ps
            + pod.plane_latency_ps
            + socket.path_latency_ps(port_router, memory.router)
            + memory.latency_ps
        )
        assert store_latency_ps(pod, cu_router, port, stack) == expected
        assert pod.store_trip_at(cu_router, port, stack).total_ps == (
            socket.l1_latency_ps + expected
        )
