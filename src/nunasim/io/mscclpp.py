"""Importing MSCCL++ JSON execution plans (the format of mscclpp >= Aug 2025) into the plan IR.

The format is read by mscclpp's ``src/core/executor/execution_plan.cc`` and run by
``execution_kernel.hpp``; this importer follows those two files, not the DSL that writes
the plans. Every MSCCL++ op becomes exactly one IR step (``Step.op`` is the op's name), so
``gpu g tb t step k`` in a checker message is ``gpus[g].threadblocks[t].ops[k]`` in the
file. Every error is a ``ConfigError`` naming the file, the element (for example
``gpus[0].threadblocks[3].ops[5].src_buff[1]``) and the reason; nothing is returned
unless the whole plan imported.

**Data ops.** ``src_buff`` entries are read and ``dst_buff`` entries written; an entry
with ``type`` is local, one with ``buffer_id`` is remote:

==========  ===================================================================
op          IR step
==========  ===================================================================
copy        reads src, writes dst
re          reads every src (a reduction when there are several), writes dst
res         as ``re``, and plain puts of the result to ``dst_buff[1:]`` (remote)
get         loads the remote src, writes the local dst
rre         reads ``src_buff[0]``, loads ``src_buff[1:]`` (remote), writes dst
rres        as ``rre``, and plain puts of the result to ``dst_buff[1:]``
put         ``src_buff[i]`` to ``dst_buff[i]`` (remote), a plain put (no receiver)
            each
pws, pwsf   as ``put``; on a port channel each store also signals its channel, so
            it is paired like a ``signal`` (below) and received by that ``wait``.
            The executor signals only on port channels: over a memory channel
            these are plain puts, as ``handlePut`` does.
==========  ===================================================================

A plain put is a transfer without a receiving step: whoever reads its chunks must be
ordered after it by a later signal, as in MSCCL++. The DSL fuses consecutive puts of one
threadblock (``put``, ``ppkt``, ``pws``, ``pwsf``) with the same chunk count and channel
type into one op whose ``src_buff`` and ``dst_buff`` list the pairs in order, so sources
may differ. When every source is the same range the step reads it once and stores it to
every destination; otherwise each (source, destination) pair becomes a transfer with a
source of its own (``Transfer.source``), a copy of those chunks, and the step itself reads
nothing.

**Remote buffers.** ``buffer_id`` indexes the threadblock's remote buffers for the op's
``channel_type``: the ``remote_buffer_ids`` of its ``remote_buffer_refs`` entries with
that ``access_channel_type``, concatenated in order (as the executor builds them). The id
found there indexes ``gpus[g].remote_buffers``, which gives the owning rank and buffer.

**Channels and signals.** A GPU's channels of one type (memory or port) are numbered by
flattening the ``connected_to`` lists of its ``channels`` entries of that type; a
threadblock's ``channels`` list maps the op's ``channel_ids`` to those GPU-level numbers.
The executor connects two GPUs with one connection (and one semaphore) per channel, tagged
per peer in order, memory channels first, then port channels (``executor.cc``,
``setupConnections``/``setupChannels``). So the k-th channel of a type from g to p shares
its semaphore with the k-th channel of that type from p to g. A ``signal``/``rlxsignal``
(or a port ``pws``/``pwsf``) over g's channel is a flag transfer received by a
``wait``/``rlxwait`` on p's paired channel, in FIFO order per channel pair: the n-th
signal is received by the n-th wait. A ``wait`` on several ``channel_ids`` receives one
signal on each. A signal without its wait, or a wait without its signal, is refused (the
semaphores outlive the kernel, so a surplus flag would release the next run early), and so
is a channel whose signals, or whose waits, come from more than one threadblock: a
semaphore only counts, so their FIFO order would be a guess. Relaxed signals are not
fenced; the IR has only fenced flags, so plans using them get a note saying so.

**Packets (LL).** Packet ops write data together with per-element flags and their
readers poll those flags, so a packet store needs no separate signal:

- packet writes: ``ppkt``/``rppkt`` to every remote dst, ``respkt`` to ``dst_buff[1:]``,
  ``recspkt`` to ``dst_buff[2:]`` (remote); ``cpkt`` to its dst and ``recpkt``/``recspkt``
  to ``dst_buff[1]`` (local);
- packet reads: ``src_buff[0]`` of ``upkt`` and ``rppkt``, ``src_buff[1:]`` of ``repkt``,
  ``respkt``, ``recpkt`` and ``recspkt`` (each also reads its plain ``src_buff[0]``).

Packets live in scratch (the executor always reads them there), and a packet location is
written at most once per run, since a reader could not tell two writes with the same flag
apart; both are checked. A remote packet store to chunks C of GPU p becomes one transfer
whose receiver is the first step of p, in (threadblock, step) order, that reads packets in
C, plus a flag-only transfer to each further such reader (each reader polls the flags
itself). A store nobody reads is a plain put, with a note. A local packet write becomes a
dependency of each reader on the writer. A packet read of a location no op writes in
packet format would spin forever and is refused. Packet stores, and the flag-only transfers
to further readers, are in the ``packet`` protocol: twice the bytes of the data on the
wire, no fence and no flag message, each reader released when the packets it polls have
landed. Plain puts and signals are ``Simple``. The ops, not the plan's top-level
``protocol``, say which data travels as packets.

**Other sync ops.** ``nop`` (``__syncthreads``), ``flush`` (the port proxy drains) and
``signal``/``wait`` steps carry no data. ``barrier`` ops with one ``barrier_id`` meet in
rounds: the n-th barrier of each threadblock that uses the id; every round must have
``num_threadblocks`` threadblocks, and each member depends on the step just before the
barrier in every other member. ``sem_acquire``/``sem_release`` on a GPU semaphore with
``init_value`` v pair in FIFO order: the n-th acquire of a threadblock is certain to follow
n - v releases. With releases from one threadblock that is its (n - v)-th release; with
several, it is each release that every n - v releases must include (in program order), so
only orderings the hardware guarantees become dependencies.

**Buffers.** Chunk counts come from ``input_chunks``/``output_chunks``/``scratch_chunks``
(input and output the same on every GPU). The collective's size splits into
``chunks_per_size`` chunks: the input chunks for allreduce, reducescatter and alltoall,
the output chunks for allgather (the gathered buffer). In-place plans are canonicalised as
``nunasim.collectives.layout`` expects: allreduce and alltoall map every ``o[k]`` to
``i[k]``; allgather maps ``i[j]`` of rank r to ``o[r * N/G + j]``; reducescatter maps
``o[j]`` of rank r to ``i[r * N/G + j]``; the folded buffer then has no chunks.

**Refused**: the legacy format (camelCase keys), collectives other than allreduce,
allgather, reducescatter and alltoall, switch (NVLS) channels, references and ops
(``glres``, ``gstore``, ``gstorepkt``), ``pipeline``, ``tbg_info`` (sub-chunk slices),
``get``/``rre``/``rres``/``res``/``respkt``/``recspkt`` over port channels (the executor
runs them over memory channels only), unknown ops, and every malformed input: missing or
mistyped keys, ``gpus[i].id != i`` or ``threadblocks[t].id != t``, indices out of range,
unresolvable remote references, inconsistent chunk counts, ranges of different sizes in one
op, unpaired signals, waits, barriers and semaphores, packets outside scratch or written
twice, and text that is not JSON.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nunasim.collectives.builder import PlanBuilder
from nunasim.collectives.layout import Aliasing
from nunasim.collectives.plan import (
    Buffer,
    Chunks,
    Collective,
    Plan,
    Protocol,
    RemoteChunks,
    StepId,
)
from nunasim.errors import ConfigError, quote
from nunasim.io.files import read_text
from nunasim.io.schema import Node, integer, text

_CHANNEL_TYPES = ("memory", "port")
_BUFFERS = {"i": Buffer.INPUT, "o": Buffer.OUTPUT, "s": Buffer.SCRATCH}
_BUFFER_NAMES = {Buffer.INPUT: "input", Buffer.OUTPUT: "output", Buffer.SCRATCH: "scratch"}
_COLLECTIVES = {
    c.value: c
    for c in (
        Collective.ALLREDUCE,
        Collective.ALLGATHER,
        Collective.REDUCESCATTER,
        Collective.ALLTOALL,
    )
}
_PROTOCOLS = ("Simple", "LL")
_NVLS_OPS = ("glres", "gstore", "gstorepkt")
_RELAXED_OPS = ("rlxsignal", "rlxwait")
# ops the executor runs only over memory channels (it reads memoryChannelBufferPtrs_)
_MEMORY_ONLY_OPS = ("get", "rre", "rres", "res", "respkt", "recspkt")

_Channel = tuple[str, int]  # (channel type, GPU-level channel index)
_Location = tuple[int, Buffer, int]  # (gpu, buffer, chunk)


# --- entry points -------------------------------------------------------------------------


def load_mscclpp(path: str | Path) -> Plan:
    """The plan in an MSCCL++ JSON execution plan file."""
    return parse_mscclpp(read_text(path), str(path))


def parse_mscclpp(text: str, source: str) -> Plan:
    """The plan in ``text``, an MSCCL++ JSON execution plan; ``source`` names it in errors
    and becomes ``Plan.source``."""
    root = Node(_load_json(text, source), "", source)
    return _Importer(root, source).run()


# A buffer of more chunks is no plan's (every chunk's pages are placed, so the count is
# memory), far beyond the hundreds real plans use.
MAX_BUFFER_CHUNKS = 1 << 20
# Longer integers are no count, id or sentinel a plan could hold (MSCCL++ writes 2**64 - 1,
# 20 digits, for "none"), and Python refuses to convert integers of thousands of digits.
MAX_JSON_DIGITS = 20


def _load_json(content: str, source: str) -> Any:
    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        repeated = [key for key, n in Counter(key for key, _ in pairs).items() if n > 1]
        if repeated:
            # A repeated key would silently lose one of its values.
            raise ConfigError(f"not valid JSON: key {repeated[0]!r} appears twice", source=source)
        return dict(pairs)

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_JSON_DIGITS:
            raise ConfigError(
                f"not valid here: a number of {len(digits):,} digits ({quote(digits)})",
                source=source,
            )
        return int(digits)

    def real(digits: str) -> float:
        value = float(digits)
        if not math.isfinite(value):
            raise ConfigError(
                f"not valid here: the number {quote(digits)} is not finite", source=source
            )
        return value

    def constant(name: str) -> None:
        raise ConfigError(f"not valid JSON: {name}", source=source)

    try:
        return json.loads(
            content,
            object_pairs_hook=unique_keys,
            parse_int=integer,
            parse_float=real,
            parse_constant=constant,
        )
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise ConfigError(f"not valid JSON: {exc.msg}", source=source, where=where) from None
    except RecursionError:
        raise ConfigError("not valid JSON: nested too deeply", source=source) from None


# --- plan-wide tables ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """Chunk counts and the in-place canonical form of buffer references."""

    collective: Collective
    inplace: bool
    ngpus: int
    input_chunks: int  # as in the file, the same on every GPU
    output_chunks: int
    scratch_chunks: tuple[int, ...]  # per GPU

    @property
    def chunks_per_size(self) -> int:
        if self.collective == Collective.ALLGATHER:
            return self.output_chunks
        return self.input_chunks

    @property
    def aliasing(self) -> Aliasing:
        return Aliasing(self.collective, self.inplace, self.ngpus, self.chunks_per_size)

    def declared(self, gpu: int, buffer: Buffer) -> int:
        """Chunks of ``buffer`` as the file declares them (before folding)."""
        if buffer == Buffer.INPUT:
            return self.input_chunks
        if buffer == Buffer.OUTPUT:
            return self.output_chunks
        return self.scratch_chunks[gpu]

    def ir_chunks(self, buffer: Buffer) -> int:
        return 0 if buffer == self.aliasing.folded else self.declared(0, buffer)

    def canonical(self, gpu: int, buffer: Buffer, index: int, count: int) -> Chunks:
        return Chunks(*self.aliasing.home(gpu, buffer, index), count)


@dataclass
class _GpuTables:
    channels: dict[str, list[int]]  # channel type -> peer of each GPU-level channel
    remote_buffers: list[tuple[int, Buffer, frozenset[str]]]  # (rank, buffer, channel types)
    semaphores: list[int]  # initial values


@dataclass
class _TbTables:
    channels: dict[str, list[int]]  # channel type -> GPU-level channel of each TB channel
    remote: dict[str, list[int]]  # channel type -> index into the GPU's remote_buffers


@dataclass(frozen=True)
class _Ref:
    """One resolved buffer reference: canonical chunks on ``gpu``."""

    gpu: int
    chunks: Chunks
    remote: bool
    where: str


@dataclass(frozen=True)
class _Store:
    """A remote write of an op."""

    gpu: int
    chunks: Chunks
    packet: bool
    signal: _Channel | None  # the channel it signals (port pws/pwsf), if any
    where: str
    source: Chunks | None = None  # its own local source (a fused put); None: the step's value


@dataclass
class _Op:
    """One MSCCL++ op, parsed: what its step reads and writes and how it synchronises."""

    name: str
    where: str
    sid: StepId
    reads: list[Chunks] = field(default_factory=list)
    loads: list[RemoteChunks] = field(default_factory=list)
    writes: list[Chunks] = field(default_factory=list)
    stores: list[_Store] = field(default_factory=list)
    signals: list[_Channel] = field(default_factory=list)
    waits: list[_Channel] = field(default_factory=list)
    packet_reads: list[Chunks] = field(default_factory=list)
    packet_writes: list[Chunks] = field(default_factory=list)  # local
    barrier: tuple[int, int] | None = None  # (barrier_id, num_threadblocks)
    acquires: list[int] = field(default_factory=list)
    releases: list[int] = field(default_factory=list)

    def sizes(self) -> list[int]:
        ranges = [*self.reads, *(r.chunks for r in self.loads), *self.writes]
        ranges += [s.source for s in self.stores if s.source is not None]
        return [c.count for c in ranges] + [s.chunks.count for s in self.stores]


def _fail(source: str, where: str, reason: str) -> ConfigError:
    return ConfigError(reason, source=source, where=where)


# --- the importer -------------------------------------------------------------------------


class _Importer:
    def __init__(self, root: Node, source: str) -> None:
        self.root = root
        self.source = source
        self.notes: list[str] = []

    def run(self) -> Plan:
        name = self.root.get("name", text)
        collective, inplace = self._header()
        gpu_nodes = list(self.root.child("gpus").items())
        if not gpu_nodes:
            raise self.root.error("a plan needs at least one GPU", "gpus")
        layout = self._layout(gpu_nodes, collective, inplace)
        tables = [self._gpu_tables(node, g, len(gpu_nodes)) for g, node in enumerate(gpu_nodes)]
        builder = PlanBuilder(
            name,
            collective,
            len(gpu_nodes),
            input_chunks=layout.ir_chunks(Buffer.INPUT),
            output_chunks=layout.ir_chunks(Buffer.OUTPUT),
            chunks_per_size=layout.chunks_per_size,
            inplace=inplace,
            source=self.source,
        )
        ops: list[list[_Op]] = []
        for g, node in enumerate(gpu_nodes):
            builder.set_buffers(
                g,
                layout.ir_chunks(Buffer.INPUT),
                layout.ir_chunks(Buffer.OUTPUT),
                layout.scratch_chunks[g],
            )
            ops.append(self._gpu_ops(builder, node, g, tables, layout))
        every = [op for gpu_ops in ops for op in gpu_ops]
        _pair_signals(builder, every, tables, self.source)
        for op in every:
            for store in op.stores:
                if not store.packet and store.signal is None:
                    builder.transfer(op.sid, store.gpu, store.chunks, None, source=store.source)
        _pair_packets(builder, every, self.source, self.notes)
        for g, gpu_ops in enumerate(ops):
            _pair_barriers(builder, gpu_ops, self.source)
            _pair_semaphores(builder, gpu_ops, tables[g].semaphores, self.source, self.notes)
        if any(op.name in _RELAXED_OPS for op in every):
            self.notes.append(
                "relaxed signals (rlxsignal/rlxwait) are modelled as fenced flags; MSCCL++ does "
                "not fence them, so data published only through one is not certain to be seen"
            )
        builder.notes.extend(self.notes)
        return builder.build()

    # --- header and buffers ---------------------------------------------------------------

    def _header(self) -> tuple[Collective, bool]:
        gpus = self.root.child("gpus").value
        first = gpus[0] if isinstance(gpus, list) and gpus else None
        if isinstance(first, dict) and "inputChunks" in first:
            raise self.root.error(
                "this is the legacy MSCCL++ plan format (camelCase keys such as inputChunks); "
                "only the current format (mscclpp >= Aug 2025) is supported",
                "gpus[0]",
            )
        collective = self.root.get("collective", text)
        if collective not in _COLLECTIVES:
            known = ", ".join(_COLLECTIVES)
            raise self.root.error(
                f"collective {collective!r} is not supported (supported: {known})", "collective"
            )
        protocol = self.root.get("protocol", text)
        if protocol not in _PROTOCOLS:
            raise self.root.error(
                f"protocol {protocol!r} is not Simple or LL (packets)", "protocol"
            )
        inplace = self.root.get("inplace", _boolean)
        return _COLLECTIVES[collective], inplace

    def _layout(self, nodes: list[Node], collective: Collective, inplace: bool) -> _Layout:
        rows: list[tuple[int, int, int]] = []
        for g, node in enumerate(nodes):
            rank = node.get("id", integer)
            if rank != g:
                raise node.error(
                    f"gpus[{g}] has id {rank}; the list must hold the ranks in order", "id"
                )
            row = (
                _chunk_count(node, "input_chunks"),
                _chunk_count(node, "output_chunks"),
                _chunk_count(node, "scratch_chunks"),
            )
            for i, key in enumerate(("input_chunks", "output_chunks")):
                if rows and row[i] != rows[0][i]:
                    raise node.error(
                        f"{key} is {row[i]} but gpus[0] has {rows[0][i]}; every GPU of a plan "
                        "must split its buffers into the same chunks",
                        key,
                    )
            rows.append(row)
        first = rows[0]
        scratch = tuple(row[2] for row in rows)
        layout = _Layout(collective, inplace, len(nodes), first[0], first[1], scratch)
        self._check_counts(layout, nodes[0])
        return layout

    def _check_counts(self, layout: _Layout, node: Node) -> None:
        """Chunk counts that the executor (one chunk size for both buffers) and the
        collective's buffer sizes allow."""
        coll, n, g = layout.collective, layout.chunks_per_size, layout.ngpus
        sized = "output_chunks" if coll == Collective.ALLGATHER else "input_chunks"
        if n < 1:
            raise node.error(f"a {coll} plan needs {sized.replace('_', ' ')} (at least 1)", sized)
        if coll in (Collective.ALLREDUCE, Collective.ALLTOALL):
            other_key, other, want = "output_chunks", layout.output_chunks, n
        else:
            if n % g:
                raise node.error(
                    f"a {coll} plan on {g} GPUs needs {sized.replace('_', ' ')} divisible by "
                    f"{g}; it has {n}",
                    sized,
                )
            other_key = "input_chunks" if coll == Collective.ALLGATHER else "output_chunks"
            other = layout.input_chunks if coll == Collective.ALLGATHER else layout.output_chunks
            want = n // g
        if other != want and not (other == 0 and layout.inplace):
            raise node.error(
                f"a {coll} plan with {sized} = {n} on {g} GPUs needs {other_key} = {want}"
                + (" (or 0 in place)" if layout.inplace else "")
                + f"; it has {other}",
                other_key,
            )

    # --- per-GPU tables -------------------------------------------------------------------

    def _gpu_tables(self, node: Node, g: int, ngpus: int) -> _GpuTables:
        channels: dict[str, list[int]] = {t: [] for t in _CHANNEL_TYPES}
        for entry in node.child("channels").items():
            ctype = _channel_type(entry, "channel_type")
            for peer_node in entry.child("connected_to").items():
                peer = peer_node.parse(integer)
                if not 0 <= peer < ngpus or peer == g:
                    raise peer_node.error(
                        f"connects gpu {g} to gpu {peer}, which is not another GPU of the plan"
                    )
                channels[ctype].append(peer)
        remote: list[tuple[int, Buffer, frozenset[str]]] = []
        for entry in node.child("remote_buffers").items():
            rank = entry.get("rank", integer)
            if not 0 <= rank < ngpus or rank == g:
                raise entry.error(f"rank {rank} is not another GPU of the plan", "rank")
            buffer = entry.get("type", _buffer)
            types = frozenset(
                _channel_type_value(t) for t in entry.child("access_channel_types").items()
            )
            remote.append((rank, buffer, types))
        semaphores = [
            _non_negative(sem, "init_value") for sem in node.child("semaphores", []).items()
        ]
        return _GpuTables(channels, remote, semaphores)

    def _tb_tables(self, node: Node, gpu: _GpuTables) -> _TbTables:
        channels: dict[str, list[int]] = {t: [] for t in _CHANNEL_TYPES}
        for entry in node.child("channels").items():
            ctype = _channel_type(entry, "channel_type")
            for id_node in entry.child("channel_ids").items():
                cid = id_node.parse(integer)
                if not 0 <= cid < len(gpu.channels[ctype]):
                    raise id_node.error(
                        f"{ctype} channel {cid} does not exist: the GPU has "
                        f"{len(gpu.channels[ctype])} {ctype} channel(s)"
                    )
                channels[ctype].append(cid)
        remote: dict[str, list[int]] = {t: [] for t in _CHANNEL_TYPES}
        for entry in node.child("remote_buffer_refs", []).items():
            ctype = _channel_type(entry, "access_channel_type")
            for id_node in entry.child("remote_buffer_ids").items():
                rid = id_node.parse(integer)
                if not 0 <= rid < len(gpu.remote_buffers):
                    raise id_node.error(
                        f"remote buffer {rid} does not exist: the GPU lists "
                        f"{len(gpu.remote_buffers)} remote buffer(s)"
                    )
                if ctype not in gpu.remote_buffers[rid][2]:
                    raise id_node.error(
                        f"remote buffer {rid} is not accessible over {ctype} channels "
                        "(see its access_channel_types)"
                    )
                remote[ctype].append(rid)
        return _TbTables(channels, remote)

    # --- ops --------------------------------------------------------------------------------

    def _gpu_ops(
        self,
        builder: PlanBuilder,
        node: Node,
        g: int,
        tables: list[_GpuTables],
        layout: _Layout,
    ) -> list[_Op]:
        ops: list[_Op] = []
        for t, tb_node in enumerate(node.child("threadblocks").items()):
            tb_id = tb_node.get("id", integer)
            if tb_id != t:
                raise tb_node.error(
                    f"threadblocks[{t}] has id {tb_id}; ids must be 0, 1, 2, ... in order", "id"
                )
            tb = self._tb_tables(tb_node, tables[g])
            peers = {tables[g].channels[c][i] for c, ids in tb.channels.items() for i in ids}
            peer = next(iter(peers)) if len(peers) == 1 else -1
            builder.threadblock(g, send_peer=peer, recv_peer=peer)
            for k, op_node in enumerate(tb_node.child("ops").items()):
                op = _OpParser(op_node, StepId(g, t, k), tb, tables, layout).parse()
                sid = builder.step(g, t, op.name, reads=op.reads, loads=op.loads, writes=op.writes)
                assert sid == op.sid  # one step per op, in order
                ops.append(op)
        return ops


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


