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
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple

import numpy as np

from nunasim.collectives.plan import Buffer, Chunks, Plan, Protocol, Step, StepId
from nunasim.errors import ConfigError
from nunasim.hardware import Pod
from nunasim.mapping.placement import BackgroundLoad, Placement
from nunasim.units import transfer_ps
from nunasim.workload import DTYPE_BYTES, GemmTile

# message kinds
READ, LOAD, WRITE, STORE, FLAG = 0, 1, 2, 3, 4
# resource kinds
LINK, EGRESS, PLANE_OUT, STACK, INJECT, EJECT = 0, 1, 2, 3, 4, 5
RESOURCE_NAMES = ("link", "port", "plane", "stack", "inject", "eject")
_ROUTES = {LOAD: "load", STORE: "store"}  # routes that cross sockets, by message kind


@dataclass(frozen=True)
class Route:
    pre: int  # pure delay before the first resource
    resources: list[int]
    post: list[int]  # pure delay after each resource
    ack: int  # acknowledgement delay back to the CU


@dataclass(frozen=True, eq=False)
class Resources:
    occ: np.ndarray  # ps a flit holds the resource
    lat: np.ndarray  # ps from the start of service to the next route entry
    kind: np.ndarray  # LINK, EGRESS, PLANE_OUT or STACK
    gpu: np.ndarray
    index: np.ndarray  # link id, port number or stack number on that GPU


@dataclass(frozen=True, eq=False)
class Lowered:
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
    arrival_lines: np.ndarray  # per arrival counter (a data-polled transfer): its lines
    release_start: np.ndarray  # CSR over arrival counters: steps its last line releases
    release: np.ndarray

    @property
    def messages(self) -> int:
        return len(self.msg_kind)

    @property
    def steps(self) -> int:
        return len(self.step_tb)


