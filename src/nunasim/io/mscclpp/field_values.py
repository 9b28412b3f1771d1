"""The vocabulary of MSCCL++ plan fields and checked readers of single values.

Channel and buffer types, booleans, non-negative integers and chunk counts (with the
``MAX_BUFFER_CHUNKS`` limit) are read the same way by the importer (GPU and threadblock
tables) and by the op parser (buffer references), so they live here, below both.
"""

from __future__ import annotations

from typing import Any

from nunasim.collectives.plan import Buffer
from nunasim.errors import ConfigError
from nunasim.io.schema import Node, integer, text

_CHANNEL_TYPES = ("memory", "port")
_BUFFERS = {"i": Buffer.INPUT, "o": Buffer.OUTPUT, "s": Buffer.SCRATCH}
_BUFFER_NAMES = {Buffer.INPUT: "input", Buffer.OUTPUT: "output", Buffer.SCRATCH: "scratch"}

# A buffer of more chunks is no plan's (every chunk's pages are placed, so the count is
# memory), far beyond the hundreds real plans use.
MAX_BUFFER_CHUNKS = 1 << 20


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"expected true or false, got {value!r}")
    return value


def _buffer(value: Any) -> Buffer:
    if value not in _BUFFERS:
        raise ConfigError(f"expected a buffer type i, o or s, got {value!r}")
    return _BUFFERS[value]


def _non_negative(node: Node, key: str) -> int:
    value = node.get(key, integer)
    if value < 0:
        raise node.error(f"must not be negative; got {value}", key)
    return value


def _chunk_count(node: Node, key: str) -> int:
    value = _non_negative(node, key)
    if value > MAX_BUFFER_CHUNKS:
        raise node.error(f"{value:,} chunks, more than the {MAX_BUFFER_CHUNKS:,} of any plan", key)
    return value


def _channel_type(node: Node, key: str) -> str:
    return _channel_type_value(node.child(key))


def _channel_type_value(node: Node) -> str:
    ctype = node.parse(text)
    if ctype == "switch":
        raise node.error("switch (NVLS multicast) channels are not supported")
    if ctype not in _CHANNEL_TYPES:
        raise node.error(f"expected a channel type memory or port, got {ctype!r}")
    return ctype
