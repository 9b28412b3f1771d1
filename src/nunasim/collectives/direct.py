"""Direct (all-pairs) algorithms: every GPU exchanges with every other GPU in one round.

These are the latency-optimised algorithms the paper evaluates (section 5.1). Work is
split into *items* ``(peer, j)``: chunk ``j`` of the block exchanged with ``peer``. Each
GPU lists its peers starting from its right-hand neighbour (g+1, g+2, ...) so that the
first stores of all GPUs go to different peers, and hands the items out round-robin over
its threadblocks. A threadblock first stores all its items to their peers, then waits for
the items coming back from the same peers. Data that is reduced on arrival lands in
scratch, one slot per (peer, chunk), so no two stores ever share a location.
"""

from __future__ import annotations

from collections.abc import Callable

from nunasim.collectives.builder import PlanBuilder
from nunasim.collectives.plan import Buffer, Chunks, Collective, Plan, StepId


def _peers(gpu: int, gpus: int) -> list[int]:
    return [(gpu + d) % gpus for d in range(1, gpus)]


def _slot(receiver: int, sender: int, gpus: int) -> int:
    """Index of ``sender`` among ``receiver``'s peers."""
    return (sender - receiver - 1) % gpus


def _items(gpu: int, gpus: int, chunks: int, tbs: int) -> list[list[tuple[int, int]]]:
    items = [(p, j) for p in _peers(gpu, gpus) for j in range(chunks)]
    if tbs > len(items):
        raise ValueError(
            f"{tbs} threadblocks but only {len(items)} (peer, chunk) items per GPU; "
            f"use at most {len(items)} threadblocks or more chunks per peer"
        )
    per_tb: list[list[tuple[int, int]]] = [[] for _ in range(tbs)]
    for i, item in enumerate(items):
        per_tb[i % tbs].append(item)
    return per_tb


def _owner(gpu: int, peer: int, j: int, gpus: int, chunks: int, tbs: int) -> int:
    """The threadblock of ``gpu`` that handles item (peer, j)."""
    return (_slot(gpu, peer, gpus) * chunks + j) % tbs


def _exchange(
    b: PlanBuilder,
    gpus: int,
    chunks: int,
    tbs: int,
    source: Callable[[int, int, int], Chunks],
    landing: Callable[[int, int, int], Chunks],
    deps: Callable[[int, int, int], list[StepId]] | None = None,
) -> tuple[dict[tuple[int, int, int], StepId], dict[tuple[int, int, int], StepId]]:
    """One all-pairs round: each GPU g stores ``source(g, p, j)`` into ``landing(p, g, j)``
    on every peer p. Returns the storing step of every item keyed (sender, receiver, j)
    and the receiving step keyed (receiver, sender, j). ``deps(g, p, j)`` lists same-GPU
    steps a store must wait for."""
    sends: dict[tuple[int, int, int], StepId] = {}
    for g in range(gpus):
        for t, items in enumerate(_items(g, gpus, chunks, tbs)):
            for p, j in items:
                sid = b.step(g, t, "s", reads=[source(g, p, j)])
                for dep in deps(g, p, j) if deps else ():
                    b.add_dep(sid, dep)
                sends[(g, p, j)] = sid
    receives: dict[tuple[int, int, int], StepId] = {}
    for g in range(gpus):
        for t, items in enumerate(_items(g, gpus, chunks, tbs)):
            for p, j in items:
                rx = b.step(g, t, "r")
                b.transfer(sends[(p, g, j)], g, landing(g, p, j), rx)
                receives[(g, p, j)] = rx
    return sends, receives


def _threadblocks(b: PlanBuilder, gpus: int, tbs: int, chunks: int) -> None:
    for g in range(gpus):
        per_tb = _items(g, gpus, chunks, tbs)
        for items in per_tb:
            peers = {p for p, _ in items}
            peer = peers.pop() if len(peers) == 1 else -1
            b.threadblock(g, send_peer=peer, recv_peer=peer)


def allgather(gpus: int, tbs: int, chunks: int, inplace: bool = True) -> Plan:
    b = PlanBuilder.builtin(
        f"allgather:direct:gpus={gpus}:tbs={tbs}:chunks={chunks}:inplace={int(inplace)}",
        Collective.ALLGATHER,
        gpus,
        gpus * chunks,
        inplace,
    )
    _threadblocks(b, gpus, tbs, chunks)
    copies: dict[tuple[int, int], StepId] = {}
    if not inplace:
        # Each GPU copies its own block into place; stores then read the copy's source.
        for g in range(gpus):
            for j in range(chunks):
                copies[(g, j)] = b.step(
                    g,
                    j % tbs,
                    "cpy",
                    reads=[Chunks(Buffer.INPUT, j)],
                    writes=[Chunks(Buffer.OUTPUT, g * chunks + j)],
                )

    def own(g: int, p: int, j: int) -> Chunks:
        return Chunks(Buffer.OUTPUT, g * chunks + j) if inplace else Chunks(Buffer.INPUT, j)

    _exchange(b, gpus, chunks, tbs, own, lambda g, p, j: Chunks(Buffer.OUTPUT, p * chunks + j))
    return b.build()