class _Builder:
    """Collects routes and messages; one instance per lowering."""

    def __init__(self, pod: Pod, placement: Placement, ngpus: int) -> None:
        self.pod, self.placement = pod, placement
        socket = pod.socket
        self.socket = socket
        self.mesh = socket.mesh
        self.slots = self.mesh.link_slots
        self.ports = len(socket.ports)
        self.stacks = len(socket.stacks)
        self.ngpus = ngpus
        self.amap = placement.address_map
        links = self.slots * ngpus
        # resource numbering: links, egress ports, plane outputs, stacks, injection and
        # ejection ports of routers
        self.routers = self.mesh.routers
        self.egress0 = links
        self.plane0 = self.egress0 + ngpus * self.ports
        self.stack0 = self.plane0 + ngpus * self.ports
        self.inject0 = self.stack0 + ngpus * self.stacks
        self.eject0 = self.inject0 + ngpus * self.routers
        total = self.eject0 + ngpus * self.routers
        occ = np.zeros(total, dtype=np.int64)
        lat = np.zeros(total, dtype=np.int64)
        kind = np.zeros(total, dtype=np.int8)
        gpu = np.zeros(total, dtype=np.int64)
        index = np.zeros(total, dtype=np.int64)
        link_lat = np.zeros(self.slots, dtype=np.int64)
        for link in self.mesh.links():
            link_lat[link] = socket.link_latency_ps(link)
        for g in range(ngpus):
            sl = slice(g * self.slots, (g + 1) * self.slots)
            occ[sl], lat[sl], kind[sl] = socket.link_flit_ps, link_lat, LINK
            gpu[sl], index[sl] = g, np.arange(self.slots)
            for base, k, latency in (
                (self.egress0, EGRESS, pod.port_flit_ps),
                (self.plane0, PLANE_OUT, 0),
            ):
                sl = slice(base + g * self.ports, base + (g + 1) * self.ports)
                occ[sl], lat[sl], kind[sl] = pod.port_flit_ps, latency, k
                gpu[sl], index[sl] = g, np.arange(self.ports)
            for s, stack in enumerate(socket.stacks):
                r = self.stack0 + g * self.stacks + s
                occ[r] = transfer_ps(socket.line_bytes, stack.bandwidth)
                lat[r], kind[r], gpu[r], index[r] = stack.latency_ps, STACK, g, s
            for base, k in ((self.inject0, INJECT), (self.eject0, EJECT)):
                sl = slice(base + g * self.routers, base + (g + 1) * self.routers)
                occ[sl], lat[sl], kind[sl] = socket.link_flit_ps, 0, k
                gpu[sl], index[sl] = g, np.arange(self.routers)
        self.resources = Resources(occ, lat, kind, gpu, index)
        self.port_router = [p.router for p in socket.ports]
        self.stack_router = [s.router for s in socket.stacks]
        self._paths: dict[tuple[int, int, int], list[int]] = {}
        self._latency: dict[tuple[int, int], int] = {}
        self._routes: dict[str, dict[tuple[int, ...], Route]] = {}

    def path(self, gpu: int, a: int, b: int) -> list[int]:
        """Link ids (on ``gpu``) of the route from router ``a`` to router ``b``."""
        key = (gpu, a, b)
        if key not in self._paths:
            base = gpu * self.slots
            self._paths[key] = [base + link for link in self.socket.path(a, b)]
        return self._paths[key]

    def latency(self, a: int, b: int) -> int:
        key = (a, b)
        if key not in self._latency:
            self._latency[key] = self.socket.path_latency_ps(a, b)
        return self._latency[key]

    def stack_res(self, gpu: int, stack: int) -> int:
        return self.stack0 + gpu * self.stacks + stack

    def inject(self, gpu: int, router: int) -> int:
        return self.inject0 + gpu * self.routers + router

    def eject(self, gpu: int, router: int) -> int:
        return self.eject0 + gpu * self.routers + router

    # --- routes -------------------------------------------------------------------------
    # A route is (pre, resources, post, ack): the pure delay before its first resource
    # (always the CU's L1 latency, plus a read request's latency), the resources in order,
    # the pure delay after each (the plane's latency after the egress port), and the
    # acknowledgement's delay back to the CU. Routes are built once per distinct key.

    def route(self, kind: str, *key: int) -> Route:
        memo = self._routes.setdefault(kind, {})
        if key not in memo:
            memo[key] = getattr(self, f"_{kind}_route")(*key)
        return memo[key]

    def _read_route(self, gpu: int, cu_router: int, stack: int) -> Route:
        sr = self.stack_router[stack]
        ids = [
            self.stack_res(gpu, stack),
            *self.path(gpu, sr, cu_router),
            self.eject(gpu, cu_router),
        ]
        pre = self.socket.l1_latency_ps + self.latency(cu_router, sr)
        return Route(pre, ids, [0] * len(ids), 0)

    def _write_route(self, gpu: int, cu_router: int, stack: int) -> Route:
        sr = self.stack_router[stack]
        ids = [
            self.inject(gpu, cu_router),
            *self.path(gpu, cu_router, sr),
            self.stack_res(gpu, stack),
        ]
        return Route(self.socket.l1_latency_ps, ids, [0] * len(ids), self.latency(sr, cu_router))

    def _across(
        self, src: int, dst: int, port: int, before: list[int], after: list[int]
    ) -> tuple[list[int], list[int]]:
        """Resources and post delays of a path that leaves ``src`` by ``port`` and enters
        ``dst`` by the same port ordinal: the plane's latency follows the egress port."""
        ids = [
            *before,
            self.egress0 + src * self.ports + port,
            self.plane0 + dst * self.ports + port,
            *after,
        ]
        post = [0] * len(ids)
        post[len(before)] = self.pod.plane_latency_ps
        return ids, post

    def _store_route(self, gpu: int, cu_router: int, dst: int, port: int, stack: int) -> Route:
        pr, sr = self.port_router[port], self.stack_router[stack]
        ids, post = self._across(
            gpu,
            dst,
            port,
            [self.inject(gpu, cu_router), *self.path(gpu, cu_router, pr)],
            [*self.path(dst, pr, sr), self.stack_res(dst, stack)],
        )
        ack = self.latency(sr, pr) + self.pod.plane_latency_ps + self.latency(pr, cu_router)
        return Route(self.socket.l1_latency_ps, ids, post, ack)

    def _load_route(self, gpu: int, cu_router: int, src: int, port: int, stack: int) -> Route:
        pr, sr = self.port_router[port], self.stack_router[stack]
        request = self.latency(cu_router, pr) + self.pod.plane_latency_ps + self.latency(pr, sr)
        ids, post = self._across(
            src,
            gpu,
            port,
            [self.stack_res(src, stack), *self.path(src, sr, pr)],
            [*self.path(gpu, pr, cu_router), self.eject(gpu, cu_router)],
        )
        return Route(self.socket.l1_latency_ps + request, ids, post, 0)


