"""Where each chunk of a buffer sits in the buffer's pages."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nunasim.collectives.plan import lines_for

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
        return lines_for(self.chunk_bytes, self.line_bytes) * self.line_bytes

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
