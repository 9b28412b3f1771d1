"""Where a collective's data starts and where its result must end, per GPU and chunk.

``N`` is the plan's ``chunks_per_size`` (MSCCL's ``nchunksperloop``) and ``G`` its GPU
count. An *atom* is one input chunk of one GPU before the collective runs, numbered
``gpu * N + chunk``; a chunk's value is the multiset of atoms reduced into it.

In-place plans use one buffer for both roles, canonically (as MSCCL does):

| collective    | in-place canonical form                                 |
|---------------|---------------------------------------------------------|
| allgather     | input chunk j of GPU g lives at ``o[g * N/G + j]``       |
| reducescatter | output chunk j of GPU g lives at ``i[g * N/G + j]``      |
| allreduce     | output lives in ``i``                                    |
| alltoall      | output lives in ``i``                                    |
| broadcast     | the root's input lives in ``o``                          |
| reduce        | the root's output lives in ``i``                         |
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from nunasim.collectives.plan import Buffer, Collective, Plan


@dataclass(frozen=True)
class Location:
    gpu: int
    buffer: Buffer
    chunk: int

    def __str__(self) -> str:
        return f"gpu {self.gpu} {self.buffer}[{self.chunk}]"


def atom(plan: Plan, gpu: int, chunk: int) -> int:
    return gpu * plan.chunks_per_size + chunk


def describe_atom(plan: Plan, value: int) -> str:
    gpu, chunk = divmod(value, plan.chunks_per_size)
    return f"input {chunk} of gpu {gpu}"


def _block(plan: Plan) -> int:
    n, g = plan.chunks_per_size, plan.ngpus
    if plan.collective in (Collective.ALLGATHER, Collective.REDUCESCATTER, Collective.ALLTOALL):
        if n % g:
            raise ValueError(
                f"a {plan.collective} plan on {g} GPUs needs a chunk count divisible by {g}; "
                f"it has {n}"
            )
        return n // g
    return n


def inputs(plan: Plan) -> Iterator[tuple[Location, int]]:
    """(where the chunk starts, its atom) for every input chunk of every GPU."""
    n, block = plan.chunks_per_size, _block(plan)
    coll = plan.collective
    for g in range(plan.ngpus):
        if coll == Collective.ALLGATHER:
            for j in range(block):
                where = (
                    Location(g, Buffer.OUTPUT, g * block + j)
                    if plan.inplace
                    else Location(g, Buffer.INPUT, j)
                )
                yield where, atom(plan, g, j)
        elif coll == Collective.BROADCAST:
            if g == plan.root:
                buffer = Buffer.OUTPUT if plan.inplace else Buffer.INPUT
                for k in range(n):
                    yield Location(g, buffer, k), atom(plan, g, k)
        else:
            for k in range(n):
                yield Location(g, Buffer.INPUT, k), atom(plan, g, k)


def outputs(plan: Plan) -> Iterator[tuple[Location, tuple[int, ...]]]:
    """(where a result chunk must be, the sorted atoms it must hold) for every result."""
    n, block, gpus = plan.chunks_per_size, _block(plan), range(plan.ngpus)
    coll, inplace = plan.collective, plan.inplace
    out = Buffer.INPUT if inplace else Buffer.OUTPUT
    for g in gpus:
        if coll == Collective.ALLGATHER:
            for k in range(n):
                yield Location(g, Buffer.OUTPUT, k), (atom(plan, k // block, k % block),)
        elif coll == Collective.REDUCESCATTER:
            for j in range(block):
                where = (
                    Location(g, Buffer.INPUT, g * block + j)
                    if inplace
                    else Location(g, Buffer.OUTPUT, j)
                )
                yield where, tuple(sorted(atom(plan, p, g * block + j) for p in gpus))
        elif coll == Collective.ALLREDUCE:
            for k in range(n):
                yield Location(g, out, k), tuple(sorted(atom(plan, p, k) for p in gpus))
        elif coll == Collective.ALLTOALL:
            for k in range(n):
                source, j = divmod(k, block)
                yield Location(g, out, k), (atom(plan, source, g * block + j),)
        elif coll == Collective.BROADCAST:
            for k in range(n):
                yield Location(g, Buffer.OUTPUT, k), (atom(plan, plan.root, k),)
        elif coll == Collective.REDUCE and g == plan.root:
            for k in range(n):
                yield Location(g, out, k), tuple(sorted(atom(plan, p, k) for p in gpus))
