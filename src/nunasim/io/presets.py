"""Hardware presets: the YAML files shipped with nunasim, and users' own.

The file format mirrors the dataclasses of ``nunasim.hardware`` (see the shipped
``nextgen-4die.yaml`` for a commented example). Every key is required unless stated below,
every unknown key is refused, and every error names the file and the key path.

Optional keys: ``description``; ``socket.dies[i].kind`` (``compute``, the default, or
``io``: a die with no compute units, Table 2's I/O dies); ``socket.compute.routers``
(default ``all``: every router of a compute die);
``socket.noc.die_crossing_cycles`` (0); ``socket.noc.io_crossing_cycles`` (default
``die_crossing_cycles``: the extra cycles on a link to or from an I/O die);
``socket.noc.io_link_bandwidth`` (default the mesh link's: such a link's bandwidth per
direction); ``socket.noc.routing`` (``xy``);
``socket.hbm.stacks[i]`` may be ``[x, y]`` or
``{router: [x, y], bandwidth: ..., latency: ...}`` overriding the ``hbm`` defaults;
``socket.compute.threadblocks_per_cu`` (default: no limit); ``socket.port_hash``
(``xor-fold``, the default, or ``rotation``); ``socket.memory.interleave`` (``listed``,
the default, or ``die-first``: the order of the baseline's page round-robin over stacks);
``socket.nar.granularities`` (default: every granularity that splits the ports into
physically contiguous groups); ``socket.noc.router`` (default: none, the routers folded into
``cycles_per_hop`` and free endpoints) with ``pipeline_stages``, ``buffer_flits`` (per
virtual channel), ``virtual_channels``, ``injection_latency`` and ``ejection_latency``
(cycles), and optionally ``link_latency`` (cycles, default ``cycles_per_hop`` minus the
stages; the two must add up to it), ``injection_width`` and ``ejection_width`` (bytes per NoC
cycle, default the link's), ``flow_control`` (``none``, the default, or ``credit``) and
``wait_for_tail_credit`` (default false: a VC takes its next packet as soon as the tail has
left; true: only once the tail's credit is back, one packet per VC at a time) and
``head_stages`` (the pipeline stages a packet's head passes and its other flits skip, route
computation and VC allocation; default all but the last two).
``socket.noc`` takes exactly one of ``link_bandwidth`` (per link, per direction) and
``bisection_bandwidth`` (both directions across the middle cut).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from nunasim.collectives.limits import MAX_GPUS
from nunasim.errors import ConfigError
from nunasim.hardware import Die, Mesh, Pod, Port, Preset, Router, Socket, Stack
from nunasim.io.files import read_text
from nunasim.io.preset_ranges import (
    check_bandwidth,
    check_clock,
    check_cycles,
    check_delay,
    check_flops,
    check_line,
    check_page,
)
from nunasim.io.schema import (
    Node,
    boolean,
    coordinate,
    int_range,
    integer,
    one_line,
    prose,
    text,
)
from nunasim.units import parse_bandwidth, parse_flops, parse_frequency, parse_size, parse_time

_PRESET_PACKAGE = "nunasim.hardware"
_PRESET_DIR = "presets"


class _StrictLoader(yaml.SafeLoader):
    """Safe YAML loading that refuses a key given twice in one mapping."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates
)


# What a hardware or workload description can need, with room to spare; beyond these a
# file is refused before it is built, as a YAML alias bomb would be.
MAX_YAML_CHARS = 1 << 20
MAX_YAML_NODES = 100_000  # counting every alias as the copy it stands for