# --- one op ---------------------------------------------------------------------------------


class _OpParser:
    """Reads one op into an ``_Op``, checking everything the executor would trip over."""

    def __init__(
        self,
        node: Node,
        sid: StepId,
        tb: _TbTables,
        tables: list[_GpuTables],
        layout: _Layout,
    ) -> None:
        self.node = node
        self.tb = tb
        self.tables = tables
        self.layout = layout
        self.op = _Op(node.get("name", text), node.path, sid)

    @property
    def gpu(self) -> int:
        return self.op.sid.gpu

    def fail(self, reason: str, where: str | None = None) -> ConfigError:
        return ConfigError(reason, source=self.node.source, where=where or self.node.path)

    def parse(self) -> _Op:
        name = self.op.name
        if name == "pipeline":
            raise self.fail("'pipeline' ops (nested ops run in tiles) are not supported")
        if name in _NVLS_OPS:
            raise self.fail(f"{name!r} is a switch (NVLS multicast) op; those are not supported")
        handler = _HANDLERS.get(name)
        if handler is None:
            raise self.fail(f"unknown op {name!r}")
        if self.node.has("tbg_info"):
            raise self.fail(
                "ops split over a threadblock group (tbg_info) are not supported: the IR "
                "moves whole chunks"
            )
        if name in _MEMORY_ONLY_OPS and self.channel_type() == "port":
            raise self.fail(f"the executor runs {name!r} only over memory channels")
        handler(self)
        sizes = self.op.sizes()
        if len(set(sizes)) > 1:
            raise self.fail(
                f"its buffer ranges have different sizes ({', '.join(map(str, sizes))} chunks); "
                "every range of one op moves the same number of chunks"
            )
        return self.op

    # --- references

    def refs(self, key: str, low: int, high: int | None = None) -> list[_Ref]:
        nodes = list(self.node.child(key).items())
        if len(nodes) < low or (high is not None and len(nodes) > high):
            wanted = f"exactly {low}" if high == low else f"at least {low}"
            if high is not None and high != low:
                wanted = f"{low} to {high}"
            raise self.fail(f"{key} needs {wanted} entries; it has {len(nodes)}")
        return [self._ref(n) for n in nodes]

    def _ref(self, node: Node) -> _Ref:
        if node.has("switch_channel_id"):
            raise node.error("switch (NVLS) buffer references are not supported")
        if node.has("buffer_id"):
            rank, buffer = self._remote(node)
        elif node.has("type"):
            rank, buffer = self.gpu, node.get("type", _buffer)
        else:
            raise node.error("a buffer reference needs 'type' (local) or 'buffer_id' (remote)")
        index, count = node.get("index", integer), node.get("size", integer)
        size = self.layout.declared(rank, buffer)
        if index < 0 or count < 1 or index + count > size:
            raise node.error(
                f"{Chunks(buffer, index, max(count, 1))} (size {count}) is outside gpu {rank}'s "
                f"{size}-chunk {_BUFFER_NAMES[buffer]} buffer"
            )
        chunks = self.layout.canonical(rank, buffer, index, count)
        return _Ref(rank, chunks, rank != self.gpu, node.path)

    def _remote(self, node: Node) -> tuple[int, Buffer]:
        ctype = self.channel_type()
        if ctype not in _CHANNEL_TYPES:
            raise node.error(
                f"a remote reference (buffer_id) needs channel_type memory or port; the op "
                f"has {ctype!r}"
            )
        bid = node.get("buffer_id", integer)
        ids = self.tb.remote[ctype]
        if not 0 <= bid < len(ids):
            raise node.error(
                f"buffer_id {bid} does not resolve: the threadblock has {len(ids)} remote "
                f"buffer(s) for {ctype} channels (remote_buffer_refs)"
            )
        rank, buffer, _ = self.tables[self.gpu].remote_buffers[ids[bid]]
        return rank, buffer

    def local(self, ref: _Ref) -> Chunks:
        if ref.remote:
            raise self.fail("must be a local buffer (type), not a remote one", ref.where)
        return ref.chunks

    def remote(self, ref: _Ref) -> _Ref:
        if not ref.remote:
            raise self.fail("must be a remote buffer (buffer_id), not a local one", ref.where)
        return ref

    def packet_location(self, ref: _Ref) -> Chunks:
        if ref.chunks.buffer != Buffer.SCRATCH:
            raise self.fail(
                f"packets live in scratch (with their flags); this is {ref.chunks}", ref.where
            )
        return ref.chunks

    # --- channels

    def channel_type(self) -> str:
        ctype = self.node.get("channel_type", text, "none")
        if ctype == "switch":
            raise self.fail("switch (NVLS) channels are not supported")
        if ctype not in (*_CHANNEL_TYPES, "none"):
            raise self.fail(f"unknown channel_type {ctype!r}")
        return ctype

    def channels(self, low: int = 1) -> list[_Channel]:
        """The GPU-level channels of the op's ``channel_ids``."""
        ctype = self.channel_type()
        if ctype not in _CHANNEL_TYPES:
            raise self.fail(f"{self.op.name!r} needs channel_type memory or port, not {ctype!r}")
        nodes = list(self.node.child("channel_ids").items())
        if len(nodes) < low:
            raise self.fail(f"channel_ids needs at least {low} entries; it has {len(nodes)}")
        found = []
        for id_node in nodes:
            cid = id_node.parse(integer)
            if not 0 <= cid < len(self.tb.channels[ctype]):
                raise id_node.error(
                    f"channel {cid} does not exist: the threadblock has "
                    f"{len(self.tb.channels[ctype])} {ctype} channel(s)"
                )
            found.append((ctype, self.tb.channels[ctype][cid]))
        return found

    def peer(self, channel: _Channel) -> int:
        return self.tables[self.gpu].channels[channel[0]][channel[1]]

    # --- shapes shared by several ops

    def reduce_sources(self, remote: bool, packets: bool) -> None:
        """``src_buff[0]`` local; ``src_buff[1:]`` remote loads, packets, or local reads."""
        srcs = self.refs("src_buff", 1)
        self.op.reads.append(self.local(srcs[0]))
        for ref in srcs[1:]:
            if remote:
                ref = self.remote(ref)
                self.op.loads.append(RemoteChunks(ref.gpu, ref.chunks))
            else:
                chunks = self.local(ref)
                self.op.reads.append(chunks)
                if packets:
                    self.op.packet_reads.append(self.packet_location(ref))

    def remote_stores(self, refs: list[_Ref], packet: bool) -> None:
        for ref in refs:
            ref = self.remote(ref)
            if packet:
                self.packet_location(ref)
            self.op.stores.append(_Store(ref.gpu, ref.chunks, packet, None, ref.where))


