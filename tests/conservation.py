"""Checking that a run delivered every data byte of a plan once, at the right place."""

from collections import Counter

import numpy as np

from nunasim.collectives.plan import Protocol
from nunasim.engine.lowering.messages import STORE, WRITE


def expected_lines(plan, placement):
    """(GPU, line address, data bytes) of every line a plan delivers: each transfer's wire
    lines (a wire line lands on the line holding its first data byte) and each step's
    plain writes."""
    chunk, line = placement.chunk_bytes, placement.line_bytes
    per_chunk = placement.lines_per_chunk

    def lines(gpu, chunks, protocol):
        addrs = placement.line_addresses(gpu, chunks.buffer, chunks.index, chunks.count)
        per_line = protocol.data_bytes_per_line(line)
        out = []
        for c in range(chunks.count):
            for j in range(protocol.lines(chunk, line)):
                first = j * per_line
                data = min(per_line, chunk - first)
                out.append((gpu, int(addrs[c * per_chunk + first // line]), data))
        return out

    expected = []
    for transfer in plan.transfers:
        if transfer.dst is not None:
            expected += lines(transfer.dst_gpu, transfer.dst, transfer.protocol)
    for sid, step in plan.steps():
        for chunks in step.writes:
            expected += lines(sid.gpu, chunks, Protocol.SIMPLE)
    return expected


def assert_conserved(plan, placement, lowered, trace):
    assert (trace.msg_done >= 0).all()  # every message finished
    assert (trace.step_end >= 0).all()
    expected = expected_lines(plan, placement)
    data = np.isin(lowered.msg_kind, [STORE, WRITE])
    delivered = list(
        zip(
            lowered.msg_dst_gpu[data].tolist(),
            lowered.msg_address[data].tolist(),
            lowered.msg_bytes[data].tolist(),
            strict=True,
        )
    )
    assert sorted(delivered) == sorted(expected)
    # Every data byte: each GPU receives the bytes of every chunk delivered to it.
    received = Counter()
    for gpu, _, data_bytes in delivered:
        received[gpu] += data_bytes
    sent = Counter()
    for transfer in plan.transfers:
        if transfer.dst is not None:
            sent[transfer.dst_gpu] += transfer.dst.count * placement.chunk_bytes
    for sid, step in plan.steps():
        sent[sid.gpu] += sum(c.count for c in step.writes) * placement.chunk_bytes
    assert received == +sent
    # Each delivery was written once, at a stack of its destination GPU.
    assert (trace.msg_stack_in[data] >= 0).all()