def _gemm_ps(pod: Pod, tile: GemmTile) -> int:
    """A tile's compute time on one CU, at its share of the socket's rate for the dtype."""
    socket = pod.socket
    return max(1, round(tile.flops / (socket.flops_for(tile.dtype) / socket.cus) * 1e12))


def _reduce_ps(pod: Pod, sources: int, dtype: str, data_bytes: int) -> int:
    """Time to combine ``sources`` values of ``data_bytes`` each on one CU."""
    if sources < 2:
        return 0
    socket = pod.socket
    per_cu = socket.flops_for(dtype) / socket.cus
    elements = data_bytes / DTYPE_BYTES[dtype]
    return max(1, round((sources - 1) * elements / per_cu * 1e12))


# About 300 bytes of arrays per message once lowered (and more while lowering), so 20 M
# messages is several GB: beyond that the packet engine is the wrong tool.
MAX_MESSAGES = 20_000_000


@dataclass(frozen=True)
class _Range:
    """One range of chunks a step fetches from or delivers to, in one format."""

    kind: int  # READ, LOAD, WRITE or STORE (a send to the step's own GPU is a WRITE)
    gpu: int  # the GPU whose memory it is
    chunks: Chunks
    protocol: Protocol
    transfer: int = -1  # the transfer it belongs to (sinks of sends)


def _polled_landings(plan: Plan, step: Step) -> dict[tuple[Buffer, int], Protocol]:
    """Chunks (buffer, index) on the step's GPU that reach it by a data-polled transfer it
    receives: it polls them in their wire format. A data-polled flag alone polls the data
    of the sending step's previous data transfer to the same GPU."""
    found: dict[tuple[Buffer, int], Protocol] = {}
    for x in step.recvs:
        t = plan.transfers[x]
        if not t.protocol.data_polled:
            continue
        polled = x if t.dst is not None else _polled_data(plan, x)
        if polled is not None:
            data = plan.transfers[polled]
            for k in data.dst.indices():
                found[(data.dst.buffer, k)] = data.protocol
    return found


def _polled_data(plan: Plan, x: int) -> int | None:
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