def _expanded_nodes(root: yaml.Node) -> int:
    """Nodes in ``root`` with every alias expanded, counted without expanding them."""
    sizes: dict[int, int] = {}
    order: list[yaml.Node] = []
    stack = [root]
    while stack:  # depth-first, children before parents, each node once
        node = stack.pop()
        if id(node) in sizes:
            continue
        sizes[id(node)] = 1
        order.append(node)
        stack.extend(_children(node))
    for node in reversed(order):
        sizes[id(node)] = min(MAX_YAML_NODES + 1, 1 + sum(sizes[id(c)] for c in _children(node)))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_yaml(text_: str, source: str) -> Any:
    """Safe YAML: no tags beyond plain data, no key twice, bounded size and expansion."""
    if len(text_) > MAX_YAML_CHARS:
        raise ConfigError(
            f"{len(text_):,} characters is more than a description needs "
            f"(at most {MAX_YAML_CHARS:,})",
            source=source,
        )
    loader = _StrictLoader(text_)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_nodes(node) > MAX_YAML_NODES:
            raise ConfigError(
                f"the document expands to more than {MAX_YAML_NODES:,} values "
                "(aliases repeating aliases?)",
                source=source,
            )
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"not valid YAML: {problem[:200]}", source=source, where=where) from None
    except RecursionError:
        raise ConfigError("not valid YAML: nested too deeply", source=source) from None
    finally:
        loader.dispose()


# Upper limits on a socket, so that a preset with absurd counts is refused with its element
# rather than exhausting memory. The all-pairs route tables of a socket grow with the square
# of its routers (a 24 x 24 mesh takes 0.6 GB and a few seconds to build, 32 x 32 2.4 GB);
# the other limits are an order of magnitude beyond any GPU's.
MAX_ROUTERS = 576
MAX_CUS = 16_384
MAX_OUTSTANDING = 1 << 20  # requests per CU
MAX_STACKS = 1_024
MAX_PORTS = 4_096
_WHY_ROUTERS = "its all-pairs route tables grow as the square of the routers"
_WHY = "far more than any GPU has"


def builtin_names() -> list[str]:
    folder = resources.files(_PRESET_PACKAGE).joinpath(_PRESET_DIR)
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def list_presets() -> list[Preset]:
    return [load_preset(name) for name in builtin_names()]


def load_preset(name_or_path: str | Path) -> Preset:
    """A shipped preset by name (``nextgen-4die``) or a YAML file by path."""
    name = str(name_or_path)
    if name in builtin_names():
        resource = resources.files(_PRESET_PACKAGE).joinpath(_PRESET_DIR, f"{name}.yaml")
        return parse_preset(resource.read_text(encoding="utf-8"), f"builtin:{name}")
    path = Path(name)
    if path.is_dir():
        raise ConfigError("is a folder, not a preset file", source=name)
    if not path.is_file():
        known = ", ".join(builtin_names())
        raise ConfigError(
            f"no preset of that name (built in: {known}) and no such file", source=name
        )
    return parse_preset(read_text(path), str(path))


def parse_preset(content: str, source: str) -> Preset:
    root = Node(load_yaml(content, source), "", source)
    name = root.get("name", one_line)
    description = root.get("description", prose, "")
    socket_node = root.child("socket")
    socket = _socket(socket_node)
    pod_node = root.child("pod")
    try:
        sockets = _positive_int(pod_node, "sockets", at_most=MAX_GPUS)
        plane_ps = _delay(pod_node, "plane_latency")
        port_bandwidth = _channel(pod_node, "port_bandwidth", socket.line_bytes)
        pod = Pod(
            socket=socket,
            sockets=sockets,
            plane_latency_ps=plane_ps,
            port_bandwidth=port_bandwidth,
        )
    except ConfigError as exc:
        if exc.source:
            raise
        raise exc.located(source) from None
    pod_node.close()
    root.close()
    return Preset(name=name, description=description.strip(), pod=pod, source=source)


def _bandwidth(value: Any) -> float:
    bandwidth = parse_bandwidth(value)
    if not bandwidth > 0:
        raise ConfigError(f"must be positive; got {value!r}")
    return bandwidth


def _delay(node: Node, key: str, default: Any = ...) -> int:
    args = (key, parse_time) if default is ... else (key, parse_time, default)
    ps = node.get(*args)
    check_delay(node, key, ps)
    return ps


def _channel(node: Node, key: str, line_bytes: int, default: Any = ...) -> float:
    args = (key, _bandwidth) if default is ... else (key, _bandwidth, default)
    bandwidth = node.get(*args)
    check_bandwidth(node, key, bandwidth, line_bytes)
    return bandwidth


