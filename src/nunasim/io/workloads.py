"""Workload descriptions shipped with nunasim (``nunasim/workloads/*.yaml``) or given by the
user: for now the background GEMM tile of the paper's section 6.6."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from nunasim.io.files import read_text
from nunasim.io.presets import load_yaml
from nunasim.io.schema import Node, integer, text
from nunasim.workload import DTYPE_BYTES, GemmTile


def load_gemm_tile(path: str | Path | None = None) -> GemmTile:
    """The GEMM tile of ``path``, or the shipped ``gemm.yaml``."""
    if path is None:
        source = "builtin:gemm"
        content = resources.files("nunasim").joinpath("workloads", "gemm.yaml").read_text()
    else:
        source, content = str(path), read_text(path)
    root = Node(load_yaml(content, source), "", source)
    tile = root.child("tile")
    sizes = {}
    for key in ("m", "n", "k"):
        sizes[key] = tile.get(key, integer)
        if sizes[key] < 1:
            raise tile.error(f"must be at least 1; got {sizes[key]}", key)
    dtype = tile.get("dtype", text)
    if dtype not in DTYPE_BYTES:
        raise tile.error(f"unknown data type {dtype!r} (known: {', '.join(DTYPE_BYTES)})", "dtype")
    tile.close()
    root.close()
    return GemmTile(dtype=dtype, dtype_bytes=DTYPE_BYTES[dtype], **sizes)