def _groups(plan: Plan, sid: StepId, step: Step) -> list[tuple[list[_Range], list[_Range]]]:
    """A step's (sources, sinks) groups, each range in its format: the step's combined value
    (when it combines any source) to its writes and sends, and then each send that stores a
    source of its own (a fused multi-destination put: read those lines, store them)."""
    landings = _polled_landings(plan, step) if step.recvs else {}

    def read_format(chunks: Chunks) -> Protocol:
        formats = {landings.get((chunks.buffer, k)) for k in chunks.indices()}
        return formats.pop() if len(formats) == 1 and None not in formats else Protocol.SIMPLE

    def sink(x: int) -> _Range:
        t = plan.transfers[x]
        return _Range(WRITE if t.dst_gpu == g else STORE, t.dst_gpu, t.dst, t.protocol, x)

    g = sid.gpu
    groups = []
    if step.combines:
        sources = [_Range(READ, g, c, read_format(c)) for c in step.reads]
        sources += [_Range(LOAD, r.gpu, r.chunks, Protocol.SIMPLE) for r in step.loads]
        sinks = [_Range(WRITE, g, c, Protocol.SIMPLE) for c in step.writes]
        sinks += [
            sink(x)
            for x in step.sends
            if plan.transfers[x].dst is not None and plan.transfers[x].source is None
        ]
        groups.append((sources, sinks))
    for x in step.sends:
        t = plan.transfers[x]
        if t.dst is not None and t.source is not None:
            groups.append(([_Range(READ, g, t.source, Protocol.SIMPLE)], [sink(x)]))
    return groups


def count_messages(plan: Plan, chunk_bytes: int, line_bytes: int) -> int:
    """How many messages lowering ``plan`` would make (before any background work)."""
    total = 0
    for sid, step in plan.steps():
        for sources, sinks in _groups(plan, sid, step):
            total += sum(
                r.chunks.count * r.protocol.lines(chunk_bytes, line_bytes)
                for r in (*sources, *sinks)
            )
        total += sum(  # flags
            1
            for x in step.sends
            if plan.transfers[x].receiver is not None and not plan.transfers[x].protocol.data_polled
        )
    return total


class _Lines(NamedTuple):
    """The lines of one range, grouped by the line operation that moves them."""

    op_start: list[int]  # CSR over the step's line operations
    address: list[int]
    port: list[int]
    stack: list[int]
    data: list[int]  # data bytes of each line


