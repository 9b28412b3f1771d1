"""The mapping layer: the accesses of a plan and their resolved lines agree, line by line,
with the placement's own addresses and the address map's decoding."""

import numpy as np
import pytest

from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.mapping.accesses import LOAD, PROTOCOLS, STORE, plan_accesses, step_groups
from nunasim.mapping.placement import BUFFERS
from nunasim.mapping.resolve import resolve
from nunasim.policies.place import place

POD = load_preset("nextgen-4die").pod


@pytest.mark.parametrize(
    ("spec", "config", "layout"),
    [
        ("allgather:direct:gpus=8:tbs=14", "UA", "aligned"),
        ("allreduce:ring:gpus=4", "NAP+NAR", "packed"),
        ("alltoall:direct:gpus=4", "NUMA+NAR", "aligned"),
    ],
)
def test_resolved_lines_are_the_placements_lines(spec, config, layout):
    plan = builtin_plan(spec)
    placement = place(plan, 300_000, POD, config, 4, layout=layout)
    accesses = plan_accesses(plan)
    lines = resolve(plan, placement, accesses)
    amap, per_chunk = placement.address_map, placement.lines_per_chunk
    assert lines.size == int(accesses.count.sum()) * per_chunk
    at = 0
    for a in range(len(accesses.kind)):
        gpu, memory = int(accesses.gpu[a]), int(accesses.memory_gpu[a])
        expected = placement.line_addresses(
            memory, BUFFERS[accesses.buffer[a]], int(accesses.chunk[a]), int(accesses.count[a])
        )
        rows = slice(at, at + len(expected))
        at += len(expected)
        assert (lines.access[rows] == a).all()
        assert (lines.address[rows] == expected).all()
        assert (lines.stack[rows] == amap.stacks_of(expected)).all()
        crossing = accesses.kind[a] in (LOAD, STORE)
        ports = amap.ports_of(expected) if crossing else np.full(len(expected), -1)
        assert (lines.port[rows] == ports).all()
        assert (lines.gpu[rows] == gpu).all() and (lines.memory_gpu[rows] == memory).all()
        cu = placement.gpus[gpu].tb_cu[accesses.tb[a]]
        assert (lines.cu[rows] == cu).all()
        assert (lines.router[rows] == POD.socket.cu_router(int(cu))).all()


def test_the_access_table_lists_every_group_of_every_step():
    plan = builtin_plan("allreduce:direct:gpus=4:tbs=6")
    accesses = plan_accesses(plan)
    rows = []
    for number, (sid, step) in enumerate(plan.steps()):
        for sources, sinks in step_groups(plan, sid, step):
            rows += [(number, a.kind, a.gpu, a.chunks.index, a.protocol) for a in sources + sinks]
    table = list(
        zip(
            accesses.step.tolist(),
            accesses.kind.tolist(),
            accesses.memory_gpu.tolist(),
            accesses.chunk.tolist(),
            [PROTOCOLS[p] for p in accesses.protocol],
            strict=True,
        )
    )
    assert table == rows
    assert (np.diff(accesses.group) >= 0).all()
    remote = resolve(plan, place(plan, 100_000, POD, "UA")).remote()
    assert remote.size and (remote.memory_gpu != remote.gpu).all()