def _router(node: Node, mesh: Mesh) -> int:
    x, y = node.parse(coordinate)
    if not mesh.contains(x, y):
        raise node.error(f"router ({x}, {y}) is off the {mesh.width} x {mesh.height} mesh")
    return mesh.router(x, y)


def _positive_int(node: Node, key: str, default: Any = ..., at_most: int | None = None) -> int:
    args = (key, integer) if default is ... else (key, integer, default)
    value = node.get(*args)
    if value < 1:
        raise node.error(f"must be at least 1; got {value}", key)
    if at_most is not None and value > at_most:
        raise node.error(f"must be at most {at_most:,}; got {value:,}", key)
    return value


def _at_most(
    node: Node, what: str, count: int, limit: int, why: str, key: str | None = None
) -> None:
    if count > limit:
        raise node.error(f"{count:,} {what}, more than the {limit:,} nunasim models ({why})", key)


def _router_block(node: Node, clock: float, cycles_per_hop: int, line_bytes: int) -> Router:
    stages = node.get("pipeline_stages", integer)

    def width(key: str) -> float | None:
        # A channel's width is bytes per NoC cycle; the socket keeps bandwidths.
        if not node.has(key):
            return None
        bandwidth = node.get(key, parse_size) * clock
        check_bandwidth(node, key, bandwidth, line_bytes)
        return bandwidth

    def cycles(key: str) -> int:
        count = node.get(key, integer)
        check_cycles(node, key, count, clock)
        return count

    router = Router(
        pipeline_stages=stages,
        link_latency_cycles=node.get("link_latency", integer, cycles_per_hop - stages),
        buffer_flits=node.get("buffer_flits", integer),
        virtual_channels=node.get("virtual_channels", integer),
        injection_latency_cycles=cycles("injection_latency"),
        ejection_latency_cycles=cycles("ejection_latency"),
        injection_bandwidth=width("injection_width"),
        ejection_bandwidth=width("ejection_width"),
        flow_control=node.get("flow_control", text, "none"),
        wait_for_tail_credit=node.get("wait_for_tail_credit", boolean, False),
        head_stages=node.get("head_stages", integer, None),
    )
    node.close()
    return router


