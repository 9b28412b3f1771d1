"""Line operations: each group of a step (``nunasim.mapping.accesses``) cut into operations
that fetch one line's worth of every source, combine them, and deliver the result, and the
messages that move each one's lines.

A group's operations carry the data of one line in its coarsest format (``op_bytes``), so
a chunk of B bytes takes ``ceil(B / op_bytes)`` of them. A range of the group moves
``ceil(B / d)`` wire lines per chunk if a line carries ``d`` data bytes in its format, and
a wire line lands on the line holding its first data byte. A source line belongs to the
operation holding its first data byte (the first to need it); a sink line to the one
holding its last (the first that has all of its data).

Messages come group by group, operation by operation, sources before sinks, range by
range, each range's lines in order; the packet engine breaks ties in that order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.arrays import unique_rows
from nunasim.collectives.plan import lines_for
from nunasim.engine.lowering.messages import Messages
from nunasim.hardware import Pod
from nunasim.jit import scatter_at
from nunasim.mapping.accesses import PROTOCOLS, AccessTable
from nunasim.mapping.resolve import ResolvedLines, ragged_arange
from nunasim.units import s_to_ps
from nunasim.workload import DTYPE_BYTES


class LineOps(NamedTuple):
    """The collective's line operations and data messages (messages numbered from 0)."""

    step: np.ndarray  # per line op
    compute_ps: np.ndarray  # per line op: reduction time
    msgs: np.ndarray  # [line op, 3]: first source, first sink, end (message numbers)
    messages: Messages
    message_step: np.ndarray  # per message
    arrival_lines: np.ndarray  # per data-polled sink range (an arrival counter): its lines
    arrival_transfer: np.ndarray  # per arrival counter: its transfer