# --- op handlers ------------------------------------------------------------------------


def _op_none(p: _OpParser) -> None:
    """nop and flush: ordering inside the threadblock only, which step order already has."""


def _op_signal(p: _OpParser) -> None:
    p.op.signals.extend(p.channels())


def _op_wait(p: _OpParser) -> None:
    p.op.waits.extend(p.channels())


def _op_barrier(p: _OpParser) -> None:
    bid = p.node.get("barrier_id", integer)
    count = p.node.get("num_threadblocks", integer)
    if bid < 0 or count < 1:
        raise p.fail(f"barrier_id {bid} / num_threadblocks {count} out of range")
    p.op.barrier = (bid, count)


def _semaphore_ids(p: _OpParser) -> list[int]:
    count = len(p.tables[p.gpu].semaphores)
    ids = []
    for id_node in p.node.child("semaphore_ids").items():
        sem = id_node.parse(integer)
        if not 0 <= sem < count:
            raise id_node.error(f"semaphore {sem} does not exist: the GPU has {count}")
        ids.append(sem)
    if not ids:
        raise p.fail("semaphore_ids is empty")
    return ids


def _op_acquire(p: _OpParser) -> None:
    p.op.acquires.extend(_semaphore_ids(p))


def _op_release(p: _OpParser) -> None:
    p.op.releases.extend(_semaphore_ids(p))


