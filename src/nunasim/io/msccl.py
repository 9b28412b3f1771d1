"""MSCCL XML algorithm files (MSCCLang / msccl-tools, msccl-executor-nccl, RCCL) as plans.

The semantics follow the MSCCL executor:

- A threadblock with ``send=S, chan=c`` owns the connection to S on channel c; the i-th
  send-type step (``s rcs rrs rrcs``) of that connection pairs with the i-th receive-type
  step (``r rcs rrs rrc rrcs``) of the threadblock on S with ``recv=`` this GPU and the
  same channel. Each pair becomes one transfer of the plan IR.
- In nunasim's load/store model a send stores straight into the receiver's memory. For a
  plain receive (``r``, ``rcs``) it lands in the receiver's destination chunk. For a receive
  that reduces (``rrc``, ``rrs``, ``rrcs``) it lands in a fresh scratch slot of the receiver
  (appended after the file's own scratch), which the receiving step then reads together with
  its local source: the executor's connection FIFO, made explicit.
- ``src`` of ``rrc``/``rrs``/``rrcs`` is a local read (the executor's reading).
- Offsets the executor uses (``src`` of ``s rrs rrc rrcs cpy re``, ``dst`` of
  ``r rcs rrc rrcs cpy re``) must lie in the buffer as the ``<gpu>`` declares it
  (``i_chunks``, ``o_chunks``, ``s_chunks``), before in-place aliasing; the other offsets
  are informational and not checked.
- ``depid``/``deps`` make a step wait until that threadblock's flag reaches the named step.
  Only steps with ``hasdep="1"`` publish the flag (the IR's ``Step.signals``; a missing
  attribute counts as 0), and the flag only grows, so a wait on a step without it is
  released by the next ``hasdep="1"`` step of that threadblock, or never: the checker
  reports the plan as a deadlock. ``hasdep="1"`` on a step nobody waits on is harmless
  (noted).
- Every ``<step>`` stays one step, ``nop`` included, so ``depid``/``deps`` keep their meaning.
- In-place plans (``inplace="1" outofplace="0"``) are canonicalised to the aliasing of
  ``nunasim.collectives.layout``; ``outofplace`` defaults to ``1 - inplace`` when absent
  (msccl-tools does not write it). A plan valid both ways is read out of place.
- The executor's pipelining (a step runs once per slice of its chunk) does not change which
  chunks move where; nunasim moves each step's whole chunks at once.
- ``proto`` (``Simple``, ``LL`` or ``LL128``, spelt exactly so, as the executor reads it)
  is the protocol of every transfer; absent, it is ``Simple``, msccl-tools' default.

Attributes that only tune the executor (``nchannels``, ``minBytes``, ...) are kept
as notes; unknown attributes are tolerated with a note, since dialects differ. Anything
inconsistent is a ``ConfigError`` naming the file and the element (``gpu 3 tb 5 step 7``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree as SafeET

from nunasim.collectives.builder import PlanBuilder
from nunasim.collectives.layout import Aliasing
from nunasim.collectives.plan import Buffer, Chunks, Collective, Plan, Protocol, StepId
from nunasim.errors import ConfigError, printable, quote
from nunasim.io.files import read_text

SEND_OPS = frozenset({"s", "rcs", "rrs", "rrcs"})
RECV_OPS = frozenset({"r", "rcs", "rrs", "rrc", "rrcs"})
REDUCING_RECV_OPS = frozenset({"rrs", "rrc", "rrcs"})
LOCAL_OPS = frozenset({"cpy", "re", "nop"})
ALL_OPS = SEND_OPS | RECV_OPS | LOCAL_OPS
# Any integer attribute (a count, an offset, an id) beyond this is no plan's; a count is
# memory (every chunk's pages are placed).
MAX_ATTRIBUTE = 1 << 20

_COLLECTIVES = {
    "allgather": Collective.ALLGATHER,
    "allreduce": Collective.ALLREDUCE,
    "reducescatter": Collective.REDUCESCATTER,
    "reduce_scatter": Collective.REDUCESCATTER,
    "alltoall": Collective.ALLTOALL,
    "broadcast": Collective.BROADCAST,
    "reduce": Collective.REDUCE,
}
_ALGO_ATTRS = {
    "name",
    "proto",
    "nchannels",
    "nchunksperloop",
    "ngpus",
    "coll",
    "inplace",
    "outofplace",
    "minBytes",
    "maxBytes",
    "redop",
    "nthreads",
    "maxcount",
    "nthreadblocks",
}
# The executor's spellings of its protocols.
_PROTOCOLS = {"Simple": Protocol.SIMPLE, "LL": Protocol.LL, "LL128": Protocol.LL128}
_GPU_ATTRS = {"id", "i_chunks", "o_chunks", "s_chunks"}
_TB_ATTRS = {"id", "send", "recv", "chan"}
_STEP_ATTRS = {
    "s",
    "type",
    "srcbuf",
    "srcoff",
    "dstbuf",
    "dstoff",
    "cnt",
    "depid",
    "deps",
    "hasdep",
}


@dataclass
class _XStep:
    s: int
    op: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int
    deps: int
    hasdep: bool


@dataclass
class _XTb:
    id: int
    send: int
    recv: int
    chan: int
    steps: list[_XStep] = field(default_factory=list)


@dataclass
class _XGpu:
    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    tbs: list[_XTb] = field(default_factory=list)


_INTEGER = re.compile(r"-?[0-9]+")


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.notes: list[str] = []

    def error(self, reason: str, where: str = "") -> ConfigError:
        return ConfigError(reason, source=self.source, where=where)

    def integer(
        self,
        element: Element,
        name: str,
        where: str,
        default: int | None = None,
        at_least: int | None = None,
    ) -> int:
        raw = element.get(name)
        if raw is None:
            if default is None:
                raise self.error(f"missing attribute {name!r}", where)
            return default
        # As the executor reads them (strtol): ASCII digits, not int()'s "١" or "0_1".
        if not _INTEGER.fullmatch(raw):
            raise self.error(f"attribute {name}={quote(raw)} is not a whole number", where)
        value = int(raw)
        if abs(value) > MAX_ATTRIBUTE:
            raise self.error(f"attribute {name}={value:,} is more than {MAX_ATTRIBUTE:,}", where)
        if at_least is not None and value < at_least:
            raise self.error(f"attribute {name}={value:,} must be at least {at_least}", where)
        return value

    def attrs(self, element: Element, known: set[str], where: str) -> None:
        unknown = sorted(set(element.attrib) - known)
        if unknown:
            self.notes.append(f"{where or '<algo>'}: ignored attribute(s) {', '.join(unknown)}")


def load_msccl_xml(path: str | Path) -> Plan:
    return parse_msccl_xml(read_text(path), str(path))


def parse_msccl_xml(text: str, source: str) -> Plan:
    reader = _Reader(source)
    try:
        root = SafeET.fromstring(text, forbid_dtd=True)
    except defusedxml.DefusedXmlException as exc:
        raise reader.error(
            f"refused unsafe XML ({type(exc).__name__}: entities and DTDs are not allowed)"
        ) from None
    except ParseError as exc:
        line, column = exc.position
        raise reader.error(
            f"not well-formed XML: {exc.msg if hasattr(exc, 'msg') else exc}",
            f"line {line}, column {column}",
        ) from None
    if root.tag != "algo":
        raise reader.error(f"the root element is <{root.tag}>, not <algo>")
    return _build(reader, root)


def _parse_gpus(reader: _Reader, root: Element) -> list[_XGpu]:
    gpus: list[_XGpu] = []
    for gpu_el in root:
        if gpu_el.tag != "gpu":
            raise reader.error(f"unexpected element <{gpu_el.tag}> in <algo>")
        gid = reader.integer(gpu_el, "id", f"gpu #{len(gpus)}")
        gwhere = f"gpu {gid}"
        reader.attrs(gpu_el, _GPU_ATTRS, gwhere)
        gpu = _XGpu(
            gid, *(reader.integer(gpu_el, k, gwhere) for k in ("i_chunks", "o_chunks", "s_chunks"))
        )
        for tb_el in gpu_el:
            if tb_el.tag == "copy":  # SCCL/TACCL pre/post copies: the executor ignores them
                reader.notes.append(f"{gwhere}: ignored <copy> element (the executor does)")
                continue
            if tb_el.tag != "tb":
                raise reader.error(f"unexpected element <{tb_el.tag}>", gwhere)
            tid = reader.integer(tb_el, "id", f"{gwhere} tb #{len(gpu.tbs)}")
            twhere = f"{gwhere} tb {tid}"
            reader.attrs(tb_el, _TB_ATTRS, twhere)
            tb = _XTb(
                tid,
                reader.integer(tb_el, "send", twhere),
                reader.integer(tb_el, "recv", twhere),
                reader.integer(tb_el, "chan", twhere, 0, at_least=0),
            )
            for step_el in tb_el:
                if step_el.tag != "step":
                    raise reader.error(f"unexpected element <{step_el.tag}>", twhere)
                s = reader.integer(step_el, "s", f"{twhere} step #{len(tb.steps)}")
                swhere = f"{twhere} step {s}"
                reader.attrs(step_el, _STEP_ATTRS, swhere)
                op = step_el.get("type")
                if op not in ALL_OPS:
                    raise reader.error(
                        f"unknown step type {op!r} (known: {', '.join(sorted(ALL_OPS))})", swhere
                    )
                tb.steps.append(
                    _XStep(
                        s=s,
                        op=op,
                        srcbuf=step_el.get("srcbuf", "i"),
                        srcoff=reader.integer(step_el, "srcoff", swhere, -1),
                        dstbuf=step_el.get("dstbuf", "o"),
                        dstoff=reader.integer(step_el, "dstoff", swhere, -1),
                        cnt=reader.integer(step_el, "cnt", swhere, 0),
                        depid=reader.integer(step_el, "depid", swhere, -1),
                        deps=reader.integer(step_el, "deps", swhere, -1),
                        hasdep=reader.integer(step_el, "hasdep", swhere, 0) == 1,
                    )
                )
            gpu.tbs.append(tb)
        gpus.append(gpu)
    return gpus


def _check_numbering(reader: _Reader, gpus: list[_XGpu], ngpus: int) -> None:
    if len(gpus) != ngpus:
        raise reader.error(f"ngpus={ngpus} but the file has {len(gpus)} <gpu> elements", "<algo>")
    for index, gpu in enumerate(gpus):
        if gpu.id != index:
            raise reader.error(
                f"<gpu> number {index} has id {gpu.id}; ids must run 0..{ngpus - 1}",
                f"gpu {gpu.id}",
            )
        for t, tb in enumerate(gpu.tbs):
            if tb.id != t:
                raise reader.error(
                    f"threadblock number {t} has id {tb.id}; ids must have no gaps",
                    f"gpu {gpu.id} tb {tb.id}",
                )
            for peer, role in ((tb.send, "send"), (tb.recv, "recv")):
                if (peer != -1 and not 0 <= peer < ngpus) or peer == gpu.id:
                    raise reader.error(
                        f"{role} peer {peer} is not another GPU of the plan",
                        f"gpu {gpu.id} tb {tb.id}",
                    )
            for k, step in enumerate(tb.steps):
                where = f"gpu {gpu.id} tb {tb.id} step {step.s}"
                if step.s != k:
                    raise reader.error(
                        f"step number {k} has s={step.s}; steps must run 0..n-1", where
                    )
                if step.op in SEND_OPS and tb.send < 0:
                    raise reader.error(
                        f"a '{step.op}' step needs a send peer, and the threadblock has send=-1",
                        where,
                    )
                if step.op in RECV_OPS and tb.recv < 0:
                    raise reader.error(
                        f"a '{step.op}' step needs a receive peer, and the threadblock has recv=-1",
                        where,
                    )
                if step.op != "nop" and step.cnt < 1:
                    raise reader.error(
                        f"a '{step.op}' step must move at least one chunk (cnt={step.cnt})", where
                    )
                if step.depid >= 0:
                    if step.depid >= len(gpu.tbs):
                        raise reader.error(
                            f"depends on tb {step.depid}, which gpu {gpu.id} does not have", where
                        )
                    target = gpu.tbs[step.depid]
                    if not 0 <= step.deps < len(target.steps):
                        raise reader.error(
                            f"depends on step {step.deps} of tb {step.depid}, which does not exist",
                            where,
                        )
                elif step.depid != -1:
                    raise reader.error(f"depid={step.depid} is neither -1 nor a threadblock", where)


def _connections(
    reader: _Reader, gpus: list[_XGpu], sending: bool
) -> dict[tuple[int, int, int], list[tuple[int, int, int]]]:
    """(sender, receiver, channel) -> the send-type (or receive-type) steps on it, in order.

    A connection end belongs to one threadblock; two threadblocks of a GPU on the same
    connection would leave their order on it ambiguous, so that is an error."""
    ops = SEND_OPS if sending else RECV_OPS
    steps: dict[tuple[int, int, int], list[tuple[int, int, int]]] = {}
    owner: dict[tuple[int, int, int], int] = {}
    for gpu in gpus:
        for tb in gpu.tbs:
            peer = tb.send if sending else tb.recv
            mine = [s for s in tb.steps if s.op in ops]
            if peer < 0 or not mine:
                continue
            key = (gpu.id, peer, tb.chan) if sending else (peer, gpu.id, tb.chan)
            if key in owner:
                verb = f"send to gpu {peer}" if sending else f"receive from gpu {peer}"
                raise reader.error(
                    f"tb {owner[key]} and tb {tb.id} both {verb} on channel {tb.chan}, so "
                    "their order on the connection is ambiguous",
                    f"gpu {gpu.id} tb {tb.id}",
                )
            owner[key] = tb.id
            steps.setdefault(key, []).extend((gpu.id, tb.id, s.s) for s in mine)
    return steps


def _pair(reader: _Reader, gpus: list[_XGpu]) -> dict[tuple[int, int, int], tuple[int, int, int]]:
    """Receive step (gpu, tb, step) -> matching send step, FIFO per connection."""
    sends = _connections(reader, gpus, sending=True)
    recvs = _connections(reader, gpus, sending=False)
    matched: dict[tuple[int, int, int], tuple[int, int, int]] = {}
    for key in sorted(set(sends) | set(recvs)):
        out, into = sends.get(key, []), recvs.get(key, [])
        src, dst, chan = key
        for a, b in zip(out, into, strict=False):
            ca = gpus[a[0]].tbs[a[1]].steps[a[2]].cnt
            cb = gpus[b[0]].tbs[b[1]].steps[b[2]].cnt
            if ca != cb:
                raise reader.error(
                    f"sends {ca} chunks but the matching receive, gpu {b[0]} tb "
                    f"{b[1]} step {b[2]}, takes {cb}",
                    "gpu {} tb {} step {}".format(*a),
                )
            matched[b] = a
        if len(out) > len(into):
            a = out[len(into)]
            raise reader.error(
                f"this send to gpu {dst} on channel {chan} has no matching receive "
                f"({len(out)} sends, {len(into)} receives)",
                "gpu {} tb {} step {}".format(*a),
            )
        if len(into) > len(out):
            b = into[len(out)]
            raise reader.error(
                f"this receive from gpu {src} on channel {chan} has no matching "
                f"send ({len(out)} sends, {len(into)} receives)",
                "gpu {} tb {} step {}".format(*b),
            )
    return matched


def _build(reader: _Reader, root: Element) -> Plan:
    reader.attrs(root, _ALGO_ATTRS, "")
    coll_name = root.get("coll")
    if coll_name not in _COLLECTIVES:
        raise reader.error(
            f"collective {coll_name!r} is not supported (supported: "
            f"{', '.join(sorted(_COLLECTIVES))})",
            "<algo>",
        )
    collective = _COLLECTIVES[coll_name]
    ngpus = reader.integer(root, "ngpus", "<algo>")
    nchunks = reader.integer(root, "nchunksperloop", "<algo>")
    if ngpus < 1 or nchunks < 1:
        raise reader.error("ngpus and nchunksperloop must be positive", "<algo>")
    inplace_attr = reader.integer(root, "inplace", "<algo>")
    outofplace_attr = reader.integer(root, "outofplace", "<algo>", 1 - inplace_attr)
    inplace = bool(inplace_attr) and not outofplace_attr
    proto = root.get("proto", "Simple")  # msccl-tools' default protocol
    if proto not in _PROTOCOLS:
        raise reader.error(
            f"proto={proto!r} is not a protocol the executor knows ({', '.join(_PROTOCOLS)})",
            "<algo>",
        )
    protocol = _PROTOCOLS[proto]
    for key in ("proto", "nchannels", "minBytes", "maxBytes"):
        if root.get(key) is not None:
            reader.notes.append(f"{key}={root.get(key)}")

    gpus = _parse_gpus(reader, root)
    _check_numbering(reader, gpus, ngpus)
    matched = _pair(reader, gpus)
    alias = Aliasing(collective, inplace, ngpus, nchunks)

    def canon(g: int, buf: str, off: int, where: str) -> tuple[Buffer, int]:
        if buf not in ("i", "o", "s"):
            raise reader.error(f"unknown buffer {buf!r} (i, o or s)", where)
        return alias.home(g, Buffer(buf), off)

    b = PlanBuilder(
        printable(root.get("name", Path(reader.source).stem)),
        collective,
        ngpus,
        input_chunks=0,
        output_chunks=0,
        chunks_per_size=nchunks,
        inplace=inplace,
        source=reader.source,
    )
    for gpu in gpus:
        i_n, o_n, s_n = gpu.i_chunks, gpu.o_chunks, gpu.s_chunks
        if min(i_n, o_n, s_n) < 0:
            raise reader.error("chunk counts must not be negative", f"gpu {gpu.id}")
        i_n, o_n = alias.counts(i_n, o_n)
        b.set_buffers(gpu.id, i_n, o_n, s_n)

    def declared(gpu: _XGpu, field: str, buf: str, off: int, cnt: int, where: str) -> None:
        """The executor's own bound: an offset inside the buffer as the <gpu> declares it."""
        size = {"i": gpu.i_chunks, "o": gpu.o_chunks, "s": gpu.s_chunks}.get(buf)
        if size is None:
            raise reader.error(f"unknown buffer {buf!r} (i, o or s)", where)
        if off < 0:
            raise reader.error(f"{field}off={off} is negative", where)
        if off + cnt > size:
            raise reader.error(
                f"{field}off={off} with cnt={cnt} reaches past the end of buffer {buf!r}, "
                f"which gpu {gpu.id} declares with {buf}_chunks={size}",
                where,
            )

    # Landing slots for receives that reduce, then every step, then the transfers.
    landing: dict[tuple[int, int, int], Chunks] = {}
    for gpu in gpus:
        for tb in gpu.tbs:
            b.threadblock(gpu.id, tb.send, tb.recv, tb.chan)
            for step in tb.steps:
                if step.op in REDUCING_RECV_OPS:
                    landing[(gpu.id, tb.id, step.s)] = b.scratch(gpu.id, step.cnt)

    ids: dict[tuple[int, int, int], StepId] = {}
    for gpu in gpus:
        for tb in gpu.tbs:
            for step in tb.steps:
                where = f"gpu {gpu.id} tb {tb.id} step {step.s}"
                key = (gpu.id, tb.id, step.s)
                op = step.op
                src = dst = None
                if op in {"s", "rrs", "rrc", "rrcs", "cpy", "re"}:
                    declared(gpu, "src", step.srcbuf, step.srcoff, step.cnt, where)
                    src = Chunks(*canon(gpu.id, step.srcbuf, step.srcoff, where), step.cnt)
                if op in {"r", "rcs", "rrc", "rrcs", "cpy", "re"}:
                    declared(gpu, "dst", step.dstbuf, step.dstoff, step.cnt, where)
                    dst = Chunks(*canon(gpu.id, step.dstbuf, step.dstoff, where), step.cnt)
                reads: list[Chunks] = []
                writes: list[Chunks] = []
                if op in {"s", "cpy"}:
                    reads = [src]
                if op == "rcs":
                    reads = [dst]
                if op in REDUCING_RECV_OPS:
                    reads = [src, landing[key]]
                if op == "re":
                    reads = [src, dst]
                if op in {"rrc", "rrcs", "cpy", "re"}:
                    writes = [dst]
                deps = [(step.depid, step.deps)] if step.depid >= 0 else []
                ids[key] = b.step(
                    gpu.id, tb.id, op, reads=reads, writes=writes, deps=deps, signals=step.hasdep
                )

    _note_unused_hasdep(reader, gpus)
    for rx_key, tx_key in sorted(matched.items(), key=lambda item: item[1]):
        rx = gpus[rx_key[0]].tbs[rx_key[1]].steps[rx_key[2]]
        where = "gpu {} tb {} step {}".format(*rx_key)
        if rx.op in REDUCING_RECV_OPS:
            into = landing[rx_key]
        else:
            into = Chunks(*canon(rx_key[0], rx.dstbuf, rx.dstoff, where), rx.cnt)
        b.transfer(ids[tx_key], rx_key[0], into, ids[rx_key], protocol)
    b.notes.extend(reader.notes)
    return b.build()


def _note_unused_hasdep(reader: _Reader, gpus: list[_XGpu]) -> None:
    """A step marked hasdep="1" that no step waits on only publishes a flag nobody reads."""
    unused = []
    for gpu in gpus:
        waited = {(s.depid, s.deps) for tb in gpu.tbs for s in tb.steps if s.depid >= 0}
        unused += [
            (gpu.id, tb.id, s.s)
            for tb in gpu.tbs
            for s in tb.steps
            if s.hasdep and (tb.id, s.s) not in waited
        ]
    if unused:
        reader.notes.append(
            f'{len(unused)} step(s) marked hasdep="1" that no step waits on (harmless), '
            "first gpu {} tb {} step {}".format(*unused[0])
        )
