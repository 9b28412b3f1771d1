"""Collective sizes from execution traces: Chakra ET protobuf files (``.et``) and PyTorch
execution-trace JSON (``.json``, ``.json.gz``). Each trace gives a list of ``TraceCollective``:
the collective's kind and its size in bytes, as the trace states it.

Chakra files are read with a small protobuf wire-format reader over the one part of the
schema we need (``Node``: id, name, type, attributes), so no generated code or protobuf
runtime is involved. Sizes mean what the producer wrote: the PyTorch converter's
``comm_size`` is the bytes of the kernel's inputs on one rank, ASTRA-sim's microbenchmarks
give the nominal collective size; PyTorch traces give the collective's output tensors.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nunasim.errors import ConfigError, quote
from nunasim.io.files import decode_text, gunzip, read_bytes
from nunasim.io.mscclpp.json_reading import load_json

# Chakra's CollectiveCommType, by number.
CHAKRA_COLLECTIVES = (
    "allreduce",
    "reduce",
    "allgather",
    "gather",
    "scatter",
    "broadcast",
    "alltoall",
    "reducescatter",
    "reducescatter",  # REDUCE_SCATTER_BLOCK
    "barrier",
)
_NODE_COLL, _NODE_SEND, _NODE_RECV = 7, 5, 6

# PyTorch ``record_param_comms`` collective names, normalised; ``wait`` and ``barrier``
# carry no data and are skipped.
PYTORCH_COLLECTIVES = {
    "allreduce": "allreduce",
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "allgather": "allgather",
    "_allgather_base": "allgather",
    "all_gather_into_tensor": "allgather",
    "reduce_scatter": "reducescatter",
    "_reduce_scatter_base": "reducescatter",
    "reduce_scatter_tensor": "reducescatter",
    "all_to_all": "alltoall",
    "all_to_allv": "alltoall",
    "alltoall": "alltoall",
    "alltoall_base": "alltoall",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "gather": "gather",
    "scatter": "scatter",
    "send": "send",
    "recv": "recv",
}
_NO_DATA = {"wait", "barrier"}


@dataclass(frozen=True)
class TraceCollective:
    """One collective (or point-to-point transfer) of a trace: ``kind`` and ``size`` bytes;
    ``node`` is the trace's own id for it."""

    kind: str
    size: int
    node: int


def read_trace(path: str | Path) -> list[TraceCollective]:
    """The collectives of one trace file, in file order."""
    source = str(path)
    # The plan readers' limits: a regular file, its size, and its size inflated.
    raw = read_bytes(path)
    if raw[:2] == b"\x1f\x8b":
        raw = gunzip(raw, source)
    if raw.lstrip()[:1] in (b"{", b"["):
        return _pytorch_trace(raw, source)
    return _chakra_trace(raw, source)


# --- Chakra protobuf ------------------------------------------------------------------------