def _op_copy(p: _OpParser) -> None:
    p.op.reads.append(p.local(p.refs("src_buff", 1, 1)[0]))
    p.op.writes.append(p.local(p.refs("dst_buff", 1, 1)[0]))


def _op_get(p: _OpParser) -> None:
    src = p.remote(p.refs("src_buff", 1, 1)[0])
    p.op.loads.append(RemoteChunks(src.gpu, src.chunks))
    p.op.writes.append(p.local(p.refs("dst_buff", 1, 1)[0]))


def _op_put(p: _OpParser) -> None:
    """put, pws, pwsf and ppkt: source i goes to destination i. One source read once when
    they are all the same range; otherwise a source per store (a fused put)."""
    srcs, dsts = p.refs("src_buff", 1), p.refs("dst_buff", 1)
    if len(srcs) != len(dsts):
        raise p.fail(f"needs one src_buff per dst_buff; has {len(srcs)} and {len(dsts)}")
    sources = [p.local(ref) for ref in srcs]
    fused = any(chunks != sources[0] for chunks in sources)
    if not fused:
        p.op.reads.append(sources[0])
    packet = p.op.name == "ppkt"
    port = p.channel_type() == "port"
    channels = p.channels(len(dsts)) if port else []
    for i, ref in enumerate(dsts):
        ref = p.remote(ref)
        if packet:
            p.packet_location(ref)
        signal = None
        if port:
            if p.peer(channels[i]) != ref.gpu:
                raise p.fail(
                    f"channel_ids[{i}] is a port channel to gpu {p.peer(channels[i])}, but "
                    f"dst_buff[{i}] is on gpu {ref.gpu}"
                )
            if p.op.name in ("pws", "pwsf"):
                signal = channels[i]
        source = sources[i] if fused else None
        p.op.stores.append(_Store(ref.gpu, ref.chunks, packet, signal, ref.where, source))


