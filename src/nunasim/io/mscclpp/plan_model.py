"""What an MSCCL++ plan is read into before it becomes the plan IR.

The buffer layout (chunk counts and the in-place canonical form), the per-GPU and
per-threadblock tables (channels, remote buffers, semaphores), resolved buffer references,
remote stores, and ``_Op``, one parsed op: what its step reads and writes and how it
synchronises. Plain data shared by the importer, the op parser and the pairing of
synchronisation, so it sits below all three.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nunasim.collectives.layout import Aliasing
from nunasim.collectives.plan import (
    Buffer,
    Chunks,
    Collective,
    RemoteChunks,
    StepId,
)

_Channel = tuple[str, int]  # (channel type, GPU-level channel index)
_Location = tuple[int, Buffer, int]  # (gpu, buffer, chunk)


# --- plan-wide tables ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """Chunk counts and the in-place canonical form of buffer references."""

    collective: Collective
    inplace: bool
    ngpus: int
    input_chunks: int  # as in the file, the same on every GPU
    output_chunks: int
    scratch_chunks: tuple[int, ...]  # per GPU

    @property
    def chunks_per_size(self) -> int:
        if self.collective == Collective.ALLGATHER:
            return self.output_chunks
        return self.input_chunks

    @property
    def aliasing(self) -> Aliasing:
        return Aliasing(self.collective, self.inplace, self.ngpus, self.chunks_per_size)

    def declared(self, gpu: int, buffer: Buffer) -> int:
        """Chunks of ``buffer`` as the file declares them (before folding)."""
        if buffer == Buffer.INPUT:
            return self.input_chunks
        if buffer == Buffer.OUTPUT:
            return self.output_chunks
        return self.scratch_chunks[gpu]

    def ir_chunks(self, buffer: Buffer) -> int:
        return 0 if buffer == self.aliasing.folded else self.declared(0, buffer)

    def canonical(self, gpu: int, buffer: Buffer, index: int, count: int) -> Chunks:
        return Chunks(*self.aliasing.home(gpu, buffer, index), count)


@dataclass
class _GpuTables:
    channels: dict[str, list[int]]  # channel type -> peer of each GPU-level channel
    remote_buffers: list[tuple[int, Buffer, frozenset[str]]]  # (rank, buffer, channel types)
    semaphores: list[int]  # initial values


@dataclass
class _TbTables:
    channels: dict[str, list[int]]  # channel type -> GPU-level channel of each TB channel
    remote: dict[str, list[int]]  # channel type -> index into the GPU's remote_buffers


@dataclass(frozen=True)
class _Ref:
    """One resolved buffer reference: canonical chunks on ``gpu``."""

    gpu: int
    chunks: Chunks
    remote: bool
    where: str


@dataclass(frozen=True)
class _Store:
    """A remote write of an op."""

    gpu: int
    chunks: Chunks
    packet: bool
    signal: _Channel | None  # the channel it signals (port pws/pwsf), if any
    where: str
    source: Chunks | None = None  # its own local source (a fused put); None: the step's value


@dataclass
class _Op:
    """One MSCCL++ op, parsed: what its step reads and writes and how it synchronises."""

    name: str
    where: str
    sid: StepId
    reads: list[Chunks] = field(default_factory=list)
    loads: list[RemoteChunks] = field(default_factory=list)
    writes: list[Chunks] = field(default_factory=list)
    stores: list[_Store] = field(default_factory=list)
    signals: list[_Channel] = field(default_factory=list)
    waits: list[_Channel] = field(default_factory=list)
    packet_reads: list[Chunks] = field(default_factory=list)
    packet_writes: list[Chunks] = field(default_factory=list)  # local
    barrier: tuple[int, int] | None = None  # (barrier_id, num_threadblocks)
    acquires: list[int] = field(default_factory=list)
    releases: list[int] = field(default_factory=list)

    def sizes(self) -> list[int]:
        ranges = [*self.reads, *(r.chunks for r in self.loads), *self.writes]
        ranges += [s.source for s in self.stores if s.source is not None]
        return [c.count for c in ranges] + [s.chunks.count for s in self.stores]
