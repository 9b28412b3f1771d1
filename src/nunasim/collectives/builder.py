"""Building a Plan step by step; generators and importers use it, then freeze the result."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from nunasim.collectives.layout import Aliasing
from nunasim.collectives.plan import (
    Buffer,
    Chunks,
    Collective,
    GpuProgram,
    Plan,
    Protocol,
    RemoteChunks,
    Step,
    StepId,
    Threadblock,
    Transfer,
)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a large plan is built: the hundreds of
    thousands of objects a 64-GPU plan is made of would otherwise set off full collections
    that walk every object the process holds (three quarters of the plan's build time).
    Nothing the builder makes is garbage meanwhile, so nothing is collected later."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class _StepDraft:
    op: str
    reads: list[Chunks]
    loads: list[RemoteChunks]
    writes: list[Chunks]
    deps: list[tuple[int, int]]
    signals: bool = True
    sends: list[int] = field(default_factory=list)
    recvs: list[int] = field(default_factory=list)


@dataclass
class _TbDraft:
    send_peer: int
    recv_peer: int
    channel: int
    steps: list[_StepDraft] = field(default_factory=list)


@dataclass
class _GpuDraft:
    input_chunks: int
    output_chunks: int
    scratch_chunks: int
    tbs: list[_TbDraft] = field(default_factory=list)


class PlanBuilder:
    def __init__(
        self,
        name: str,
        collective: Collective,
        ngpus: int,
        *,
        input_chunks: int,
        output_chunks: int,
        scratch_chunks: int = 0,
        chunks_per_size: int,
        inplace: bool = False,
        root: int = 0,
        source: str = "",
    ) -> None:
        self.name = name
        self.collective = collective
        self.chunks_per_size = chunks_per_size
        self.inplace = inplace
        self.root = root
        self.source = source
        self.notes: list[str] = []
        self._gpus = [_GpuDraft(input_chunks, output_chunks, scratch_chunks) for _ in range(ngpus)]
        self._transfers: list[Transfer] = []

    @classmethod
    def builtin(
        cls, name: str, collective: Collective, ngpus: int, chunks_per_size: int, inplace: bool
    ) -> PlanBuilder:
        """A built-in's builder: its buffers as large as the collective needs, folded in
        place as ``Aliasing`` says."""
        n, block = chunks_per_size, chunks_per_size // ngpus
        sizes = {Collective.ALLGATHER: (block, n), Collective.REDUCESCATTER: (n, block)}
        input_chunks, output_chunks = Aliasing(collective, inplace, ngpus, n).counts(
            *sizes.get(collective, (n, n))
        )
        return cls(
            name,
            collective,
            ngpus,
            input_chunks=input_chunks,
            output_chunks=output_chunks,
            chunks_per_size=n,
            inplace=inplace,
            source="builtin",
        )

    @property
    def ngpus(self) -> int:
        return len(self._gpus)

    def set_buffers(self, gpu: int, input_chunks: int, output_chunks: int, scratch: int) -> None:
        draft = self._gpus[gpu]
        draft.input_chunks, draft.output_chunks, draft.scratch_chunks = (
            input_chunks,
            output_chunks,
            scratch,
        )

    def threadblock(
        self, gpu: int, send_peer: int = -1, recv_peer: int = -1, channel: int = 0
    ) -> int:
        self._gpus[gpu].tbs.append(_TbDraft(send_peer, recv_peer, channel))
        return len(self._gpus[gpu].tbs) - 1

    def threadblocks(self, gpu: int) -> int:
        return len(self._gpus[gpu].tbs)

    def step(
        self,
        gpu: int,
        tb: int,
        op: str,
        *,
        reads: list[Chunks] | tuple[Chunks, ...] = (),
        loads: list[RemoteChunks] | tuple[RemoteChunks, ...] = (),
        writes: list[Chunks] | tuple[Chunks, ...] = (),
        deps: list[tuple[int, int]] | tuple[tuple[int, int], ...] = (),
        signals: bool = True,
    ) -> StepId:
        steps = self._gpus[gpu].tbs[tb].steps
        steps.append(_StepDraft(op, list(reads), list(loads), list(writes), list(deps), signals))
        return StepId(gpu, tb, len(steps) - 1)

    def add_dep(self, sid: StepId, on: StepId) -> None:
        if on.gpu != sid.gpu:
            raise ValueError("dependencies join steps of one GPU; use a transfer across GPUs")
        self._draft(sid).deps.append((on.tb, on.step))

    def scratch(self, gpu: int, count: int) -> Chunks:
        """Fresh scratch chunks on ``gpu`` (a landing area for data that is reduced on arrival)."""
        draft = self._gpus[gpu]
        chunks = Chunks(Buffer.SCRATCH, draft.scratch_chunks, count)
        draft.scratch_chunks += count
        return chunks

    def transfer(
        self,
        src: StepId,
        dst_gpu: int,
        dst: Chunks | None,
        receiver: StepId | None,
        protocol: Protocol = Protocol.SIMPLE,
        source: Chunks | None = None,
    ) -> int:
        """Record a remote store from ``src`` into ``dst`` on ``dst_gpu`` in ``protocol`` (and
        what tells ``receiver`` it has landed: a flag, or the data itself); with ``source``,
        it stores those local chunks rather than the step's combined value."""
        xfer = len(self._transfers)
        self._transfers.append(Transfer(src, dst_gpu, dst, receiver, protocol, source))
        self._draft(src).sends.append(xfer)
        if receiver is not None:
            self._draft(receiver).recvs.append(xfer)
        return xfer

    def _draft(self, sid: StepId) -> _StepDraft:
        return self._gpus[sid.gpu].tbs[sid.tb].steps[sid.step]

    def build(self) -> Plan:
        gpus = tuple(
            GpuProgram(
                input_chunks=g.input_chunks,
                output_chunks=g.output_chunks,
                scratch_chunks=g.scratch_chunks,
                threadblocks=tuple(
                    Threadblock(
                        steps=tuple(
                            Step(
                                op=s.op,
                                reads=tuple(s.reads),
                                loads=tuple(s.loads),
                                writes=tuple(s.writes),
                                sends=tuple(s.sends),
                                recvs=tuple(s.recvs),
                                deps=tuple(s.deps),
                                signals=s.signals,
                            )
                            for s in tb.steps
                        ),
                        send_peer=tb.send_peer,
                        recv_peer=tb.recv_peer,
                        channel=tb.channel,
                    )
                    for tb in g.tbs
                ),
            )
            for g in self._gpus
        )
        return Plan(
            name=self.name,
            collective=self.collective,
            gpus=gpus,
            transfers=tuple(self._transfers),
            chunks_per_size=self.chunks_per_size,
            inplace=self.inplace,
            root=self.root,
            source=self.source,
            notes=tuple(self.notes),
        )
