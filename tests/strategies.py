"""Hypothesis strategies for random valid hardware."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from nunasim.hardware import Die, Mesh, Pod, Port, Socket, Stack


@st.composite
def sockets(draw, max_width: int = 12, max_height: int = 8) -> Socket:
    width = draw(st.integers(1, max_width))
    height = draw(st.integers(1, max_height))
    mesh = Mesh(width, height)
    cuts = sorted(draw(st.sets(st.integers(1, width - 1), max_size=3))) if width > 1 else []
    bounds = [0, *cuts, width]
    dies = tuple(Die(bounds[i], 0, bounds[i + 1] - 1, height - 1) for i in range(len(bounds) - 1))
    router = st.integers(0, mesh.routers - 1)
    cu_routers = tuple(sorted(draw(st.sets(router, min_size=1))))
    # The end dies may be I/O dies (no compute units; their links their own latency and
    # width), when a compute unit is left elsewhere.
    io_ends = draw(st.booleans()) and len(dies) > 2
    io_routers = {
        mesh.router(x, y)
        for die in (dies[0], dies[-1])
        for x in range(die.x0, die.x1 + 1)
        for y in range(height)
    }
    if io_ends and set(cu_routers) - io_routers:
        cu_routers = tuple(r for r in cu_routers if r not in io_routers)
        dies = (replace(dies[0], kind="io"), *dies[1:-1], replace(dies[-1], kind="io"))
        io = {
            "io_crossing_cycles": draw(st.integers(0, 40)),
            "io_link_bandwidth": draw(st.floats(1e10, 2e12)),
        }
    else:
        io = {}
    stacks = tuple(
        Stack(r, draw(st.floats(1e11, 5e12)), draw(st.integers(0, 300_000)))
        for r in draw(st.lists(router, min_size=1, max_size=6))
    )
    ports: list[Port] = []
    for r in draw(st.lists(router, min_size=1, max_size=5)):
        ports.extend(Port(r) for _ in range(draw(st.integers(1, 6))))
    return Socket(
        mesh=mesh,
        dies=dies,
        cu_routers=cu_routers,
        cus_per_router=draw(st.integers(1, 4)),
        l1_latency_ps=draw(st.integers(0, 200_000)),
        outstanding_requests=draw(st.integers(1, 1000)),
        flops=(("bf16", 1e15),),
        noc_clock_hz=draw(st.sampled_from([1.0e9, 1.2e9, 2.0e9])),
        cycles_per_hop=draw(st.integers(1, 12)),
        die_crossing_cycles=draw(st.integers(0, 6)),
        link_bandwidth=draw(st.floats(1e10, 2e12)),
        routing=draw(st.sampled_from(["xy", "yx"])),
        line_bytes=256,
        page_bytes=4096,
        stacks=stacks,
        ports=tuple(ports),
        **io,
    )


@st.composite
def pods(draw) -> Pod:
    return Pod(
        socket=draw(sockets()),
        sockets=draw(st.integers(2, 64)),
        plane_latency_ps=draw(st.integers(0, 1_000_000)),
        port_bandwidth=draw(st.floats(1e9, 2e11)),
    )


# Built-in algorithms small enough to simulate on random floorplans.
BUILTIN_ALGORITHMS = [
    "allgather:direct",
    "reducescatter:direct",
    "allreduce:direct",
    "alltoall:direct",
    "allgather:ring",
    "allreduce:ring",
]