def _socket(node: Node) -> Socket:
    mesh_node = node.child("mesh")
    mesh = Mesh(_positive_int(mesh_node, "width"), _positive_int(mesh_node, "height"))
    _at_most(mesh_node, "routers", mesh.routers, MAX_ROUTERS, _WHY_ROUTERS)
    mesh_node.close()

    dies = []
    for die_node in node.child("dies").items():
        x0, x1 = die_node.get("x", int_range)
        y0, y1 = die_node.get("y", int_range)
        kind = die_node.get("kind", text, "compute")
        die_node.close()
        dies.append(Die(x0, y0, x1, y1, kind))

    compute = node.child("compute")
    routers_node = compute.child("routers", "all")
    if routers_node.value == "all":  # every router of a compute die
        io_dies = [d for d in dies if d.kind == "io"]
        cu_routers = tuple(
            r
            for r in range(mesh.routers)
            if not any(d.covers(r % mesh.width, r // mesh.width) for d in io_dies)
        )
    else:
        cu_routers = tuple(_router(item, mesh) for item in routers_node.items())
    cus_per_router = _positive_int(compute, "cus_per_router")
    _at_most(compute, "CUs", len(cu_routers) * cus_per_router, MAX_CUS, _WHY, "cus_per_router")
    outstanding = _positive_int(compute, "outstanding_requests", at_most=MAX_OUTSTANDING)
    residency = None
    if compute.has("threadblocks_per_cu"):
        residency = _positive_int(compute, "threadblocks_per_cu")
    l1 = _delay(compute, "l1_latency")
    flops_node = compute.child("flops")
    flops = tuple((dtype, item.parse(parse_flops)) for dtype, item in flops_node.entries())
    for dtype, rate in flops:
        check_flops(flops_node, dtype, rate)
    compute.close()

    # The line first: every bandwidth's range is in lines per second.
    memory = node.child("memory")
    line = memory.get("line", parse_size)
    check_line(memory, "line", line)
    page = memory.get("page", parse_size)
    check_page(memory, "page", page)
    interleave = memory.get("interleave", text, "listed")
    memory.close()

    noc = node.child("noc")
    clock = noc.get("clock", parse_frequency)
    check_clock(noc, "clock", clock)
    cycles = _positive_int(noc, "cycles_per_hop")
    check_cycles(noc, "cycles_per_hop", cycles, clock)
    crossing = noc.get("die_crossing_cycles", integer, 0)
    check_cycles(noc, "die_crossing_cycles", crossing, clock, plus=cycles)
    io_crossing = None
    if noc.has("io_crossing_cycles"):
        io_crossing = noc.get("io_crossing_cycles", integer)
        check_cycles(noc, "io_crossing_cycles", io_crossing, clock, plus=cycles)
    routing = noc.get("routing", text, "xy")
    given = [key for key in ("link_bandwidth", "bisection_bandwidth") if noc.has(key)]
    if len(given) != 1:
        raise noc.error("give exactly one of link_bandwidth and bisection_bandwidth")
    if given[0] == "link_bandwidth":
        link_bw = _channel(noc, "link_bandwidth", line)
    else:
        cut = mesh.bisection_links()
        if cut == 0:
            raise noc.error("a mesh of one router has no bisection", "bisection_bandwidth")
        bisection = noc.get("bisection_bandwidth", _bandwidth)
        check_bandwidth(noc, "bisection_bandwidth", bisection, line, cut)
        link_bw = bisection / cut
    io_link_bw = _channel(noc, "io_link_bandwidth", line) if noc.has("io_link_bandwidth") else None
    microarchitecture = (
        _router_block(noc.child("router"), clock, cycles, line) if noc.has("router") else None
    )
    noc.close()

    hbm = node.child("hbm")
    default_bw = _channel(hbm, "bandwidth", line)
    default_latency = _delay(hbm, "latency")
    stacks = []
    for item in hbm.child("stacks").items():
        if isinstance(item.value, dict):
            router = _router(item.child("router"), mesh)
            bw = _channel(item, "bandwidth", line, default_bw)
            latency = _delay(item, "latency", default_latency)
            item.close()
            stacks.append(Stack(router, bw, latency))
        else:
            stacks.append(Stack(_router(item, mesh), default_bw, default_latency))
    _at_most(hbm, "HBM stacks", len(stacks), MAX_STACKS, _WHY, "stacks")
    hbm.close()

    ports: list[Port] = []
    for item in node.child("ports").items():
        router = _router(item.child("router"), mesh)
        count = _positive_int(item, "count")
        _at_most(item, "I/O ports", len(ports) + count, MAX_PORTS, _WHY, "count")
        item.close()
        ports.extend(Port(router) for _ in range(count))

    port_hash = node.get("port_hash", text, "xor-fold")
    granularities = None
    if node.has("nar"):
        nar = node.child("nar")
        listed: dict[int, int] = {}
        for index, item in enumerate(nar.child("granularities").items()):
            granularity = item.parse(integer)
            if granularity in listed:
                # A sweep over the socket's granularities would run it twice.
                raise item.error(
                    f"{granularity} is already nar.granularities[{listed[granularity]}]"
                )
            listed[granularity] = index
        granularities = tuple(listed)
        nar.close()
    node.close()

    try:
        return Socket(
            mesh=mesh,
            dies=tuple(dies),
            cu_routers=cu_routers,
            cus_per_router=cus_per_router,
            l1_latency_ps=l1,
            outstanding_requests=outstanding,
            flops=flops,
            noc_clock_hz=clock,
            cycles_per_hop=cycles,
            die_crossing_cycles=crossing,
            link_bandwidth=link_bw,
            routing=routing,
            line_bytes=line,
            page_bytes=page,
            stacks=tuple(stacks),
            ports=tuple(ports),
            declared_granularities=granularities,
            threadblocks_per_cu=residency,
            port_hash=port_hash,
            page_interleave=interleave,
            router=microarchitecture,
            io_crossing_cycles=io_crossing,
            io_link_bandwidth=io_link_bw,
        )
    except ConfigError as exc:
        raise exc.located(node.source, node.path) from None
