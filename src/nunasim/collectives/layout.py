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
class Aliasing:
    """How an in-place plan folds one buffer into the other (the table above): the one
    definition every importer and the layout below use."""

    collective: Collective
    inplace: bool
    ngpus: int
    chunks_per_size: int

    @classmethod
    def of(cls, plan: Plan) -> Aliasing:
        return cls(plan.collective, plan.inplace, plan.ngpus, plan.chunks_per_size)

    @property
    def folded(self) -> Buffer | None:
        """The buffer an in-place plan folds into the other one (None out of place)."""
        if not self.inplace:
            return None
        if self.collective in (Collective.ALLGATHER, Collective.BROADCAST):
            return Buffer.INPUT
        return Buffer.OUTPUT

    def home(self, gpu: int, buffer: Buffer, index: int) -> tuple[Buffer, int]:
        """Where chunk ``index`` of ``buffer`` on ``gpu`` lives in the canonical form."""
        if buffer != self.folded:
            return buffer, index
        other = Buffer.OUTPUT if buffer == Buffer.INPUT else Buffer.INPUT
        if self.collective in (Collective.ALLGATHER, Collective.REDUCESCATTER):
            return other, gpu * (self.chunks_per_size // self.ngpus) + index
        return other, index

    def counts(self, input_chunks: int, output_chunks: int) -> tuple[int, int]:
        """(input, output) chunk counts once folded: the folded buffer has none and the
        canonical one holds both, and at least the collective's ``chunks_per_size``."""
        if self.folded is None:
            return input_chunks, output_chunks
        both = max(input_chunks, output_chunks, self.chunks_per_size)
        return (0, both) if self.folded == Buffer.INPUT else (both, 0)


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
    coll, alias = plan.collective, Aliasing.of(plan)
    for g in range(plan.ngpus):
        if coll == Collective.BROADCAST and g != plan.root:
            continue
        for j in range(block if coll == Collective.ALLGATHER else n):
            yield Location(g, *alias.home(g, Buffer.INPUT, j)), atom(plan, g, j)


def outputs(plan: Plan) -> Iterator[tuple[Location, tuple[int, ...]]]:
    """(where a result chunk must be, the sorted atoms it must hold) for every result."""
    n, block, gpus = plan.chunks_per_size, _block(plan), range(plan.ngpus)
    coll, alias = plan.collective, Aliasing.of(plan)

    def at(g: int, k: int) -> Location:
        return Location(g, *alias.home(g, Buffer.OUTPUT, k))

    for g in gpus:
        if coll == Collective.ALLGATHER:
            for k in range(n):
                yield at(g, k), (atom(plan, k // block, k % block),)
        elif coll == Collective.REDUCESCATTER:
            for j in range(block):
                yield at(g, j), tuple(sorted(atom(plan, p, g * block + j) for p in gpus))
        elif coll == Collective.ALLREDUCE:
            for k in range(n):
                yield at(g, k), tuple(sorted(atom(plan, p, k) for p in gpus))
        elif coll == Collective.ALLTOALL:
            for k in range(n):
                source, j = divmod(k, block)
                yield at(g, k), (atom(plan, source, g * block + j),)
        elif coll == Collective.BROADCAST:
            for k in range(n):
                yield at(g, k), (atom(plan, plan.root, k),)
        elif coll == Collective.REDUCE and g == plan.root:
            for k in range(n):
                yield at(g, k), tuple(sorted(atom(plan, p, k) for p in gpus))