def alltoall(gpus: int, tbs: int, chunks: int) -> Plan:
    b = PlanBuilder.builtin(
        f"alltoall:direct:gpus={gpus}:tbs={tbs}:chunks={chunks}",
        Collective.ALLTOALL,
        gpus,
        gpus * chunks,
        False,
    )
    _threadblocks(b, gpus, tbs, chunks)
    for g in range(gpus):
        for j in range(chunks):
            b.step(
                g,
                j % tbs,
                "cpy",
                reads=[Chunks(Buffer.INPUT, g * chunks + j)],
                writes=[Chunks(Buffer.OUTPUT, g * chunks + j)],
            )
    _exchange(
        b,
        gpus,
        chunks,
        tbs,
        lambda g, p, j: Chunks(Buffer.INPUT, p * chunks + j),
        lambda g, p, j: Chunks(Buffer.OUTPUT, p * chunks + j),
    )
    return b.build()


def _reduce_round(
    b: PlanBuilder,
    gpus: int,
    chunks: int,
    tbs: int,
    data: Buffer,
    result: Buffer,
    result_index: Callable[[int, int], int],
) -> dict[tuple[int, int], StepId]:
    """All-pairs reduce-scatter: every GPU sends block p of ``data`` to peer p's scratch;
    peer p then reduces its own block with the arrivals into ``result``. Returns the reduce
    step of each (gpu, j)."""
    slots = [b.scratch(g, (gpus - 1) * chunks) for g in range(gpus)]
    _, receives = _exchange(
        b,
        gpus,
        chunks,
        tbs,
        lambda g, p, j: Chunks(data, p * chunks + j),
        lambda g, p, j: Chunks(Buffer.SCRATCH, slots[g].index + _slot(g, p, gpus) * chunks + j),
    )
    reduces: dict[tuple[int, int], StepId] = {}
    for g in range(gpus):
        for j in range(chunks):
            arrivals = [
                Chunks(Buffer.SCRATCH, slots[g].index + _slot(g, p, gpus) * chunks + j)
                for p in _peers(g, gpus)
            ]
            sid = b.step(
                g,
                _owner(g, (g + 1) % gpus, j, gpus, chunks, tbs),
                "re",
                reads=[Chunks(data, g * chunks + j), *arrivals],
                writes=[Chunks(result, result_index(g, j))],
            )
            for p in _peers(g, gpus):
                b.add_dep(sid, receives[(g, p, j)])
            reduces[(g, j)] = sid
    return reduces


def reducescatter(gpus: int, tbs: int, chunks: int) -> Plan:
    b = PlanBuilder.builtin(
        f"reducescatter:direct:gpus={gpus}:tbs={tbs}:chunks={chunks}",
        Collective.REDUCESCATTER,
        gpus,
        gpus * chunks,
        False,
    )
    _threadblocks(b, gpus, tbs, chunks)
    _reduce_round(b, gpus, chunks, tbs, Buffer.INPUT, Buffer.OUTPUT, lambda g, j: j)
    return b.build()


def allreduce(gpus: int, tbs: int, chunks: int) -> Plan:
    """Reduce-scatter then all-gather, in place: block g of the buffer is reduced on GPU g
    and then stored straight into every peer's buffer."""
    b = PlanBuilder.builtin(
        f"allreduce:direct:gpus={gpus}:tbs={tbs}:chunks={chunks}",
        Collective.ALLREDUCE,
        gpus,
        gpus * chunks,
        True,
    )
    _threadblocks(b, gpus, tbs, chunks)
    reduces = _reduce_round(
        b, gpus, chunks, tbs, Buffer.INPUT, Buffer.INPUT, lambda g, j: g * chunks + j
    )
    _exchange(
        b,
        gpus,
        chunks,
        tbs,
        lambda g, p, j: Chunks(Buffer.INPUT, g * chunks + j),
        lambda g, p, j: Chunks(Buffer.INPUT, p * chunks + j),
        deps=lambda g, p, j: [reduces[(g, j)]],
    )
    return b.build()


def allreduce_onepass(gpus: int, tbs: int, chunks: int) -> Plan:
    """One round: every GPU stores its whole buffer into every peer's scratch and reduces
    all arrivals locally. Fewer round trips than reduce-scatter + all-gather, G-1 times
    the data. ``chunks`` is the buffer's chunk count."""
    b = PlanBuilder.builtin(
        f"allreduce:onepass:gpus={gpus}:tbs={tbs}:chunks={chunks}",
        Collective.ALLREDUCE,
        gpus,
        chunks,
        True,
    )
    _threadblocks(b, gpus, tbs, chunks)
    slots = [b.scratch(g, (gpus - 1) * chunks) for g in range(gpus)]

    def arrival(g: int, p: int, k: int) -> Chunks:
        return Chunks(Buffer.SCRATCH, slots[g].index + _slot(g, p, gpus) * chunks + k)

    sends, receives = _exchange(
        b, gpus, chunks, tbs, lambda g, p, k: Chunks(Buffer.INPUT, k), arrival
    )
    for g in range(gpus):
        for k in range(chunks):
            owner = _owner(g, (g + 1) % gpus, k, gpus, chunks, tbs)
            sid = b.step(
                g,
                owner,
                "re",
                reads=[Chunks(Buffer.INPUT, k), *(arrival(g, p, k) for p in _peers(g, gpus))],
                writes=[Chunks(Buffer.INPUT, k)],
            )
            for p in _peers(g, gpus):
                b.add_dep(sid, receives[(g, p, k)])
            # The result overwrites chunk k, so every store of the original must be done.
            for p in _peers(g, gpus):
                b.add_dep(sid, sends[(g, p, k)])
    return b.build()
