"""Lowering: (pod, plan, placement) -> flat integer arrays the engines consume.

The model (docs/engine.md):

- Every step of a threadblock becomes *line operations*, one per line (flit) of its
  chunks. A line operation first fetches its sources (a local HBM read: a latency-only
  request to the stack, the stack's access, the 256 B response over the NoC; or a remote
  load: request over the network, the remote stack, response back), combines them (a
  reduction costs compute time on the CU), then delivers the result to its sinks (a local
  write: NoC to the stack and the stack's access; a remote store: NoC to the egress port,
  the port, the plane, the plane's output to the destination port, the destination NoC,
  the stack). A store with its own source (a fused multi-destination put) is a line
  operation of its own: it reads its source line and stores it, nothing combined.
- A dependency waits for the step whose signal releases it (``Plan.signaller``); a plan
  with a dependency nothing releases would never finish and is refused.
- Every message travels a *route*: resources (each a FIFO server with an occupancy and a
  latency) with pure delays before the first and after any of them. Every message first
  waits the CU's L1 latency. A CU issues as many requests as its outstanding-request window allows;
  data enters the NoC through its router's injection port and read data leaves it through
  the router's ejection port, each one flit per link serialisation time, shared by the
  router's CUs (requests for reads carry no data: they take the path's latency only).
- A local write or remote store is acknowledged back to its CU after the latency of the
  reverse path (acknowledgements carry no data and do not contend). A step completes when
  all its messages are done and acknowledged; it then sends the flags of its transfers
  (one-line stores, through the same resources, to the flag page of the receiving
  threadblock) and its successors may start.
- Protocols (``nunasim.collectives.plan.Protocol``). A range in a wire format carries
  fewer data bytes per line (LL and packets half a line, LL128 240 B of 256 B), so a chunk
  of B bytes moves ``ceil(B / data bytes per line)`` lines. The ranges in a wire format are
  the data of a data-polled transfer and, at its receiver, the reads of the chunks it
  landed in (the receiver polls them in that format); other reads, loads and writes are
  plain. A wire line lands on the line that holds the first data byte it carries: a chunk's
  wire format occupies the chunk's own lines, so its pages, stacks and NAR domain are the
  data's (under LL two wire lines land on each line) and costs its extra lines on every
  resource it crosses, not extra memory. A step's line operations follow its coarsest
  format: each fetches the source lines that start in it and delivers the sink lines that
  end in it. A data-polled store has no fence and no flag: its line operation counts it
  delivered once issued (it still holds a CU request slot until acknowledged), and a
  per-transfer arrival counter releases the receiving step when the transfer's last line
  lands.

The parts, each in its module: what each step fetches and delivers and where every line
lives (``nunasim.mapping.accesses`` and ``nunasim.mapping.resolve``), line operations and
their messages (``lineops``), the step graph and its flags (``steps``), a background GEMM
(``gemm``), the resource table (``resources``) and the routes over it (``routes``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.engine.lowering.admission import (
    Budget,
    memory_budget,
    packet_bytes,
    packet_messages,
    refuse_beyond,
)
from nunasim.engine.lowering.gemm import lower_background
from nunasim.engine.lowering.lineops import LineOps, line_operations
from nunasim.engine.lowering.messages import Messages
from nunasim.engine.lowering.program import Program, join
from nunasim.engine.lowering.resources import Resources, build_resources, resource_numbering
from nunasim.engine.lowering.routes import build_routes
from nunasim.engine.lowering.steps import StepGraph, step_graph
from nunasim.hardware import Pod
from nunasim.mapping.accesses import plan_accesses
from nunasim.mapping.placement import BackgroundLoad, Placement
from nunasim.mapping.resolve import resolve
from nunasim.workload import DTYPE_BYTES


@dataclass(frozen=True, eq=False)
class Lowered:
    """A scenario as the flat arrays the engines run."""

    ngpus: int
    cus_per_gpu: int
    window: int  # outstanding requests per CU
    line_bytes: int
    resources: Resources
    tb_cu: np.ndarray  # global CU of each threadblock
    tb_gpu: np.ndarray
    step_tb: np.ndarray
    step_wait: np.ndarray  # waits before a step may start (program order, deps, flags)
    step_compute_ps: np.ndarray  # compute time of a step that only computes
    step_background: np.ndarray  # True for steps of background work (a GEMM)
    succ_start: np.ndarray  # CSR: steps whose waits a step's completion satisfies
    succ: np.ndarray
    lineop_start: np.ndarray  # CSR over steps
    lineop_step: np.ndarray
    lineop_compute_ps: np.ndarray  # reduction time of one line
    lineop_msgs: np.ndarray  # [line op, 3]: first source, first sink, end (message ids)
    flag_start: np.ndarray  # CSR over steps: flag messages sent on completion
    flag_msg: np.ndarray
    msg_kind: np.ndarray
    msg_lineop: np.ndarray  # -1 for flags
    msg_cu: np.ndarray
    # flag: the step it releases; data-polled write or store: its arrival counter; else -1
    msg_target: np.ndarray
    msg_bytes: np.ndarray  # data bytes the message carries (a wire line carries fewer)
    msg_ack_ps: np.ndarray
    msg_dst_gpu: np.ndarray
    msg_address: np.ndarray  # line address of the data's destination (or source for reads)
    msg_port: np.ndarray  # port the message crosses sockets by, or -1
    msg_stack: np.ndarray  # stack it reads or writes
    msg_pre_ps: np.ndarray  # pure delay before the first resource (L1, a request's path)
    route_start: np.ndarray  # CSR over messages
    route: np.ndarray  # resource ids
    route_post_ps: np.ndarray  # pure delay after each resource (the plane's latency)
    route_table: np.ndarray  # [entry, 2]: ``route`` and ``route_post_ps`` are its columns
    arrival_lines: np.ndarray  # per arrival counter (a data-polled transfer): its lines
    release_start: np.ndarray  # CSR over arrival counters: steps its last line releases
    release: np.ndarray

    @property
    def messages(self) -> int:
        """How many messages."""
        return len(self.msg_kind)

    @property
    def steps(self) -> int:
        """How many steps."""
        return len(self.step_tb)


def count_messages(plan: Plan, chunk_bytes: int, line_bytes: int) -> int:
    """How many messages lowering ``plan`` would make (before any background work)."""
    return packet_messages(plan, chunk_bytes, line_bytes)


def lower(
    pod: Pod,
    plan: Plan,
    placement: Placement,
    dtype: str = "bf16",
    background: BackgroundLoad | None = None,
    max_messages: int | None = None,
) -> Lowered:
    """Arrays for the engines. ``dtype`` sets the element size of reductions;
    ``background`` adds a GEMM's threadblocks beside the collective's. A run whose memory
    estimate exceeds the memory budget (``admission``), or of more than ``max_messages``
    messages when given, is refused before anything is allocated."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown data type {dtype!r} (known: {', '.join(DTYPE_BYTES)})")
    expected = packet_messages(plan, placement.chunk_bytes, pod.socket.line_bytes)
    if background is not None:
        expected += plan.ngpus * sum(len(a) for a in (*background.inputs, *background.outputs))
    budget = memory_budget()
    if max_messages is not None:
        budget = Budget(packet_bytes(max_messages), f"{max_messages:,} messages")
    refuse_beyond(expected, budget)
    accesses = plan_accesses(plan)
    ops = line_operations(
        pod, accesses, resolve(plan, placement, accesses), placement.chunk_bytes, dtype
    )
    parts = [_collective(ops, step_graph(plan, placement, ops.arrival_lines, ops.arrival_transfer))]
    if background is not None:
        numbers = parts[0].next_numbers()
        parts.append(lower_background(pod, placement.address_map, background, plan.ngpus, numbers))
    return _lowered(pod, plan.ngpus, join(parts))