def _op_reduce(p: _OpParser) -> None:
    """re: local sources into one local destination."""
    for ref in p.refs("src_buff", 1):
        p.op.reads.append(p.local(ref))
    p.op.writes.append(p.local(p.refs("dst_buff", 1, 1)[0]))


def _op_reduce_send(p: _OpParser) -> None:
    """res: as re, and the result put to the remote ``dst_buff[1:]``."""
    for ref in p.refs("src_buff", 1):
        p.op.reads.append(p.local(ref))
    dsts = p.refs("dst_buff", 1)
    p.op.writes.append(p.local(dsts[0]))
    p.remote_stores(dsts[1:], packet=False)


def _op_read_reduce(p: _OpParser) -> None:
    """rre and rres: ``src_buff[0]`` plus remote loads; rres also puts ``dst_buff[1:]``."""
    p.reduce_sources(remote=True, packets=False)
    dsts = p.refs("dst_buff", 1, 1 if p.op.name == "rre" else None)
    p.op.writes.append(p.local(dsts[0]))
    p.remote_stores(dsts[1:], packet=False)


def _op_read_put_packets(p: _OpParser) -> None:
    """rppkt: local scratch packets forwarded to remote scratch."""
    src = p.refs("src_buff", 1, 1)[0]
    p.op.reads.append(p.local(src))
    p.op.packet_reads.append(p.packet_location(src))
    p.remote_stores(p.refs("dst_buff", 1), packet=True)


