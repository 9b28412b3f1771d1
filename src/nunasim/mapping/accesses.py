"""What a plan's steps fetch and deliver: ranges of chunks, each in a wire format.

A step combines its sources (local reads and remote loads) into one value that it delivers
to its sinks (local writes and the stores of its sends): one *group* of ranges. A send
with a source of its own (one pair of a fused multi-destination put) is a group of its own:
it reads its source and stores it. A send to the step's own GPU is a local write.

A range in a wire format (LL, LL128, packets) carries fewer data bytes per line. The
ranges in a wire format are the data of a data-polled transfer and, at its receiver, the
reads of the chunks it landed in (the receiver polls them in that format); other reads,
loads and writes are plain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from nunasim.collectives.per_plan import PerPlan
from nunasim.collectives.plan import Buffer, Chunks, Plan, Protocol, Step, StepId
from nunasim.mapping.access_kinds import LOAD, READ, STORE, WRITE
from nunasim.mapping.placement import BUFFERS

PROTOCOLS = tuple(Protocol)


@dataclass(frozen=True)
class Access:
    """One range of chunks a step fetches from or delivers to, in one format."""

    kind: int  # READ, LOAD, WRITE or STORE
    gpu: int  # the GPU whose memory it is
    chunks: Chunks
    protocol: Protocol
    transfer: int = -1  # the transfer it belongs to (sinks of sends)


Group = tuple[list[Access], list[Access]]  # (sources, sinks)


def step_groups(plan: Plan, sid: StepId, step: Step) -> list[Group]:
    """A step's (sources, sinks) groups, each range in its format: the step's combined value
    (when it combines any source) to its writes and sends, and then each send that stores a
    source of its own."""
    landings = _polled_landings(plan, step) if step.recvs else {}

    def read_format(chunks: Chunks) -> Protocol:
        if not landings:  # nothing lands in a wire format: every read is plain
            return Protocol.SIMPLE
        formats = {landings.get((chunks.buffer, k)) for k in chunks.indices()}
        return formats.pop() if len(formats) == 1 and None not in formats else Protocol.SIMPLE

    def sink(x: int) -> Access:
        t = plan.transfers[x]
        return Access(WRITE if t.dst_gpu == g else STORE, t.dst_gpu, t.dst, t.protocol, x)

    g = sid.gpu
    groups = []
    if step.combines:
        sources = [Access(READ, g, c, read_format(c)) for c in step.reads]
        sources += [Access(LOAD, r.gpu, r.chunks, Protocol.SIMPLE) for r in step.loads]
        sinks = [Access(WRITE, g, c, Protocol.SIMPLE) for c in step.writes]
        sinks += [
            sink(x)
            for x in step.sends
            if plan.transfers[x].dst is not None and plan.transfers[x].source is None
        ]
        groups.append((sources, sinks))
    for x in step.sends:
        t = plan.transfers[x]
        if t.dst is not None and t.source is not None:
            groups.append(([Access(READ, g, t.source, Protocol.SIMPLE)], [sink(x)]))
    return groups


def _polled_landings(plan: Plan, step: Step) -> dict[tuple[Buffer, int], Protocol]:
    """Chunks (buffer, index) on the step's GPU that reach it by a data-polled transfer it
    receives: it polls them in their wire format. A data-polled flag alone polls the data
    of the sending step's previous data transfer to the same GPU."""
    found: dict[tuple[Buffer, int], Protocol] = {}
    for x in step.recvs:
        t = plan.transfers[x]
        if not t.protocol.data_polled:
            continue
        polled = x if t.dst is not None else polled_data(plan, x)
        if polled is not None:
            data = plan.transfers[polled]
            for k in data.dst.indices():
                found[(data.dst.buffer, k)] = data.protocol
    return found


def polled_data(plan: Plan, x: int) -> int | None:
    """The data transfer a data-polled flag alone ``x`` polls: the sending step's previous
    data transfer to the same GPU, if that is data-polled; else None."""
    t = plan.transfers[x]
    sends = plan.step(t.src).sends
    before = [
        y
        for y in sends[: sends.index(x)]
        if plan.transfers[y].dst_gpu == t.dst_gpu and plan.transfers[y].dst is not None
    ]
    return before[-1] if before and plan.transfers[before[-1]].protocol.data_polled else None


class AccessTable(NamedTuple):
    """Every access of a plan, one row each: step by step in ``Plan.steps`` order, group by
    group, sources before sinks."""

    step: np.ndarray  # the step's number in ``Plan.steps`` order
    group: np.ndarray  # the group's number, counted over the whole plan
    kind: np.ndarray  # READ, LOAD, WRITE or STORE
    gpu: np.ndarray  # GPU of the threadblock that moves it
    tb: np.ndarray  # that threadblock
    memory_gpu: np.ndarray  # GPU whose memory holds the chunks
    buffer: np.ndarray  # index in ``BUFFERS``
    chunk: np.ndarray  # first chunk
    count: np.ndarray  # chunks
    protocol: np.ndarray  # index in ``PROTOCOLS``: the range's wire format
    transfer: np.ndarray  # the transfer a sink belongs to, or -1

    @property
    def fetches(self) -> np.ndarray:
        """True for sources (reads and loads), False for sinks."""
        return (self.kind == READ) | (self.kind == LOAD)


# Tables so far: a run needs its plan's table to admit, place (once per NAR granularity
# ``auto`` tries) and lower.
_TABLES: PerPlan[AccessTable] = PerPlan()


def plan_accesses(plan: Plan) -> AccessTable:
    """The ranges every step of ``plan`` fetches and delivers (read-only arrays, worked out
    once per plan object)."""
    return _TABLES.get(plan, _read_only_accesses)


def _read_only_accesses(plan: Plan) -> AccessTable:
    table = _accesses(plan)
    for column in table:
        column.setflags(write=False)
    return table


def _accesses(plan: Plan) -> AccessTable:
    rows = []
    group = 0
    for number, (sid, step) in enumerate(plan.steps()):
        for sources, sinks in step_groups(plan, sid, step):
            rows += [
                (
                    number,
                    group,
                    a.kind,
                    sid.gpu,
                    sid.tb,
                    a.gpu,
                    BUFFERS.index(a.chunks.buffer),
                    a.chunks.index,
                    a.chunks.count,
                    PROTOCOLS.index(a.protocol),
                    a.transfer,
                )
                for a in (*sources, *sinks)
            ]
            group += 1
    columns = np.array(rows, dtype=np.int64).reshape(-1, len(AccessTable._fields))
    return AccessTable(*columns.T.copy())
