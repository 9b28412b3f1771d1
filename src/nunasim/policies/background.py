"""Placing a background GEMM the way an unaware runtime would (paper section 6.6: its
threadblocks "naively allocated across the GPU"): threadblocks by UA's dispatch (with a seed
of their own), buffers in pages round-robin over the stacks, in the baseline segment.

The GEMM's pages take frames from ``GEMM_FRAME_BASE`` up in each stack's baseline region,
far above any frame a collective's placement uses, so the two never share a line.
"""

from __future__ import annotations

import numpy as np

from nunasim.collectives.plan import lines_for
from nunasim.mapping.address import AddressMap
from nunasim.mapping.placement import BackgroundLoad
from nunasim.policies.dispatch import ua_cus
from nunasim.workload import GemmTile

GEMM_FRAME_BASE = 1 << 32


def place_gemm(
    amap: AddressMap, gpus: int, tiles: int, tile: GemmTile, seed: int
) -> BackgroundLoad:
    socket = amap.socket
    stacks = len(socket.stacks)
    per_page = socket.page_bytes // socket.line_bytes
    frames = np.full(stacks, GEMM_FRAME_BASE, dtype=np.int64)
    page_counter = 0

    def lines(nbytes: int) -> np.ndarray:
        nonlocal page_counter
        count = lines_for(nbytes, socket.line_bytes)
        pages = -(-count // per_page)
        addresses = []
        for page in range(pages):
            stack = socket.interleave_order[page_counter % stacks]
            page_counter += 1
            base = amap.line_address(amap.region(0, -1, stack), int(frames[stack]) * per_page)
            frames[stack] += 1
            take = min(per_page, count - page * per_page)
            addresses.append(base + np.arange(take, dtype=np.int64))
        return np.concatenate(addresses)

    inputs = tuple(lines(tile.input_bytes) for _ in range(tiles))
    outputs = tuple(lines(tile.output_bytes) for _ in range(tiles))
    cus = tuple(ua_cus(socket, tiles, np.random.default_rng([seed, 1, g])) for g in range(gpus))
    return BackgroundLoad(tile, cus, inputs, outputs)
