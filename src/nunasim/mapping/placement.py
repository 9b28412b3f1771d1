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
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from nunasim.collectives.plan import Buffer
from nunasim.hardware import Socket
from nunasim.mapping.address import AddressMap
from nunasim.mapping.buffer_layout import BufferLayout
from nunasim.workload import GemmTile

BUFFERS = (Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH)


@dataclass(frozen=True, eq=False)
class BufferPages:
    """The pages of one buffer (or one flag page per threadblock): each one's region of the
    address map and its frame in that region."""

    region: np.ndarray  # per page: AddressMap region
    frame: np.ndarray  # per page: frame number inside its region


@dataclass(frozen=True, eq=False)
class GpuPlacement:
    """One GPU's part of a placement."""

    tb_cu: np.ndarray  # per threadblock: CU
    tb_domain: np.ndarray  # per threadblock: the NAR domain its logical group went to, or -1
    buffers: dict[Buffer, BufferPages]
    flags: BufferPages  # per threadblock: the page holding the flags peers write for it


class PageTable(NamedTuple):
    """Every buffer's pages end to end, GPU by GPU and buffers in ``BUFFERS`` order."""

    region: np.ndarray  # per page: AddressMap region
    frame: np.ndarray  # per page: frame number inside its region
    first: np.ndarray  # [GPU, buffer in ``BUFFERS`` order]: where its pages begin


@dataclass(frozen=True)
class PlacementRule:
    """What a configuration (``nunasim.scenario.Configuration``, by its name) does: its
    threadblock policy, its page policy and its routing."""

    name: str
    threadblocks: str  # "UA", "NUMA" or "NAP"
    pages: str  # "UA" (round-robin over stacks) or "NAP"
    nar: bool  # pages in NAR segments (routing over their domain's ports)


@dataclass(frozen=True, eq=False)
class Placement:
    """Where a placed plan's threadblocks run and its buffers live, on every GPU."""

    config: PlacementRule
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
    # the buffers' pages end to end as a policy built them, when the ``BufferPages`` of
    # ``gpus`` are views of it (``page_table`` then copies nothing)
    built_pages: PageTable | None = field(default=None, repr=False)

    @property
    def socket(self) -> Socket:
        """The socket every GPU of the placement is."""
        return self.address_map.socket

    @property
    def line_bytes(self) -> int:
        """Bytes of a line (a flit)."""
        return self.socket.line_bytes

    @property
    def lines_per_chunk(self) -> int:
        """Lines a chunk moves as, in the data's own layout."""
        return math.ceil(self.chunk_bytes / self.line_bytes)

    @property
    def layout(self) -> BufferLayout:
        """How chunks sit in the pages of every buffer."""
        socket = self.socket
        return BufferLayout(
            self.chunk_bytes, socket.line_bytes, socket.page_bytes, self.layout_mode
        )

    @cached_property
    def page_table(self) -> PageTable:
        """Every buffer's pages end to end: region and frame of each, and where the pages
        of (GPU, buffer in ``BUFFERS`` order) begin."""
        if self.built_pages is not None:
            return self.built_pages
        runs = [gpu.buffers[b] for gpu in self.gpus for b in BUFFERS]
        first = np.cumsum([0, *(len(r.region) for r in runs)])[:-1].reshape(-1, len(BUFFERS))
        region = np.concatenate([np.asarray(r.region, dtype=np.int64) for r in runs])
        frame = np.concatenate([np.asarray(r.frame, dtype=np.int64) for r in runs])
        return PageTable(region, frame, first.astype(np.int64))

    def chunk_lines(
        self, gpu: np.ndarray, buffer: np.ndarray, chunk: np.ndarray, lines: int | None = None
    ) -> np.ndarray:
        """[chunk, line] physical line addresses of many chunks at once; ``buffer`` holds
        indices into ``BUFFERS``. ``lines``, when given, keeps each chunk's first lines only."""
        socket = self.socket
        count = self.lines_per_chunk if lines is None else min(lines, self.lines_per_chunk)
        starts = self.layout.offsets(chunk)[:, None]
        offsets = starts + np.arange(count, dtype=np.int64) * socket.line_bytes
        region, frame, first = self.page_table
        page = first[gpu, buffer][:, None] + offsets // socket.page_bytes
        in_page = (offsets % socket.page_bytes) // socket.line_bytes
        per_page = socket.page_bytes // socket.line_bytes
        return self.address_map.line_address(region[page], frame[page] * per_page + in_page)

    def line_addresses(self, gpu: int, buffer: Buffer, chunk: int, count: int = 1) -> np.ndarray:
        """Physical line addresses of chunks ``chunk .. chunk + count - 1`` of a buffer."""
        chunks = np.arange(chunk, chunk + count, dtype=np.int64)
        same = np.ones(count, dtype=np.int64)
        return self.chunk_lines(gpu * same, BUFFERS.index(buffer) * same, chunks).ravel()

    def flag_address(self, gpu: int, tb: int) -> int:
        """Line address of the flag that threadblock ``tb`` of ``gpu`` waits on."""
        pages = self.gpus[gpu].flags
        per_page = self.socket.page_bytes // self.socket.line_bytes
        return self.address_map.line_address(int(pages.region[tb]), int(pages.frame[tb]) * per_page)

    def chunk_stacks(self, gpu: int, buffer: Buffer, chunk: int) -> np.ndarray:
        """The stack of every line of one chunk."""
        return self.address_map.stacks_of(self.line_addresses(gpu, buffer, chunk))

    @cached_property
    def _tb_cu(self) -> tuple[np.ndarray, np.ndarray]:
        first = np.cumsum([0, *(len(g.tb_cu) for g in self.gpus)])[:-1]
        return np.concatenate([g.tb_cu for g in self.gpus]).astype(np.int64), first

    def cus_of(self, gpu: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """The CU (numbered on its GPU) of many threadblocks at once."""
        cus, first = self._tb_cu
        return cus[first[gpu] + tb]


@dataclass(frozen=True, eq=False)
class BackgroundLoad:
    """A GEMM of ``tiles`` tiles on every GPU, running beside the collective: each tile's
    threadblock loads its inputs, computes, and stores its output (paper section 6.6)."""

    tile: GemmTile
    tb_cu: tuple[np.ndarray, ...]  # per GPU: CU of each tile's threadblock
    inputs: tuple[np.ndarray, ...]  # per tile: line addresses of its inputs (same on every GPU)
    outputs: tuple[np.ndarray, ...]  # per tile: line addresses of its output