def _op_copy_packets(p: _OpParser) -> None:
    """cpkt: plain data into local scratch as packets."""
    p.op.reads.append(p.local(p.refs("src_buff", 1, 1)[0]))
    dst = p.refs("dst_buff", 1, 1)[0]
    p.op.writes.append(p.local(dst))
    p.op.packet_writes.append(p.packet_location(dst))


def _op_unpack_packets(p: _OpParser) -> None:
    """upkt: local scratch packets into plain data."""
    src = p.refs("src_buff", 1, 1)[0]
    p.op.reads.append(p.local(src))
    p.op.packet_reads.append(p.packet_location(src))
    p.op.writes.append(p.local(p.refs("dst_buff", 1, 1)[0]))


def _op_reduce_packets(p: _OpParser) -> None:
    """repkt, respkt, recpkt, recspkt: ``src_buff[0]`` plus packets in ``src_buff[1:]``;
    ``dst_buff[0]`` plain, then (c) a local packet copy, then (s) remote packet stores."""
    name = p.op.name
    copies = name in ("recpkt", "recspkt")
    sends = name in ("respkt", "recspkt")
    p.reduce_sources(remote=False, packets=True)
    local = 2 if copies else 1
    dsts = p.refs("dst_buff", local, None if sends else local)
    p.op.writes.append(p.local(dsts[0]))
    if copies:
        p.op.writes.append(p.local(dsts[1]))
        p.op.packet_writes.append(p.packet_location(dsts[1]))
    p.remote_stores(dsts[local:], packet=True)


