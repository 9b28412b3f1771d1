"""Statistics of a placement: zero-load hop counts of its remote traffic, budget use, and
load per NAR domain and per port. Averages are over lines (flits), so a chunk weighs by
its size."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.mapping.placement import BUFFERS, Placement
from nunasim.policies.budget import cu_budget, stack_budget, tb_demand
from nunasim.policies.paths import remote_legs


@dataclass(frozen=True)
class PlacementStats:
    config: str
    granularity: int
    remote_lines: int
    avg_cu_port_hops: float
    max_cu_port_hops: int
    avg_port_stack_hops: float
    max_port_stack_hops: int
    cu_budget_max_use: float  # busiest CU's demand / its budget
    cus_used: int  # distinct CUs hosting a threadblock, summed over GPUs
    stack_budget_max_use: float  # busiest stack's placed lines / its budget
    fallback_threadblocks: int
    fallback_chunks: int
    port_lines_max: int  # lines through the busiest (GPU, port) egress
    port_lines_mean: float  # over (GPU, port) pairs
    domain_lines: tuple[int, ...]  # lines leaving through each domain's ports (placement's
    # granularity), all GPUs together
    layout: str = "aligned"  # how chunks sit in pages
    padding_bytes: int = 0  # bytes of pages beyond the data, all buffers of all GPUs

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def placement_stats(plan: Plan, placement: Placement) -> PlacementStats:
    socket = placement.socket
    legs = remote_legs(plan, placement)
    lines, cu_port, port_stack = legs.lines, legs.cu_port_hops, legs.port_stack_hops
    remote = lines.size

    cu_use, cus_used = 0.0, 0
    for g, gpu in enumerate(placement.gpus):
        budget = cu_budget(socket)
        for tb, cu in enumerate(gpu.tb_cu):
            budget.used[cu] += tb_demand(
                plan, g, tb, placement.chunk_bytes, socket.line_bytes, socket.outstanding_requests
            )
        cu_use = max(cu_use, float((budget.used / budget.capacity).max()))
        cus_used += len(set(gpu.tb_cu.tolist()))

    stack_use = 0.0
    amap = placement.address_map
    for g in range(len(placement.gpus)):
        budget = stack_budget(socket)
        for buffer in BUFFERS:
            chunks = plan.gpus[g].buffer_chunks(buffer)
            if chunks:
                stacks = amap.stacks_of(placement.line_addresses(g, buffer, 0, chunks))
                budget.used += np.bincount(stacks, minlength=len(socket.stacks))
        stack_use = max(stack_use, float((budget.used / budget.capacity).max()))

    ports = len(socket.ports)
    per_port = np.bincount(lines.gpu * ports + lines.port, minlength=plan.ngpus * ports)
    g = placement.granularity
    domain_of_port = np.arange(ports) // (ports // g)
    domains = np.bincount(domain_of_port[lines.port], minlength=g) if remote else np.zeros(g)
    return PlacementStats(
        config=placement.config.name,
        granularity=g,
        remote_lines=remote,
        avg_cu_port_hops=float(cu_port.mean()) if remote else 0.0,
        max_cu_port_hops=int(cu_port.max()) if remote else 0,
        avg_port_stack_hops=float(port_stack.mean()) if remote else 0.0,
        max_port_stack_hops=int(port_stack.max()) if remote else 0,
        cu_budget_max_use=cu_use,
        cus_used=cus_used,
        stack_budget_max_use=stack_use,
        fallback_threadblocks=placement.fallback_tbs,
        fallback_chunks=placement.fallback_chunks,
        port_lines_max=int(per_port.max()),
        port_lines_mean=float(per_port.mean()),
        domain_lines=tuple(int(x) for x in domains),
        layout=placement.layout_mode,
        padding_bytes=placement.padding_bytes,
    )