def _collective(ops: LineOps, graph: StepGraph) -> Program:
    """The collective's program: its messages step by step, each step's data messages
    before its flags."""
    steps = len(graph.step_tb)
    step_flags = np.bincount(graph.flag_step, minlength=steps)
    flags_before = np.cumsum(step_flags) - step_flags
    data_through = np.cumsum(np.bincount(ops.message_step, minlength=steps))
    data_at = np.arange(ops.messages.size) + flags_before[ops.message_step]
    flag_at = data_through[graph.flag_step] + np.arange(graph.flags.size)
    columns = []
    for data, flag in zip(ops.messages, graph.flags, strict=True):
        column = np.empty(len(data_at) + len(flag_at), dtype=np.int64)
        column[data_at], column[flag_at] = data, flag
        columns.append(column)
    return Program(
        tb_cu=np.array(graph.tb_cu, dtype=np.int64),
        tb_gpu=np.array(graph.tb_gpu, dtype=np.int64),
        step_tb=np.array(graph.step_tb, dtype=np.int64),
        step_wait=np.array(graph.wait, dtype=np.int64),
        step_compute_ps=np.zeros(steps, dtype=np.int64),
        step_background=np.zeros(steps, dtype=bool),
        step_lineops=np.bincount(ops.step, minlength=steps),
        step_flags=step_flags,
        succ=graph.succ,
        lineop_step=ops.step,
        lineop_compute_ps=ops.compute_ps,
        lineop_msgs=ops.msgs + flags_before[ops.step][:, None],
        flag_msg=flag_at,
        messages=Messages(*columns),
        arrival_lines=ops.arrival_lines,
        releases=graph.releases,
    )


