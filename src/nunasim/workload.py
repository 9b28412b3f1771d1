"""Shapes of work: the size of an element of each data type, and the tile of a GEMM that
runs beside a collective (paper section 6.6)."""

from __future__ import annotations

import math
from dataclasses import dataclass

DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": 0.5}


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
