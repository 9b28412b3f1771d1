"""The walk over an MSCCL++ plan: header, buffer layout, tables, ops, then pairing.

``_Importer`` checks the plan's header and chunk counts, builds the GPU and threadblock
tables, hands every op to the op parser, and finally pairs the synchronisation of all ops
into a ``Plan``. It is the one module that knows the order of these stages; each stage's
details are in its own module.
"""

from __future__ import annotations

from nunasim.collectives.builder import PlanBuilder
from nunasim.collectives.plan import Buffer, Collective, Plan, StepId
from nunasim.io.mscclpp.field_values import (
    _CHANNEL_TYPES,
    _boolean,
    _buffer,
    _channel_type,
    _channel_type_value,
    _chunk_count,
    _non_negative,
)
from nunasim.io.mscclpp.op_parser import _OpParser
from nunasim.io.mscclpp.plan_model import _GpuTables, _Layout, _Op, _TbTables
from nunasim.io.mscclpp.sync_pairing import (
    _pair_barriers,
    _pair_packets,
    _pair_semaphores,
    _pair_signals,
)
from nunasim.io.schema import Node, integer, one_line, text

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
_RELAXED_OPS = ("rlxsignal", "rlxwait")


# --- the importer -------------------------------------------------------------------------


class _Importer:
    def __init__(self, root: Node, source: str) -> None:
        self.root = root
        self.source = source
        self.notes: list[str] = []

    def run(self) -> Plan:
        name = self.root.get("name", one_line)
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