def _varint(data: bytes, pos: int, source: str, where: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ConfigError("truncated: a varint runs past the end", source=source, where=where)
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ConfigError("malformed varint (longer than 10 bytes)", source=source, where=where)


def _fields(data: bytes, source: str, where: str) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message: ints for varints and fixed
    widths, bytes for length-delimited fields."""
    out, pos = [], 0
    while pos < len(data):
        key, pos = _varint(data, pos, source, where)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos, source, where)
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > len(data):
                raise ConfigError("truncated fixed-width field", source=source, where=where)
            value = int.from_bytes(data[pos : pos + width], "little")
            pos += width
        elif wire == 2:
            length, pos = _varint(data, pos, source, where)
            if pos + length > len(data):
                raise ConfigError(
                    f"field {number} claims {length} bytes past the end", source=source, where=where
                )
            value = data[pos : pos + length]
            pos += length
        else:
            raise ConfigError(
                f"unsupported wire type {wire} in field {number}", source=source, where=where
            )
        out.append((number, wire, value))
    return out


def _attribute(data: bytes, source: str, where: str) -> tuple[str, Any]:
    name, value = "", None
    for number, wire, field in _fields(data, source, where):
        if number == 1 and wire == 2:
            name = field.decode("utf-8", "replace")
        elif number in (7, 9, 11, 13, 27) and wire == 0:  # int32/64, uint32/64, bool
            value = field - (1 << 64) if number in (7, 9) and field >= 1 << 63 else field
        elif number in (15, 17) and wire == 0:  # sint32/64: zigzag
            value = (field >> 1) ^ -(field & 1)
        elif number in (19, 21) and wire in (1, 5):  # fixed32/64
            value = field
        elif number in (23, 25) and wire in (1, 5):  # sfixed32/64
            bits = 64 if wire == 1 else 32
            value = field - (1 << bits) if field >= 1 << (bits - 1) else field
        elif number in (3, 5) and wire in (1, 5):  # double, float
            value = struct.unpack(
                "<d" if wire == 1 else "<f", field.to_bytes(8 if wire == 1 else 4, "little")
            )[0]
    return name, value


def _chakra_trace(raw: bytes, source: str) -> list[TraceCollective]:
    messages, pos = [], 0
    while pos < len(raw):
        length, start = _varint(raw, pos, source, f"byte {pos}")
        if start + length > len(raw):
            raise ConfigError(
                f"message of {length} bytes runs past the end of the file "
                "(not a Chakra ET file, or truncated)",
                source=source,
                where=f"byte {pos}",
            )
        messages.append(raw[start : start + length])
        pos = start + length
    if not messages:
        raise ConfigError("empty trace", source=source)
    found = []
    for index, message in enumerate(messages[1:], start=1):  # the first is GlobalMetadata
        where = f"node {index}"
        node_id, node_type, attrs = 0, 0, {}
        for number, wire, value in _fields(message, source, where):
            if number == 1 and wire == 0:
                node_id = value
            elif number == 3 and wire == 0:
                node_type = value
            elif number == 10 and wire == 2:
                name, attr = _attribute(value, source, f"{where} attr")
                attrs[name] = attr
        where = f"node {node_id}"
        if node_type not in (_NODE_COLL, _NODE_SEND, _NODE_RECV) or attrs.get("is_cpu_op"):
            continue
        size = attrs.get("comm_size")
        if size is None:
            continue  # CPU-side c10d records carry no size
        if not isinstance(size, int) or size < 0:
            raise ConfigError(
                f"comm_size {quote(size)} is not a byte count", source=source, where=where
            )
        if node_type == _NODE_SEND:
            kind = "send"
        elif node_type == _NODE_RECV:
            kind = "recv"
        else:
            comm = attrs.get("comm_type")
            if not isinstance(comm, int) or not 0 <= comm < len(CHAKRA_COLLECTIVES):
                raise ConfigError(f"unknown comm_type {quote(comm)}", source=source, where=where)
            kind = CHAKRA_COLLECTIVES[comm]
        found.append(TraceCollective(kind, size, node_id))
    return found


# --- PyTorch execution traces -----------------------------------------------------------------


def _pytorch_trace(raw: bytes, source: str) -> list[TraceCollective]:
    # The plan readers' JSON: bounded depth and numbers, no repeated key, no NaN.
    data = load_json(decode_text(raw, source), source)
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise ConfigError(
            "not a PyTorch execution trace: expected an object with a 'nodes' list", source=source
        )
    found = []
    for index, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or node.get("name") != "record_param_comms":
            continue
        where = f"nodes[{index}] (id {node.get('id')})"
        inputs = _values(node.get("inputs"), source, where)
        name = next((v for v in inputs if isinstance(v, str) and v), None)
        if name in _NO_DATA:
            continue
        if name not in PYTORCH_COLLECTIVES:
            raise ConfigError(f"unknown collective {quote(name)}", source=source, where=where)
        tensors = _tensors(_values(node.get("outputs"), source, where)) or _tensors(inputs)
        if not tensors:
            raise ConfigError("a collective without tensors", source=source, where=where)
        size = 0
        for tensor in tensors:
            numel, itemsize = tensor[3], tensor[4]
            if not all(isinstance(v, int) and v >= 0 for v in (numel, itemsize)):
                raise ConfigError(f"bad tensor {quote(tensor)}", source=source, where=where)
            size += numel * itemsize
        found.append(TraceCollective(PYTORCH_COLLECTIVES[name], size, int(node.get("id", index))))
    return found


def _values(field: Any, source: str, where: str) -> list[Any]:
    """A node's inputs or outputs: a plain list (schema 1.0.1) or ``{"values": [...]}``."""
    if field is None:
        return []
    if isinstance(field, dict):
        field = field.get("values", [])
    if not isinstance(field, list):
        raise ConfigError(
            f"inputs/outputs {quote(field)} are not a list", source=source, where=where
        )
    return field


def _tensors(values: list[Any]) -> list[list[Any]]:
    """The tensor records ([id, storage, offset, numel, itemsize, device]) among values."""
    found = []
    for value in values:
        if _is_tensor(value):
            found.append(value)
        elif isinstance(value, list):
            found.extend(v for v in value if _is_tensor(v))
    return found


def _is_tensor(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 6 and isinstance(value[5], str)
