"""Access sets: the chunks each threadblock touches, as NAP's logical allocation needs them.

A chunk is the paper's tuple ``(chunk_id, buffer_type, gpu_id)`` (section 4.2). For each
(gpu, threadblock):

- ``local_reads``: chunks of its own GPU it reads;
- ``local_writes``: chunks of its own GPU it writes, including the chunks that peers store
  into its GPU for a step of this threadblock to wait on (the data lands next to the flag
  this threadblock polls, so NAP should keep them together);
- ``remote_writes``: chunks of other GPUs it stores into;
- ``remote_reads``: chunks of other GPUs it loads;
- ``received``: the chunks peers store into its GPU for it to wait on (also in
  ``local_writes``).

``communication`` is the data the threadblock exchanges with other GPUs: its remote reads
and writes and what it receives.

Each tuple appears once per set, however many times or loop iterations it is touched.
"""

from __future__ import annotations

from dataclasses import dataclass

from nunasim.collectives.plan import Chunks, Plan

ChunkTuple = tuple[int, str, int]  # (chunk_id, buffer_type, gpu_id)


@dataclass(frozen=True)
class AccessSet:
    local_reads: frozenset[ChunkTuple]
    local_writes: frozenset[ChunkTuple]
    remote_reads: frozenset[ChunkTuple]
    remote_writes: frozenset[ChunkTuple]
    received: frozenset[ChunkTuple] = frozenset()

    @property
    def communication(self) -> frozenset[ChunkTuple]:
        return self.remote_reads | self.remote_writes | self.received

    @property
    def chunks(self) -> frozenset[ChunkTuple]:
        """Every chunk the threadblock touches."""
        return self.local_reads | self.local_writes | self.remote_reads | self.remote_writes


def _tuples(gpu: int, chunks: Chunks) -> list[ChunkTuple]:
    buffer = str(chunks.buffer)  # once, not once a chunk: an enum's str is slow
    return [(k, buffer, gpu) for k in chunks.indices()]


def access_sets(plan: Plan) -> dict[tuple[int, int], AccessSet]:
    """The access set of every (gpu, threadblock), in GPU then threadblock order."""
    sets: dict[tuple[int, int], AccessSet] = {}
    for g, program in enumerate(plan.gpus):
        for t, tb in enumerate(program.threadblocks):
            lr: set[ChunkTuple] = set()
            lw: set[ChunkTuple] = set()
            rr: set[ChunkTuple] = set()
            rw: set[ChunkTuple] = set()
            rx: set[ChunkTuple] = set()
            for step in tb.steps:
                for chunks in step.reads:
                    lr.update(_tuples(g, chunks))
                for chunks in step.writes:
                    lw.update(_tuples(g, chunks))
                for remote in step.loads:
                    (lr if remote.gpu == g else rr).update(_tuples(remote.gpu, remote.chunks))
                for x in step.sends:
                    transfer = plan.transfers[x]
                    if transfer.dst is not None:
                        rw.update(_tuples(transfer.dst_gpu, transfer.dst))
                    if transfer.source is not None:
                        lr.update(_tuples(g, transfer.source))
                for x in step.recvs:
                    transfer = plan.transfers[x]
                    if transfer.dst is not None:
                        rx.update(_tuples(g, transfer.dst))
            lw |= rx
            sets[(g, t)] = AccessSet(
                frozenset(lr), frozenset(lw), frozenset(rr), frozenset(rw), frozenset(rx)
            )
    return sets
