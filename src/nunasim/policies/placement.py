"""A placement: every threadblock on a CU and every page of every buffer in a region of the
address map (which fixes its HBM stack, segment and NAR domain), on every GPU of the pod.
Each threadblock also has a flag page: the flags peers write to tell it data has landed
(semaphores live apart from the data, as in MSCCL++).

Buffers are laid out from page-aligned virtual addresses; chunk ``k`` of a buffer covers
bytes ``[k * chunk_bytes, (k + 1) * chunk_bytes)`` and moves as ``ceil(chunk_bytes / line)``
lines (flits), the i-th of which is the line holding byte ``k * chunk_bytes + i * line``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nunasim.collectives.plan import Buffer
from nunasim.hardware import Socket
from nunasim.policies.address import REGION_SHIFT, AddressMap

BUFFERS = (Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH)


@dataclass(frozen=True, eq=False)
class BufferPages:
    region: np.ndarray  # per page: AddressMap region
    frame: np.ndarray  # per page: frame number inside its region


@dataclass(frozen=True, eq=False)
class GpuPlacement:
    tb_cu: np.ndarray  # per threadblock: CU
    tb_domain: np.ndarray  # per threadblock: the NAR domain its logical group went to, or -1
    buffers: dict[Buffer, BufferPages]
    flags: BufferPages  # per threadblock: the page holding the flags peers write for it


@dataclass(frozen=True)
class Configuration:
    """One of the paper's configurations: a threadblock policy, a page policy, a routing."""

    name: str
    threadblocks: str  # "UA", "NUMA" or "NAP"
    pages: str  # "UA" (round-robin over stacks) or "NAP"
    nar: bool  # pages in NAR segments (routing over their domain's ports)


@dataclass(frozen=True, eq=False)
class Placement:
    config: Configuration
    granularity: int  # NAR domains the policy used; 1 when it used none
    size: int  # collective size in bytes
    chunk_bytes: int
    seed: int
    address_map: AddressMap
    gpus: tuple[GpuPlacement, ...]
    fallback_tbs: int = 0  # threadblocks that fit no CU's budget and went to the least loaded
    fallback_chunks: int = 0  # chunks that fit no stack's budget
    cu_used: tuple[np.ndarray, ...] = ()  # per GPU: budget the policy charged to each CU
    stack_used: tuple[np.ndarray, ...] = ()  # per GPU: budget charged to each stack

    @property
    def socket(self) -> Socket:
        return self.address_map.socket

    @property
    def line_bytes(self) -> int:
        return self.socket.line_bytes

    @property
    def lines_per_chunk(self) -> int:
        return math.ceil(self.chunk_bytes / self.line_bytes)

    def line_addresses(self, gpu: int, buffer: Buffer, chunk: int, count: int = 1) -> np.ndarray:
        """Physical line addresses of chunks ``chunk .. chunk + count - 1`` of a buffer."""
        socket = self.socket
        lines = self.lines_per_chunk
        starts = (np.arange(chunk, chunk + count, dtype=np.int64) * self.chunk_bytes)[:, None]
        offsets = (starts + np.arange(lines, dtype=np.int64)[None, :] * socket.line_bytes).ravel()
        pages = self.gpus[gpu].buffers[buffer]
        page = offsets // socket.page_bytes
        in_page = (offsets % socket.page_bytes) // socket.line_bytes
        per_page = socket.page_bytes // socket.line_bytes
        return (pages.region[page] << REGION_SHIFT) | (pages.frame[page] * per_page + in_page)

    def flag_address(self, gpu: int, tb: int) -> int:
        """Line address of the flag that threadblock ``tb`` of ``gpu`` waits on."""
        pages = self.gpus[gpu].flags
        per_page = self.socket.page_bytes // self.socket.line_bytes
        return (int(pages.region[tb]) << REGION_SHIFT) | (int(pages.frame[tb]) * per_page)

    def chunk_stacks(self, gpu: int, buffer: Buffer, chunk: int) -> np.ndarray:
        return self.address_map.stacks_of(self.line_addresses(gpu, buffer, chunk))

    def cu_router(self, cu: int) -> int:
        return self.socket.cu_router(cu)


def pages_for(chunks: int, chunk_bytes: int, page_bytes: int) -> int:
    return math.ceil(chunks * chunk_bytes / page_bytes) if chunks else 0


def chunk_pages(chunk: int, chunk_bytes: int, page_bytes: int) -> range:
    """Pages that chunk ``chunk`` of a buffer overlaps."""
    first = chunk * chunk_bytes // page_bytes
    last = ((chunk + 1) * chunk_bytes - 1) // page_bytes
    return range(first, last + 1)


@dataclass(frozen=True)
class GemmTile:
    """One tile of a GEMM: an m x k by k x n product in ``dtype``."""

    m: int
    n: int
    k: int
    dtype: str
    dtype_bytes: float

    @property
    def input_bytes(self) -> int:
        return math.ceil((self.m * self.k + self.k * self.n) * self.dtype_bytes)

    @property
    def output_bytes(self) -> int:
        return math.ceil(self.m * self.n * self.dtype_bytes)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


@dataclass(frozen=True, eq=False)
class BackgroundLoad:
    """A GEMM of ``tiles`` tiles on every GPU, running beside the collective: each tile's
    threadblock loads its inputs, computes, and stores its output (paper section 6.6)."""

    tile: GemmTile
    tb_cu: tuple[np.ndarray, ...]  # per GPU: CU of each tile's threadblock
    inputs: tuple[np.ndarray, ...]  # per tile: line addresses of its inputs (same on every GPU)
    outputs: tuple[np.ndarray, ...]  # per tile: line addresses of its output
