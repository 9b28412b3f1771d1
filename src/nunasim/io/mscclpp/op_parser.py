"""Parsing one MSCCL++ op into an ``_Op``: the parser and the handler of each op name.

``_OpParser`` resolves an op's buffer references and channels against the GPU and
threadblock tables and checks everything the executor would trip over; each ``_op_*``
handler reads one op shape (see the table in the package docstring). Both are here, apart
from the walk over GPUs and threadblocks, because the handlers and the parser are one
thing: ``_HANDLERS`` maps each op name to its handler and every handler drives the parser.
"""

from __future__ import annotations

from collections.abc import Callable

from nunasim.collectives.plan import Buffer, Chunks, RemoteChunks, StepId
from nunasim.errors import ConfigError
from nunasim.io.mscclpp.field_values import _BUFFER_NAMES, _CHANNEL_TYPES, _buffer
from nunasim.io.mscclpp.plan_model import (
    _Channel,
    _GpuTables,
    _Layout,
    _Op,
    _Ref,
    _Store,
    _TbTables,
)
from nunasim.io.schema import Node, integer, text

_NVLS_OPS = ("glres", "gstore", "gstorepkt")
# ops the executor runs only over memory channels (it reads memoryChannelBufferPtrs_)
_MEMORY_ONLY_OPS = ("get", "rre", "rres", "res", "respkt", "recspkt")


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