def _starts(counts: np.ndarray) -> np.ndarray:
    """CSR starts from counts."""
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _flat(lists: list[list[int]]) -> np.ndarray:
    return np.array([x for items in lists for x in items], dtype=np.int64)


def _lowered(pod: Pod, ngpus: int, program: Program) -> Lowered:
    socket, p, m = pod.socket, program, program.messages
    numbering = resource_numbering(pod, ngpus)
    routes = build_routes(pod, numbering, m)
    return Lowered(
        ngpus=ngpus,
        cus_per_gpu=socket.cus,
        window=socket.outstanding_requests,
        line_bytes=socket.line_bytes,
        resources=build_resources(pod, numbering),
        tb_cu=p.tb_cu,
        tb_gpu=p.tb_gpu,
        step_tb=p.step_tb,
        step_wait=p.step_wait.astype(np.int64),
        step_compute_ps=p.step_compute_ps.astype(np.int64),
        step_background=p.step_background,
        succ_start=_starts([len(x) for x in p.succ]),
        succ=_flat(p.succ),
        lineop_start=_starts(p.step_lineops),
        lineop_step=p.lineop_step,
        lineop_compute_ps=p.lineop_compute_ps,
        lineop_msgs=p.lineop_msgs.astype(np.int64).reshape(-1, 3),
        flag_start=_starts(p.step_flags),
        flag_msg=p.flag_msg,
        msg_kind=m.kind.astype(np.int8),
        msg_lineop=m.lineop,
        msg_cu=m.cu,
        msg_target=m.target,
        msg_bytes=m.data_bytes,
        msg_ack_ps=routes.ack_ps,
        msg_dst_gpu=m.memory_gpu,
        msg_address=m.address,
        msg_port=m.port,
        msg_stack=m.stack,
        msg_pre_ps=routes.pre_ps,
        route_start=routes.start,
        route=routes.resource,
        route_post_ps=routes.post_ps,
        route_table=routes.table,
        arrival_lines=p.arrival_lines.astype(np.int64),
        release_start=_starts([len(x) for x in p.releases]),
        release=_flat(p.releases),
    )
