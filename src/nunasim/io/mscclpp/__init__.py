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

from pathlib import Path

from nunasim.collectives.plan import Plan
from nunasim.io.files import read_text
from nunasim.io.mscclpp.field_values import MAX_BUFFER_CHUNKS
from nunasim.io.mscclpp.importer import _Importer
from nunasim.io.mscclpp.json_reading import MAX_JSON_DIGITS, load_json
from nunasim.io.schema import Node

__all__ = ["MAX_BUFFER_CHUNKS", "MAX_JSON_DIGITS", "load_mscclpp", "parse_mscclpp"]


# --- entry points -------------------------------------------------------------------------


def load_mscclpp(path: str | Path) -> Plan:
    """The plan in an MSCCL++ JSON execution plan file."""
    return parse_mscclpp(read_text(path), str(path))


def parse_mscclpp(text: str, source: str) -> Plan:
    """The plan in ``text``, an MSCCL++ JSON execution plan; ``source`` names it in errors
    and becomes ``Plan.source``."""
    root = Node(load_json(text, source), "", source)
    return _Importer(root, source).run()