_HANDLERS: dict[str, Callable[[_OpParser], None]] = {
    "nop": _op_none,
    "flush": _op_none,
    "signal": _op_signal,
    "rlxsignal": _op_signal,
    "wait": _op_wait,
    "rlxwait": _op_wait,
    "barrier": _op_barrier,
    "sem_acquire": _op_acquire,
    "sem_release": _op_release,
    "copy": _op_copy,
    "get": _op_get,
    "put": _op_put,
    "pws": _op_put,
    "pwsf": _op_put,
    "ppkt": _op_put,
    "re": _op_reduce,
    "res": _op_reduce_send,
    "rre": _op_read_reduce,
    "rres": _op_read_reduce,
    "rppkt": _op_read_put_packets,
    "cpkt": _op_copy_packets,
    "upkt": _op_unpack_packets,
    "repkt": _op_reduce_packets,
    "respkt": _op_reduce_packets,
    "recpkt": _op_reduce_packets,
    "recspkt": _op_reduce_packets,
}


# --- pairing: signals and waits -------------------------------------------------------------


def _partner(tables: list[_GpuTables], g: int, channel: _Channel) -> tuple[int, int | None]:
    """The peer of g's channel and the channel of the peer that shares its semaphore: the
    k-th channel of a type from g to p pairs with the k-th one of that type from p to g."""
    ctype, c = channel
    peers = tables[g].channels[ctype]
    p = peers[c]
    k = peers[:c].count(p)
    back = [i for i, q in enumerate(tables[p].channels[ctype]) if q == g]
    return p, (back[k] if k < len(back) else None)


def _one_threadblock(queue: list[_Op], verb: str, channel: str, source: str) -> None:
    tbs = {op.sid.tb for op in queue}
    if len(tbs) > 1:
        other = next(op for op in queue if op.sid.tb != queue[0].sid.tb)
        raise _fail(
            source,
            other.where,
            f"{verb} on {channel}, as threadblock {queue[0].sid.tb} also does; the pairing of "
            "signals and waits on a channel used by several threadblocks is ambiguous",
        )


def _pair_signals(
    builder: PlanBuilder, ops: list[_Op], tables: list[_GpuTables], source: str
) -> None:
    """Flag transfers from each signal (or port pws/pwsf) to the matching wait."""
    sent: dict[tuple[int, _Channel], list[tuple[_Op, _Store | None]]] = defaultdict(list)
    waited: dict[tuple[int, _Channel], list[_Op]] = defaultdict(list)
    for op in ops:
        g = op.sid.gpu
        for channel in op.signals:
            sent[(g, channel)].append((op, None))
        for store in op.stores:
            if store.signal is not None:
                sent[(g, store.signal)].append((op, store))
        for channel in op.waits:
            waited[(g, channel)].append(op)

    def name(g: int, channel: _Channel) -> str:
        return f"gpu {g} {channel[0]} channel {channel[1]}"

    for (g, channel), queue in waited.items():
        _one_threadblock(queue, "waits", name(g, channel), source)
    paired: set[tuple[int, _Channel]] = set()
    for (g, channel), queue in sorted(sent.items()):
        _one_threadblock([op for op, _ in queue], "signals", name(g, channel), source)
        p, back = _partner(tables, g, channel)
        if back is None:
            raise _fail(
                source,
                queue[0][0].where,
                f"signals over {name(g, channel)} to gpu {p}, but gpu {p} has no matching "
                f"{channel[0]} channel back to gpu {g} to wait on",
            )
        waits = waited.get((p, (channel[0], back)), [])
        paired.add((p, (channel[0], back)))
        if len(queue) > len(waits):
            raise _fail(
                source,
                queue[len(waits)][0].where,
                f"signal {len(waits) + 1} over {name(g, channel)} is never waited for: gpu "
                f"{p} waits on its matching {channel[0]} channel {back} {len(waits)} time(s)",
            )
        if len(waits) > len(queue):
            raise _fail(
                source,
                waits[len(queue)].where,
                f"wait {len(queue) + 1} on {name(p, (channel[0], back))} is never signalled: "
                f"gpu {g} signals on its matching channel {channel[1]} {len(queue)} time(s)",
            )
        for (op, store), receiver in zip(queue, waits, strict=True):
            chunks = store.chunks if store is not None else None
            own = store.source if store is not None else None
            builder.transfer(op.sid, p, chunks, receiver.sid, source=own)
    for (p, channel), waits in waited.items():
        if (p, channel) not in paired:
            g, back = _partner(tables, p, channel)
            why = (
                f"gpu {g} has no matching {channel[0]} channel back to gpu {p}"
                if back is None
                else f"gpu {g} never signals on its matching channel {back}"
            )
            raise _fail(
                source, waits[0].where, f"wait 1 on {name(p, channel)} is never signalled: {why}"
            )


# --- pairing: packets -------------------------------------------------------------------------


