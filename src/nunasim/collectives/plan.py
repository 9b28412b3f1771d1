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
  range (``dst``) on another GPU, in a wire ``protocol``. Under ``Simple``, when it has a
  receiving step, the sender fences on the stores' acknowledgements and then writes a flag
  that the receiving step waits for. Under a data-polled protocol (``LL``, ``LL128``,
  MSCCL++ packets) every line carries its own flag: there is no fence and no flag message,
  and the receiving step polls the data itself. A transfer with no chunks (``count == 0``)
  is a flag alone (a signal) under ``Simple``; under a data-polled protocol it sends
  nothing, and its receiver polls the data of the sending step's previous data transfer to
  the same GPU (several readers of one packet store). A transfer with no receiving step is
  a put whose readers synchronise through a later signal. A
  transfer normally stores the step's combined value; one with a ``source`` stores a copy of
  those local chunks instead, so one step can put several sources to several destinations
  (a fused multi-destination put), each (source, destination) pair a transfer of its own.
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
from dataclasses import dataclass, field, replace
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


class Protocol(StrEnum):
    """How a transfer's data travels: its wire format and its ordering rule.

    ``SIMPLE`` lines carry data only; the receiver learns of them through a flag written
    after a fence. The others interleave flags with the data (MSCCL and NCCL ``LL`` and
    ``LL128``; MSCCL++ packets, which its plans call ``LL``), so a line carries less data
    and the receiver polls the data itself.
    """

    SIMPLE = "Simple"
    LL = "LL"
    LL128 = "LL128"
    PACKET = "packet"

    @property
    def data_polled(self) -> bool:
        """True when receivers poll the data's inline flags (no fence, no flag message)."""
        return self is not Protocol.SIMPLE

    def data_bytes_per_line(self, line_bytes: int) -> int:
        """Data bytes one line of ``line_bytes`` carries in this wire format."""
        data, word = _WIRE_WORDS[self]
        if line_bytes % word:
            raise ValueError(f"a {line_bytes} B line is not a whole number of {self} words")
        return line_bytes // word * data

    def lines(self, data_bytes: int, line_bytes: int) -> int:
        """Lines that ``data_bytes`` of data occupy in this wire format."""
        return lines_for(data_bytes, self.data_bytes_per_line(line_bytes))


def lines_for(data_bytes: int, data_per_line: int) -> int:
    """Lines that ``data_bytes`` of data occupy at ``data_per_line`` data bytes a line, the
    last one perhaps part full: ``Protocol.lines`` once a format's data per line is known,
    and plain lines (no format: a line's bytes of data each)."""
    return -(-data_bytes // data_per_line)


# The protocols' definitions, as (data bytes, bytes) of the word that carries them: LL puts
# an 8 B flag beside every 8 B of data; LL128 puts 8 B of flag in every 128 B; an MSCCL++
# packet is LL's 16 B word (two 4 B data values, each beside its 4 B flag).
LL_DATA_BYTES, LL_WORD_BYTES = 8, 16
LL128_DATA_BYTES, LL128_WORD_BYTES = 120, 128
PACKET_DATA_BYTES, PACKET_WORD_BYTES = 8, 16
_WIRE_WORDS = {
    Protocol.SIMPLE: (1, 1),
    Protocol.LL: (LL_DATA_BYTES, LL_WORD_BYTES),
    Protocol.LL128: (LL128_DATA_BYTES, LL128_WORD_BYTES),
    Protocol.PACKET: (PACKET_DATA_BYTES, PACKET_WORD_BYTES),
}


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
    protocol: Protocol = Protocol.SIMPLE
    # Local chunks of the sending GPU this store copies; None: the step's combined value.
    source: Chunks | None = None

    @property
    def count(self) -> int:
        return self.dst.count if self.dst else 0


@dataclass(frozen=True)
class Plan:
    """A collective's program: each GPU's threadblocks and their steps, and every transfer
    between GPUs (docs/plans.md)."""

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

    @property
    def protocols(self) -> frozenset[Protocol]:
        """The protocols of the plan's data transfers."""
        return frozenset(t.protocol for t in self.transfers if t.dst is not None)

    def with_protocol(self, protocol: Protocol | str) -> Plan:
        """The same plan with every data transfer in ``protocol``. A flag alone stays what
        it was: a ``Simple`` signal, or a reader polling the data before it (which becomes a
        ``Simple`` signal if the data does)."""
        protocol = Protocol(protocol)

        def converted(t: Transfer) -> Protocol:
            if t.dst is not None or (t.protocol.data_polled and protocol.data_polled):
                return protocol
            return Protocol.SIMPLE

        transfers = tuple(replace(t, protocol=converted(t)) for t in self.transfers)
        return replace(self, transfers=transfers)

    @cached_property
    def step_count(self) -> int:
        return sum(len(tb.steps) for p in self.gpus for tb in p.threadblocks)

    @cached_property
    def threadblocks_per_gpu(self) -> tuple[int, ...]:
        return tuple(len(p.threadblocks) for p in self.gpus)
