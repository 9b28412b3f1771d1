"""Ring algorithms, for comparison with the direct ones: GPU g only talks to g+1 and g-1.

Threadblock r of every GPU forms ring channel r and carries the chunks ``j`` with
``j % tbs == r`` of every block. In round s GPU h works on block ``(h - s) mod G``: it
receives that block from h-1 (except in round 0) and passes it on to h+1 (except in the
last round). Rounds are issued round-major, so a channel's chunks pipeline.
"""

from __future__ import annotations

from nunasim.collectives.builder import PlanBuilder
from nunasim.collectives.plan import Buffer, Chunks, Collective, Plan, StepId


def _channels(chunks: int, tbs: int) -> list[list[int]]:
    if tbs > chunks:
        raise ValueError(f"{tbs} ring channels need at least {tbs} chunks per block; got {chunks}")
    return [[j for j in range(chunks) if j % tbs == r] for r in range(tbs)]


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
    b = PlanBuilder(
        f"allgather:ring:gpus={gpus}:tbs={tbs}:chunks={chunks}",
        Collective.ALLGATHER,
        gpus,
        input_chunks=0,
        output_chunks=gpus * chunks,
        chunks_per_size=gpus * chunks,
        inplace=True,
        source="builtin",
    )
    rounds = gpus
    steps: dict[tuple[int, int, int], StepId] = {}
    for h in range(gpus):
        for r, mine in enumerate(_channels(chunks, tbs)):
            b.threadblock(h, send_peer=(h + 1) % gpus, recv_peer=(h - 1) % gpus, channel=r)
            for s in range(rounds):
                for j in mine:
                    here = Chunks(Buffer.OUTPUT, ((h - s) % gpus) * chunks + j)
                    if s == 0:
                        steps[(h, s, j)] = b.step(h, r, "s", reads=[here])
                    elif s < rounds - 1:
                        steps[(h, s, j)] = b.step(h, r, "rcs", reads=[here])
                    else:
                        steps[(h, s, j)] = b.step(h, r, "r")
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
    b = PlanBuilder(
        f"allreduce:ring:gpus={gpus}:tbs={tbs}:chunks={chunks}",
        Collective.ALLREDUCE,
        gpus,
        input_chunks=gpus * chunks,
        output_chunks=0,
        chunks_per_size=gpus * chunks,
        inplace=True,
        source="builtin",
    )
    rounds = 2 * gpus - 1
    slots = [b.scratch(h, (gpus - 1) * chunks) for h in range(gpus)]

    def slot(h: int, s: int, j: int) -> Chunks:  # arrival of reduce-scatter round s (1..G-1)
        return Chunks(Buffer.SCRATCH, slots[h].index + (s - 1) * chunks + j)

    steps: dict[tuple[int, int, int], StepId] = {}
    for h in range(gpus):
        for r, mine in enumerate(_channels(chunks, tbs)):
            b.threadblock(h, send_peer=(h + 1) % gpus, recv_peer=(h - 1) % gpus, channel=r)
            for s in range(rounds):
                for j in mine:
                    here = Chunks(Buffer.INPUT, ((h - s) % gpus) * chunks + j)
                    if s == 0:
                        sid = b.step(h, r, "s", reads=[here])
                    elif s < gpus - 1:
                        sid = b.step(h, r, "rrs", reads=[here, slot(h, s, j)])
                    elif s == gpus - 1:
                        sid = b.step(h, r, "rrcs", reads=[here, slot(h, s, j)], writes=[here])
                    elif s < rounds - 1:
                        sid = b.step(h, r, "rcs", reads=[here])
                    else:
                        sid = b.step(h, r, "r")
                    steps[(h, s, j)] = sid

    def landing(h: int, s: int, block: int, j: int) -> Chunks:
        return slot(h, s, j) if s <= gpus - 1 else Chunks(Buffer.INPUT, block * chunks + j)

    _link(b, steps, gpus, rounds, chunks, landing)
    return b.build()