def _pair_packets(builder: PlanBuilder, ops: list[_Op], source: str, notes: list[str]) -> None:
    """Packet stores are received by the steps that read them (see the module docstring)."""
    writers: dict[_Location, _Op] = {}

    def claim(gpu: int, chunks: Chunks, op: _Op, where: str) -> None:
        for k in chunks.indices():
            prior = writers.setdefault((gpu, chunks.buffer, k), op)
            if prior is not op:
                raise _fail(
                    source,
                    where,
                    f"writes packets to gpu {gpu} {chunks.buffer}[{k}], which {prior.where} "
                    "also writes; a packet location holds one write per run (flags cannot "
                    "tell two apart)",
                )

    for op in ops:
        for store in op.stores:
            if store.packet:
                claim(store.gpu, store.chunks, op, store.where)
        for chunks in op.packet_writes:
            claim(op.sid.gpu, chunks, op, op.where)

    readers: dict[_Location, list[_Op]] = defaultdict(list)
    for op in ops:
        for chunks in op.packet_reads:
            for k in chunks.indices():
                where = (op.sid.gpu, chunks.buffer, k)
                writer = writers.get(where)
                if writer is None or writer is op:
                    raise _fail(
                        source,
                        op.where,
                        f"reads packets at gpu {op.sid.gpu} {chunks.buffer}[{k}], which no "
                        "other op writes in packet format (the read would never complete)",
                    )
                if op not in readers[where]:
                    readers[where].append(op)

    def reading(gpu: int, chunks: Chunks) -> list[_Op]:
        found = {id(r): r for k in chunks.indices() for r in readers[(gpu, chunks.buffer, k)]}
        return sorted(found.values(), key=lambda r: (r.sid.tb, r.sid.step))

    for op in ops:
        for store in op.stores:
            if not store.packet:
                continue
            receivers = reading(store.gpu, store.chunks)
            if not receivers:
                builder.transfer(
                    op.sid, store.gpu, store.chunks, None, Protocol.PACKET, store.source
                )
                notes.append(
                    f"{op.where} writes packets to gpu {store.gpu} {store.chunks} that no op "
                    "reads; imported as a plain put"
                )
                continue
            builder.transfer(
                op.sid, store.gpu, store.chunks, receivers[0].sid, Protocol.PACKET, store.source
            )
            for extra in receivers[1:]:  # polls the same packets: no message of its own
                builder.transfer(op.sid, store.gpu, None, extra.sid, Protocol.PACKET)
        for chunks in op.packet_writes:
            for reader in reading(op.sid.gpu, chunks):
                if reader.sid.tb == op.sid.tb and reader.sid.step > op.sid.step:
                    continue  # program order already
                builder.add_dep(reader.sid, op.sid)


# --- pairing: barriers and semaphores --------------------------------------------------------


def _by_threadblock(ops: Iterator[tuple[int, _Op]]) -> dict[int, dict[int, list[_Op]]]:
    """{key: {threadblock: ops in step order}} from (key, op) pairs in (tb, step) order."""
    table: dict[int, dict[int, list[_Op]]] = defaultdict(lambda: defaultdict(list))
    for key, op in ops:
        table[key][op.sid.tb].append(op)
    return table


def _pair_barriers(builder: PlanBuilder, ops: list[_Op], source: str) -> None:
    """Each member of a barrier round depends on the step before the barrier in every other
    member (one GPU's ops)."""
    arrivals = _by_threadblock((op.barrier[0], op) for op in ops if op.barrier is not None)
    for bid, by_tb in sorted(arrivals.items()):
        for r in range(max(len(v) for v in by_tb.values())):
            members = [seq[r] for _, seq in sorted(by_tb.items()) if r < len(seq)]
            for member in members:
                assert member.barrier is not None
                if member.barrier[1] != len(members):
                    raise _fail(
                        source,
                        member.where,
                        f"barrier {bid} is reached by {len(members)} threadblock(s) in its "
                        f"round {r + 1}, but num_threadblocks is {member.barrier[1]}",
                    )
            for member in members:
                for other in members:
                    if other is not member and other.sid.step > 0:
                        before = StepId(other.sid.gpu, other.sid.tb, other.sid.step - 1)
                        builder.add_dep(member.sid, before)


def _pair_semaphores(
    builder: PlanBuilder, ops: list[_Op], inits: list[int], source: str, notes: list[str]
) -> None:
    """Each acquire depends on the releases it is certain to follow (one GPU's ops)."""
    releases = _by_threadblock((sem, op) for op in ops for sem in op.releases)
    acquires = _by_threadblock((sem, op) for op in ops for sem in op.acquires)
    for sem in sorted(set(releases) | set(acquires)):
        start, released = inits[sem], releases.get(sem, {})
        total = sum(len(seq) for seq in released.values())
        taken = 0
        for tb, seq in sorted(acquires.get(sem, {}).items()):
            for n, op in enumerate(seq, start=1):
                taken += 1
                if n - start > total or taken > start + total:
                    raise _fail(
                        source,
                        op.where,
                        f"sem_acquire of semaphore {sem} can never succeed: it starts at "
                        f"{start} and is released {total} time(s), but is acquired more often",
                    )
                for rel in _certain_releases(n - start, total, released):
                    if not (rel.sid.tb == tb and rel.sid.step < op.sid.step):
                        builder.add_dep(op.sid, rel.sid)
        if taken != total:
            notes.append(
                f"gpu {ops[0].sid.gpu} semaphore {sem} is acquired {taken} and released "
                f"{total} time(s): it ends a run at a different value than it starts"
            )


def _certain_releases(need: int, total: int, released: dict[int, list[_Op]]) -> list[_Op]:
    """The latest release of each threadblock that every ``need`` releases must include
    (releases of one threadblock happen in order)."""
    if need <= 0:
        return []
    found = []
    for seq in released.values():
        j = need - total + len(seq)  # the j-th release of this TB is certain
        if j >= 1:
            found.append(seq[j - 1])
    return found
