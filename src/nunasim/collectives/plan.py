"""The collective plan IR: what every threadblock of every GPU does, step by step.

A plan is frozen data at threadblock granularity, close to MSCCL's ``<algo>/<gpu>/<tb>/
<step>`` but with every remote endpoint explicit, in the load/store model of a scale-up
network with a shared address space:

- A **step** waits for its same-GPU dependencies (``deps``) and for the flags of the
  transfers it receives (``recvs``); then it reads its local chunks (``reads``) and remote
  chunks (``loads``), combines them (one source: a copy; several: a reduction), writes the
  result to its local chunks (``writes``), and stores it to other GPUs (``sends``).
  When it completes it signals the steps of its GPU that depend on it, unless it is marked
  as not signalling (``signals``, below).
- A **transfer** is one remote store of ``count`` chunks from a sending step into a chunk
  range (``dst``) on another GPU. When it has a receiving step, the sender fences on the
  stores' acknowledgements and then writes a flag that the receiving step waits for. A
  transfer with no chunks (``count == 0``) is a flag alone (a signal); one with no
  receiving step is a put whose readers synchronise through a later signal. A transfer
  normally stores the step's combined value; one with a ``source`` stores a copy of those
  local chunks instead, so one step can put several sources to several destinations (a
  fused multi-destination put), each (source, destination) pair a transfer of its own.
- **Signalling dependants.** A step that another step of its GPU depends on publishes its
  completion in its threadblock's flag, which only grows, so a dependant waiting for step
  s of threadblock t is released by the first step of t at or after s that signals. A
  step with ``signals=False`` publishes nothing (MSCCL's ``hasdep="0"``): a dependant
  waiting on it is released by a later signalling step of its threadblock, or never.
  ``Plan.signaller`` resolves a dependency to the step that releases it.

Data moves in chunks: each GPU has ``input``, ``output`` and ``scratch`` buffers of a whole
number of chunks, all chunks of a plan the same size. ``Plan.chunk_bytes(size)`` turns a
collective size into a chunk size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

from nunasim.errors import ConfigError


class Collective(StrEnum):
    ALLGATHER = "allgather"
    REDUCESCATTER = "reducescatter"
    ALLREDUCE = "allreduce"
    ALLTOALL = "alltoall"
    BROADCAST = "broadcast"
    REDUCE = "reduce"


class Buffer(StrEnum):
    INPUT = "i"
    OUTPUT = "o"
    SCRATCH = "s"


@dataclass(frozen=True, order=True)
class Chunks:
    """``count`` consecutive chunks of one buffer, starting at ``index``."""

    buffer: Buffer
    index: int
    count: int = 1

    def indices(self) -> range:
        return range(self.index, self.index + self.count)

    def __str__(self) -> str:
        if self.count == 1:
            return f"{self.buffer}[{self.index}]"
        return f"{self.buffer}[{self.index}:{self.index + self.count}]"


@dataclass(frozen=True)
class RemoteChunks:
    """Chunks of another GPU's buffer."""

    gpu: int
    chunks: Chunks

    def __str__(self) -> str:
        return f"gpu {self.gpu} {self.chunks}"


@dataclass(frozen=True)
class Step:
    op: str  # the source format's name for it (MSCCL: s, r, rcs, rrc, ...), for messages
    reads: tuple[Chunks, ...] = ()
    loads: tuple[RemoteChunks, ...] = ()
    writes: tuple[Chunks, ...] = ()
    sends: tuple[int, ...] = ()  # transfer ids
    recvs: tuple[int, ...] = ()  # transfer ids whose flags this step waits for
    deps: tuple[tuple[int, int], ...] = ()  # (threadblock, step) on the same GPU
    signals: bool = True  # publishes its completion to same-GPU dependants (MSCCL hasdep)

    @property
    def count(self) -> int:
        """Chunks the step moves (every range of a step has the same count)."""
        ranges = [*self.reads, *(r.chunks for r in self.loads), *self.writes]
        return ranges[0].count if ranges else 0

    @property
    def combines(self) -> int:
        """How many sources the step combines (2 or more is a reduction)."""
        return len(self.reads) + len(self.loads)


