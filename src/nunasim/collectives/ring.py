"""Ring algorithms, for comparison with the direct ones: GPU g only talks to g+1 and g-1.

Threadblock r of every GPU forms ring channel r and carries the chunks ``j`` with
``j % tbs == r`` of every block. In round s GPU h works on block ``(h - s) mod G``: it
receives that block from h-1 (except in round 0) and passes it on to h+1 (except in the
last round). Rounds are issued round-major, so a channel's chunks pipeline.
"""

from __future__ import annotations

from collections.abc import Callable

from nunasim.collectives.builder import PlanBuilder
from nunasim.collectives.plan import Buffer, Chunks, Collective, Plan, StepId


def _channels(chunks: int, tbs: int) -> list[list[int]]:
    if tbs > chunks:
        raise ValueError(f"{tbs} ring channels need at least {tbs} chunks per block; got {chunks}")
    return [[j for j in range(chunks) if j % tbs == r] for r in range(tbs)]


def _ring_steps(
    b: PlanBuilder,
    gpus: int,
    tbs: int,
    chunks: int,
    rounds: int,
    step: Callable[[int, int, int, int, Chunks], StepId],
    buffer: Buffer,
) -> dict[tuple[int, int, int], StepId]:
    """Every GPU's ring threadblocks (one per channel, sending to the next GPU and
    receiving from the previous one) and their steps: ``step(h, r, s, j, here)`` adds round
    ``s`` of chunk ``j`` on GPU ``h``'s channel ``r``, where ``here`` is the block that
    round handles in ``buffer``."""
    steps: dict[tuple[int, int, int], StepId] = {}
    for h in range(gpus):
        for r, mine in enumerate(_channels(chunks, tbs)):
            b.threadblock(h, send_peer=(h + 1) % gpus, recv_peer=(h - 1) % gpus, channel=r)
            for s in range(rounds):
                for j in mine:
                    here = Chunks(buffer, ((h - s) % gpus) * chunks + j)
                    steps[(h, s, j)] = step(h, r, s, j, here)
    return steps


def _link(
    b: PlanBuilder,
    steps: dict[tuple[int, int, int], StepId],
    gpus: int,
    rounds: int,
    chunks: int,
    landing,
) -> None:
    """Connect round s on GPU h to round s+1 on h+1 for every chunk."""
    for h in range(gpus):
        nxt = (h + 1) % gpus
        for s in range(rounds - 1):
            for j in range(chunks):
                block = (nxt - (s + 1)) % gpus
                b.transfer(
                    steps[(h, s, j)], nxt, landing(nxt, s + 1, block, j), steps[(nxt, s + 1, j)]
                )


def allgather(gpus: int, tbs: int, chunks: int) -> Plan:
    b = PlanBuilder.builtin(
        f"allgather:ring:gpus={gpus}:tbs={tbs}:chunks={chunks}",
        Collective.ALLGATHER,
        gpus,
        gpus * chunks,
        True,
    )
    rounds = gpus

    def step(h: int, r: int, s: int, j: int, here: Chunks) -> StepId:
        if s == 0:
            return b.step(h, r, "s", reads=[here])
        if s < rounds - 1:
            return b.step(h, r, "rcs", reads=[here])
        return b.step(h, r, "r")

    steps = _ring_steps(b, gpus, tbs, chunks, rounds, step, Buffer.OUTPUT)
    _link(
        b,
        steps,
        gpus,
        rounds,
        chunks,
        lambda h, s, block, j: Chunks(Buffer.OUTPUT, block * chunks + j),
    )
    return b.build()


def allreduce(gpus: int, tbs: int, chunks: int) -> Plan:
    """Ring reduce-scatter (G-1 rounds) then ring all-gather (G-1 rounds), in place, with
    the fused steps of MSCCL: s, rrs..., rrcs, rcs..., r."""
    b = PlanBuilder.builtin(
        f"allreduce:ring:gpus={gpus}:tbs={tbs}:chunks={chunks}",
        Collective.ALLREDUCE,
        gpus,
        gpus * chunks,
        True,
    )
    rounds = 2 * gpus - 1
    slots = [b.scratch(h, (gpus - 1) * chunks) for h in range(gpus)]

    def slot(h: int, s: int, j: int) -> Chunks:  # arrival of reduce-scatter round s (1..G-1)
        return Chunks(Buffer.SCRATCH, slots[h].index + (s - 1) * chunks + j)

    def step(h: int, r: int, s: int, j: int, here: Chunks) -> StepId:
        if s == 0:
            return b.step(h, r, "s", reads=[here])
        if s < gpus - 1:
            return b.step(h, r, "rrs", reads=[here, slot(h, s, j)])
        if s == gpus - 1:
            return b.step(h, r, "rrcs", reads=[here, slot(h, s, j)], writes=[here])
        if s < rounds - 1:
            return b.step(h, r, "rcs", reads=[here])
        return b.step(h, r, "r")

    steps = _ring_steps(b, gpus, tbs, chunks, rounds, step, Buffer.INPUT)

    def landing(h: int, s: int, block: int, j: int) -> Chunks:
        return slot(h, s, j) if s <= gpus - 1 else Chunks(Buffer.INPUT, block * chunks + j)

    _link(b, steps, gpus, rounds, chunks, landing)
    return b.build()
