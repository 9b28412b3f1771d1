"""A placement: every threadblock on a CU and every page of every buffer in a region of the
address map (which fixes its HBM stack, segment and NAR domain), on every GPU of the pod.
Each threadblock also has a flag page: the flags peers write to tell it data has landed
(semaphores live apart from the data, as in MSCCL++).

Buffers are laid out from page-aligned virtual addresses, each chunk at the offset its
``BufferLayout`` gives; a chunk moves as ``ceil(chunk_bytes / line)`` lines (flits), the i-th
of which is the line holding byte ``offset(k) + i * line``.
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


LAYOUTS = ("aligned", "packed")


@dataclass(frozen=True)
class BufferLayout:
    """Where each chunk of a buffer starts.

    - ``aligned`` (the default): a chunk of a page or more starts on a page boundary (its
      last page padded), so no two chunks share a page and a policy decides every chunk's
      stack and NAR domain alone; chunks smaller than a page are packed, line-aligned, into
      pages (as many whole chunks as fit), first come first served as the paper does.
    - ``packed``: chunks back to back, ``k * chunk_bytes``; decimal sizes then make chunks
      straddle pages, and the first chunk to touch a page decides it for its neighbours.
    """

    chunk_bytes: int
    line_bytes: int
    page_bytes: int
    mode: str = "aligned"

    def __post_init__(self) -> None:
        if self.mode not in LAYOUTS:
            raise ValueError(f"unknown layout {self.mode!r} (known: {', '.join(LAYOUTS)})")

    @property
    def slot_bytes(self) -> int:
        """Bytes from one chunk's start to the next chunk's in the same page run."""
        if self.mode == "packed":
            return self.chunk_bytes
        if self.chunk_bytes >= self.page_bytes:
            return -(-self.chunk_bytes // self.page_bytes) * self.page_bytes
        return -(-self.chunk_bytes // self.line_bytes) * self.line_bytes

    @property
    def chunks_per_page(self) -> int:
        """Sub-page chunks packed in one page (aligned layout); 0 when chunks span pages."""
        if self.mode == "packed" or self.chunk_bytes >= self.page_bytes:
            return 0
        return self.page_bytes // self.slot_bytes

    def offsets(self, chunks: np.ndarray) -> np.ndarray:
        """Byte offset of each chunk's first byte in its buffer."""
        chunks = np.asarray(chunks, dtype=np.int64)
        per_page = self.chunks_per_page
        if per_page:
            return (chunks // per_page) * self.page_bytes + (chunks % per_page) * self.slot_bytes
        return chunks * self.slot_bytes

    def pages(self, chunks: int) -> int:
        """Pages a buffer of ``chunks`` chunks occupies."""
        if not chunks:
            return 0
        end = int(self.offsets(np.array([chunks - 1]))[0]) + self.chunk_bytes
        return -(-end // self.page_bytes)

    def chunk_pages(self, chunk: int) -> range:
        """Pages that chunk ``chunk`` overlaps."""
        start = int(self.offsets(np.array([chunk]))[0])
        return range(
            start // self.page_bytes, (start + self.chunk_bytes - 1) // self.page_bytes + 1
        )

    def padding(self, chunks: int) -> int:
        """Bytes a buffer of ``chunks`` chunks occupies beyond its data."""
        return self.pages(chunks) * self.page_bytes - chunks * self.chunk_bytes if chunks else 0


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
    layout_mode: str = "aligned"
    padding_bytes: int = 0  # over every buffer of every GPU: bytes of pages beyond the data

    @property
    def socket(self) -> Socket:
        return self.address_map.socket

    @property
    def line_bytes(self) -> int:
        return self.socket.line_bytes

    @property
    def lines_per_chunk(self) -> int:
        return math.ceil(self.chunk_bytes / self.line_bytes)

    @property
    def layout(self) -> BufferLayout:
        socket = self.socket
        return BufferLayout(
            self.chunk_bytes, socket.line_bytes, socket.page_bytes, self.layout_mode
        )

    def line_addresses(self, gpu: int, buffer: Buffer, chunk: int, count: int = 1) -> np.ndarray:
        """Physical line addresses of chunks ``chunk .. chunk + count - 1`` of a buffer."""
        socket = self.socket
        lines = self.lines_per_chunk
        starts = self.layout.offsets(np.arange(chunk, chunk + count, dtype=np.int64))[:, None]
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