@dataclass(frozen=True)
class Threadblock:
    steps: tuple[Step, ...]
    send_peer: int = -1  # informational, from the source format
    recv_peer: int = -1
    channel: int = 0


@dataclass(frozen=True)
class GpuProgram:
    input_chunks: int
    output_chunks: int
    scratch_chunks: int
    threadblocks: tuple[Threadblock, ...]

    def buffer_chunks(self, buffer: Buffer) -> int:
        return {
            Buffer.INPUT: self.input_chunks,
            Buffer.OUTPUT: self.output_chunks,
            Buffer.SCRATCH: self.scratch_chunks,
        }[buffer]


@dataclass(frozen=True)
class StepId:
    gpu: int
    tb: int
    step: int

    def __str__(self) -> str:
        return f"gpu {self.gpu} tb {self.tb} step {self.step}"


@dataclass(frozen=True)
class Transfer:
    src: StepId
    dst_gpu: int
    dst: Chunks | None  # landing chunks on dst_gpu; None for a flag alone
    receiver: StepId | None  # the step that waits for the flag; None for a plain put
    # Local chunks of the sending GPU this store copies; None: the step's combined value.
    source: Chunks | None = None

    @property
    def count(self) -> int:
        return self.dst.count if self.dst else 0


@dataclass(frozen=True)
class Plan:
    name: str
    collective: Collective
    gpus: tuple[GpuProgram, ...]
    transfers: tuple[Transfer, ...]
    chunks_per_size: int  # the collective size splits into this many chunks
    inplace: bool = False
    root: int = 0  # for broadcast and reduce
    source: str = ""  # file or builtin name it came from
    notes: tuple[str, ...] = field(default=())  # importer remarks worth showing a user

    @property
    def ngpus(self) -> int:
        return len(self.gpus)

    def chunk_bytes(self, size: int) -> int:
        """Bytes of one chunk when the collective moves ``size`` bytes.

        ``size`` is the larger of a GPU's input and output buffers (MSCCL's ``nBytes``):
        the gathered output of an All-Gather, the full input of a Reduce-Scatter, the buffer
        of an All-Reduce, the whole send buffer of an All-to-All. A size that does not split
        evenly is padded up to whole bytes per chunk.
        """
        if size <= 0:
            raise ConfigError(f"a collective size must be positive; got {size} bytes")
        return math.ceil(size / self.chunks_per_size)

    def step(self, sid: StepId) -> Step:
        return self.gpus[sid.gpu].threadblocks[sid.tb].steps[sid.step]

    def signaller(self, gpu: int, dep: tuple[int, int]) -> StepId | None:
        """The step whose signal releases a dependency ``dep`` = (threadblock, step) of a
        step on ``gpu``: the first step of that threadblock at or after the named one that
        signals (flags only grow), or None if none does and the dependant waits forever."""
        tb, first = dep
        steps = self.gpus[gpu].threadblocks[tb].steps
        for s in range(first, len(steps)):
            if steps[s].signals:
                return StepId(gpu, tb, s)
        return None

    def steps(self):
        """Every (StepId, Step) of the plan, GPU by GPU, threadblock by threadblock."""
        for g, program in enumerate(self.gpus):
            for t, tb in enumerate(program.threadblocks):
                for s, step in enumerate(tb.steps):
                    yield StepId(g, t, s), step

    @cached_property
    def step_count(self) -> int:
        return sum(len(tb.steps) for p in self.gpus for tb in p.threadblocks)

    @cached_property
    def threadblocks_per_gpu(self) -> tuple[int, ...]:
        return tuple(len(p.threadblocks) for p in self.gpus)