def _lines(placement: Placement, r: _Range, op_bytes: int, source: bool) -> _Lines:
    """Where the lines of range ``r`` go and which line operation (of ``op_bytes`` data
    bytes) moves each. A source line belongs to the operation holding its first data byte
    (the first to need it); a sink line to the one holding its last (the first that has
    all of its data)."""
    chunk_bytes, line_bytes = placement.chunk_bytes, placement.line_bytes
    per_line = r.protocol.data_bytes_per_line(line_bytes)
    plain = placement.lines_per_chunk
    addrs = placement.line_addresses(r.gpu, r.chunks.buffer, r.chunks.index, r.chunks.count)
    ops_per_chunk = -(-chunk_bytes // op_bytes)
    if per_line == line_bytes and op_bytes == line_bytes:  # plain lines, one per operation
        first = np.arange(plain, dtype=np.int64) * line_bytes
        data = np.minimum(line_bytes, chunk_bytes - first)
        picked = addrs
        op = np.arange(len(addrs), dtype=np.int64)
        data_all = np.tile(data, r.chunks.count)
    else:
        n = r.protocol.lines(chunk_bytes, line_bytes)
        first = np.arange(n, dtype=np.int64) * per_line  # first data byte of each wire line
        end = np.minimum(first + per_line, chunk_bytes)
        local_op = (first if source else end - 1) // op_bytes
        index = first // line_bytes  # the line holding its first data byte
        base = np.arange(r.chunks.count, dtype=np.int64)[:, None]
        picked = addrs[(base * plain + index[None, :]).ravel()]
        op = (base * ops_per_chunk + local_op[None, :]).ravel()
        data_all = np.tile(end - first, r.chunks.count)
    op_start = np.searchsorted(op, np.arange(r.chunks.count * ops_per_chunk + 1))
    amap = placement.address_map
    return _Lines(
        op_start.tolist(),
        picked.tolist(),
        amap.ports_of(picked).tolist(),
        amap.stacks_of(picked).tolist(),
        data_all.tolist(),
    )


def lower(
    pod: Pod,
    plan: Plan,
    placement: Placement,
    dtype: str = "bf16",
    background: BackgroundLoad | None = None,
    max_messages: int = MAX_MESSAGES,
) -> Lowered:
    """Arrays for the engines. ``dtype`` sets the element size of reductions;
    ``background`` adds a GEMM's threadblocks beside the collective's."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown data type {dtype!r} (known: {', '.join(DTYPE_BYTES)})")
    socket = pod.socket
    b = _Builder(pod, placement, plan.ngpus)
    chunk_bytes, line_bytes = placement.chunk_bytes, socket.line_bytes
    expected = count_messages(plan, chunk_bytes, line_bytes)
    if background is not None:
        per_tile = sum(len(a) for a in background.inputs) + sum(len(a) for a in background.outputs)
        expected += per_tile * plan.ngpus
    if expected > max_messages:
        raise ConfigError(
            f"this run would simulate {expected:,} messages (one per line for every source "
            f"and destination), more than the packet engine's limit of {max_messages:,}: "
            "use a smaller collective size or fewer GPUs"
        )

    tb_base = np.cumsum([0, *plan.threadblocks_per_gpu])
    step_base: dict[tuple[int, int], int] = {}
    tb_cu, tb_gpu, step_tb = [], [], []
    for g, program in enumerate(plan.gpus):
        for t, tb in enumerate(program.threadblocks):
            step_base[(g, t)] = len(step_tb)
            tb_cu.append(g * socket.cus + int(placement.gpus[g].tb_cu[t]))
            tb_gpu.append(g)
            step_tb.extend([int(tb_base[g]) + t] * len(tb.steps))
    nsteps = len(step_tb)

    wait = np.zeros(nsteps, dtype=np.int64)
    succ: list[list[int]] = [[] for _ in range(nsteps)]
    lineop_start = [0]
    lineop_step, lineop_compute, lineop_msgs = [], [], []
    flag_lists: list[list[int]] = [[] for _ in range(nsteps)]
    kinds, lineop_of, msg_cu, target, dst_gpu, address, data_bytes = [], [], [], [], [], [], []
    routes: list[Route] = []
    ports_of_msg, stacks_of_msg = [], []
    arrival_lines: list[int] = []  # per data-polled transfer: the lines that must land
    releases: list[list[int]] = []  # per data-polled transfer: steps its last line releases

    def add(
        kind: int,
        route: Route,
        lo: int,
        cu: int,
        gpu: int,
        addr: int,
        port: int,
        stack: int,
        tgt: int = -1,
        data: int = 0,
    ) -> int:
        routes.append(route)
        kinds.append(kind)
        ports_of_msg.append(port)
        stacks_of_msg.append(stack)
        lineop_of.append(lo)
        msg_cu.append(cu)
        target.append(tgt)
        dst_gpu.append(gpu)
        address.append(addr)
        data_bytes.append(data)
        return len(kinds) - 1

    amap = placement.address_map
    for sid, step in plan.steps():
        s = step_base[(sid.gpu, sid.tb)] + sid.step
        preds = set()
        if sid.step:
            preds.add(s - 1)
        for dep in step.deps:
            by = plan.signaller(sid.gpu, dep)
            if by is None:
                raise ConfigError(
                    f"waits for gpu {sid.gpu} tb {dep[0]} step {dep[1]}, which never signals "
                    "its dependants, nor does any later step of its threadblock: the run "
                    "would never finish",
                    source=plan.source or plan.name,
                    where=str(sid),
                )
            preds.add(step_base[(by.gpu, by.tb)] + by.step)
        for p in preds:
            succ[p].append(s)
        wait[s] = len(preds) + sum(1 for x in step.recvs)
        g = sid.gpu
        cu = int(placement.gpus[g].tb_cu[sid.tb])
        gcu = g * socket.cus + cu
        router = socket.cu_router(cu)

        groups = _groups(plan, sid, step)
        counter: dict[int, int] = {}  # data-polled transfer -> its arrival counter
        for _, sinks in groups:
            for r in sinks:
                if r.protocol.data_polled:
                    counter[r.transfer] = len(arrival_lines)
                    arrival_lines.append(0)
                    releases.append([])
        for sources, sinks in groups:
            ranges = [*sources, *sinks]
            op_bytes = max(r.protocol.data_bytes_per_line(line_bytes) for r in ranges)
            laid = [_lines(placement, r, op_bytes, i < len(sources)) for i, r in enumerate(ranges)]
            compute = _reduce_ps(pod, len(sources), dtype, op_bytes)  # per operation
            specs = [
                (r.kind, r.gpu, counter.get(r.transfer, -1), *lines)
                for r, lines in zip(ranges, laid, strict=True)
            ]
            parts = (specs[: len(sources)], specs[len(sources) :])
            count = max(r.chunks.count for r in ranges)
            for i in range(count * -(-chunk_bytes // op_bytes)):
                lo = len(lineop_step)
                lineop_step.append(s)
                lineop_compute.append(compute)
                first_source = len(kinds)
                for sinks_now, part in enumerate(parts):
                    if sinks_now:
                        first_sink = len(kinds)
                    for kind, gpu, tgt, op_start, addrs, ports, stacks, data in part:
                        for k in range(op_start[i], op_start[i + 1]):
                            stack = stacks[k]
                            if kind == READ:
                                route, port = b.route("read", g, router, stack), -1
                            elif kind == WRITE:
                                route, port = b.route("write", g, router, stack), -1
                            else:
                                port = ports[k]
                                route = b.route(_ROUTES[kind], g, router, gpu, port, stack)
                            add(kind, route, lo, gcu, gpu, addrs[k], port, stack, tgt, data[k])
                        if tgt >= 0:
                            arrival_lines[tgt] += op_start[i + 1] - op_start[i]
                lineop_msgs.append((first_source, first_sink, len(kinds)))
        lineop_start.append(len(lineop_step))
        for x in step.sends:
            t = plan.transfers[x]
            if t.receiver is None:
                continue
            rx = step_base[(t.receiver.gpu, t.receiver.tb)] + t.receiver.step
            if t.protocol.data_polled:  # released by the data itself: no flag message
                data = x if t.dst is not None else _polled_data(plan, x)
                if data is None:
                    raise ConfigError(
                        f"a {t.protocol} flag alone to gpu {t.dst_gpu} follows no {t.protocol} "
                        "data transfer of its step to that GPU, so it has nothing to poll",
                        source=plan.source,
                        where=str(sid),
                    )
                if arrival_lines[counter[data]]:
                    releases[counter[data]].append(rx)
                else:  # a transfer of no lines lands when its step completes
                    succ[s].append(rx)
                continue
            flag_addr = placement.flag_address(t.receiver.gpu, t.receiver.tb)
            port, stack = amap.port_of(flag_addr), amap.stack_of(flag_addr)
            if t.dst_gpu == g:
                route = b.route("write", g, router, stack)
                port = -1
            else:
                route = b.route("store", g, router, t.dst_gpu, port, stack)
            m = add(FLAG, route, -1, gcu, t.dst_gpu, flag_addr, port, stack, rx)
            flag_lists[s].append(m)

    step_compute = [0] * nsteps
    step_background = [False] * nsteps
    if background is not None:
        tile = background.tile
        for g in range(plan.ngpus):
            for i, cu in enumerate(background.tb_cu[g]):
                tb = len(tb_cu)
                tb_cu.append(g * socket.cus + int(cu))
                tb_gpu.append(g)
                gcu, router = g * socket.cus + int(cu), socket.cu_router(int(cu))
                first = len(step_tb)
                step_tb.extend([tb] * 3)
                succ.extend([[first + 1], [first + 2], []])
                flag_lists.extend([[], [], []])
                wait = np.concatenate([wait, [0, 1, 1]])
                step_compute += [0, _gemm_ps(pod, tile), 0]
                step_background += [True] * 3
                for a in background.inputs[i].tolist():  # load: a read, nothing to deliver
                    lo = len(lineop_step)
                    lineop_step.append(first)
                    lineop_compute.append(0)
                    stack = amap.stack_of(a)
                    route = b.route("read", g, router, stack)
                    add(READ, route, lo, gcu, g, a, -1, stack, data=line_bytes)
                    lineop_msgs.append((len(kinds) - 1, len(kinds), len(kinds)))
                lineop_start.append(len(lineop_step))
                lineop_start.append(len(lineop_step))  # the compute step moves nothing
                for a in background.outputs[i].tolist():  # store: nothing to fetch
                    lo = len(lineop_step)
                    lineop_step.append(first + 2)
                    lineop_compute.append(0)
                    stack = amap.stack_of(a)
                    route = b.route("write", g, router, stack)
                    add(WRITE, route, lo, gcu, g, a, -1, stack, data=line_bytes)
                    lineop_msgs.append((len(kinds) - 1, len(kinds) - 1, len(kinds)))
                lineop_start.append(len(lineop_step))

    succ_start = np.cumsum([0, *(len(x) for x in succ)])
    flag_start = np.cumsum([0, *(len(x) for x in flag_lists)])
    route_start = np.cumsum([0, *(len(r.resources) for r in routes)])
    release_start = np.cumsum([0, *(len(x) for x in releases)])
    return Lowered(
        ngpus=plan.ngpus,
        cus_per_gpu=socket.cus,
        window=socket.outstanding_requests,
        line_bytes=socket.line_bytes,
        resources=b.resources,
        tb_cu=np.array(tb_cu, dtype=np.int64),
        tb_gpu=np.array(tb_gpu, dtype=np.int64),
        step_tb=np.array(step_tb, dtype=np.int64),
        step_wait=wait.astype(np.int64),
        step_compute_ps=np.array(step_compute, dtype=np.int64),
        step_background=np.array(step_background, dtype=bool),
        succ_start=succ_start.astype(np.int64),
        succ=np.array([x for lst in succ for x in lst], dtype=np.int64),
        lineop_start=np.array(lineop_start, dtype=np.int64),
        lineop_step=np.array(lineop_step, dtype=np.int64),
        lineop_compute_ps=np.array(lineop_compute, dtype=np.int64),
        lineop_msgs=np.array(lineop_msgs, dtype=np.int64).reshape(-1, 3),
        flag_start=flag_start.astype(np.int64),
        flag_msg=np.array([m for lst in flag_lists for m in lst], dtype=np.int64),
        msg_kind=np.array(kinds, dtype=np.int8),
        msg_lineop=np.array(lineop_of, dtype=np.int64),
        msg_cu=np.array(msg_cu, dtype=np.int64),
        msg_target=np.array(target, dtype=np.int64),
        msg_bytes=np.array(data_bytes, dtype=np.int64),
        msg_ack_ps=np.array(
            [r.ack if k in (WRITE, STORE) else 0 for r, k in zip(routes, kinds, strict=True)],
            dtype=np.int64,
        ),
        msg_dst_gpu=np.array(dst_gpu, dtype=np.int64),
        msg_address=np.array(address, dtype=np.int64),
        msg_port=np.array(ports_of_msg, dtype=np.int64),
        msg_stack=np.array(stacks_of_msg, dtype=np.int64),
        msg_pre_ps=np.array([r.pre for r in routes], dtype=np.int64),
        route_start=route_start.astype(np.int64),
        route=np.fromiter(chain.from_iterable(r.resources for r in routes), dtype=np.int64),
        route_post_ps=np.fromiter(chain.from_iterable(r.post for r in routes), dtype=np.int64),
        arrival_lines=np.array(arrival_lines, dtype=np.int64),
        release_start=release_start.astype(np.int64),
        release=np.array([w for lst in releases for w in lst], dtype=np.int64),
    )