def wire_lines_per_chunk(accesses: AccessTable, chunk_bytes: int, line_bytes: int) -> np.ndarray:
    """Per access: lines a chunk takes in the access's wire format."""
    return -(-chunk_bytes // _data_per_line(accesses, line_bytes))


def _data_per_line(accesses: AccessTable, line_bytes: int) -> np.ndarray:
    per_protocol = [p.data_bytes_per_line(line_bytes) for p in PROTOCOLS]
    return np.array(per_protocol, dtype=np.int64)[accesses.protocol]


def reduce_ps(pod: Pod, sources: int, dtype: str, data_bytes: int) -> int:
    """Time to combine ``sources`` values of ``data_bytes`` each on one CU."""
    if sources < 2:
        return 0
    socket = pod.socket
    per_cu = socket.flops_for(dtype) / socket.cus
    elements = data_bytes / DTYPE_BYTES[dtype]
    return max(1, round(s_to_ps((sources - 1) * elements / per_cu)))


class _Groups(NamedTuple):
    """Per group of accesses: its step, its operations' data bytes, and its operations."""

    step: np.ndarray
    op_bytes: np.ndarray  # data one line carries in the group's coarsest format
    first_op: np.ndarray  # CSR: the group's line operations
    compute_ps: np.ndarray  # reduction time of each of its operations


def _groups(pod: Pod, accesses: AccessTable, chunk_bytes: int, dtype: str) -> _Groups:
    groups = int(accesses.group[-1]) + 1 if len(accesses.group) else 0
    op_bytes = np.zeros(groups, dtype=np.int64)
    scatter_at(
        np.maximum, op_bytes, accesses.group, _data_per_line(accesses, pod.socket.line_bytes)
    )
    chunks = np.zeros(groups, dtype=np.int64)
    scatter_at(np.maximum, chunks, accesses.group, accesses.count)
    step = np.zeros(groups, dtype=np.int64)
    step[accesses.group] = accesses.step
    sources = np.bincount(accesses.group[accesses.fetches], minlength=groups)
    pairs = list(zip(sources.tolist(), op_bytes.tolist(), strict=True))
    cost = {pair: reduce_ps(pod, pair[0], dtype, pair[1]) for pair in set(pairs)}
    return _Groups(
        step,
        op_bytes,
        np.concatenate([[0], np.cumsum(chunks * -(-chunk_bytes // op_bytes))]),
        np.array([cost[pair] for pair in pairs], dtype=np.int64),
    )


def line_operations(
    pod: Pod, accesses: AccessTable, lines: ResolvedLines, chunk_bytes: int, dtype: str
) -> LineOps:
    """The line operations of every group of ``accesses``, whose lines ``lines`` resolves."""
    line_bytes = pod.socket.line_bytes
    groups = _groups(pod, accesses, chunk_bytes, dtype)
    per_line = _data_per_line(accesses, line_bytes)
    access, row, op, data = _wire_lines(
        accesses, per_line, groups.op_bytes, chunk_bytes, line_bytes
    )
    group = accesses.group[access]
    order = np.lexsort((np.arange(len(access)), access, op, group))
    access, row, data = access[order], row[order], data[order]
    lineop = groups.first_op[group[order]] + op[order]

    polled = ~accesses.fetches & np.array([p.data_polled for p in PROTOCOLS])[accesses.protocol]
    counter = np.where(polled, np.cumsum(polled) - 1, -1)
    messages = Messages(
        kind=lines.kind[row],
        lineop=lineop,
        gpu=lines.gpu[row],
        cu=lines.gpu[row] * pod.socket.cus + lines.cu[row],
        router=lines.router[row],
        target=counter[access],
        data_bytes=data,
        memory_gpu=lines.memory_gpu[row],
        address=lines.address[row],
        port=lines.port[row],
        stack=lines.stack[row],
    )
    # Within an operation sources come before sinks, so this key is sorted too.
    key = 2 * lineop + ~accesses.fetches[access]
    ops = np.arange(groups.first_op[-1])
    bounds = np.searchsorted(key, 2 * np.append(ops, len(ops)))
    ops_per_group = np.diff(groups.first_op)
    wire = wire_lines_per_chunk(accesses, chunk_bytes, line_bytes)
    return LineOps(
        step=np.repeat(groups.step, ops_per_group),
        compute_ps=np.repeat(groups.compute_ps, ops_per_group),
        msgs=np.stack([bounds[:-1], np.searchsorted(key, 2 * ops + 1), bounds[1:]], axis=1),
        messages=messages,
        message_step=accesses.step[access],
        arrival_lines=(accesses.count * wire)[polled],
        arrival_transfer=accesses.transfer[polled],
    )


def _wire_lines(
    accesses: AccessTable,
    per_line: np.ndarray,
    op_bytes: np.ndarray,
    chunk_bytes: int,
    line_bytes: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every wire line of every access: its access, the resolved line it lands on (a row
    of ``resolve``'s table), its operation within its group, and its data bytes. Accesses
    that lay lines out alike come together, each access's lines in order."""
    plain = lines_for(chunk_bytes, line_bytes)  # resolved lines per chunk
    first_row = np.concatenate([[0], np.cumsum(accesses.count * plain)])[:-1]
    layouts = np.stack([per_line, op_bytes[accesses.group], accesses.fetches], axis=1)
    parts = [np.zeros((4, 0), dtype=np.int64)]
    distinct, kind = unique_rows(layouts)
    for k, layout in enumerate(distinct):
        data, op_data, fetch = (int(x) for x in layout)
        which = np.nonzero(kind == k)[0]
        first = np.arange(lines_for(chunk_bytes, data), dtype=np.int64) * data  # first byte
        end = np.minimum(first + data, chunk_bytes)
        op = (first if fetch else end - 1) // op_data
        owner = np.repeat(which, accesses.count[which])  # one per chunk
        chunk = ragged_arange(accesses.count[which])[:, None]
        row = first_row[owner][:, None] + chunk * plain + first // line_bytes
        parts.append(
            np.stack(
                [
                    np.repeat(owner, len(first)),
                    row.ravel(),
                    (chunk * lines_for(chunk_bytes, op_data) + op).ravel(),
                    np.tile(end - first, len(owner)),
                ]
            )
        )
    access, row, op, data = np.concatenate(parts, axis=1)
    return access, row, op, data
