"""Shipped presets, and every class of bad preset input."""

import copy
from importlib import resources

import pytest
import yaml
from hypothesis import given, settings

from nunasim.errors import ConfigError
from nunasim.hardware import Preset
from nunasim.hardware.summary import summarise
from nunasim.io.presets import builtin_names, load_preset, parse_preset
from nunasim.units import cycles_to_ps
from strategies import pods


def _nextgen_document() -> dict:
    text = resources.files("nunasim.hardware").joinpath("presets", "nextgen-4die.yaml")
    return yaml.safe_load(text.read_text())


def test_builtin_presets():
    assert builtin_names() == [
        "mesh8x8-vc",
        "monolithic",
        "nextgen-2die",
        "nextgen-4die",
        "nextgen-4die-calibrated",
        "nextgen-4die-io",
        "nextgen-4die-vc",
    ]


def test_nextgen_is_table_2():
    preset = load_preset("nextgen-4die")
    s, pod = preset.socket, preset.pod
    summary = summarise(preset)
    assert (s.mesh.width, s.mesh.height) == (24, 6)
    assert summary.dies == 4
    assert all(d.width == 6 and d.height == 6 for d in s.dies)
    assert summary.cus == 576
    assert summary.stacks == 16
    assert summary.ports == 144
    assert summary.port_bandwidth_total == pytest.approx(7.2e12)
    assert summary.bisection_bandwidth == pytest.approx(10e12)
    assert summary.hbm_bandwidth == pytest.approx(40e12)
    assert s.link_bandwidth == pytest.approx(10e12 / 12)
    assert s.l1_latency_ps == 120_000
    assert s.outstanding_requests == 700
    assert s.flops_for("bf16") == pytest.approx(25e15)
    assert s.noc_clock_hz == pytest.approx(1.2e9)
    assert s.cycles_per_hop == 10
    assert s.routing == "xy"
    assert (s.line_bytes, s.page_bytes) == (256, 4096)
    assert all(st.latency_ps == 150_000 for st in s.stacks)
    assert pod.plane_latency_ps == 500_000
    assert pod.port_bandwidth == pytest.approx(50e9)
    assert pod.planes == 144
    assert pod.port_flit_ps == 5120
    # Stacks on the long edges, four per die (two top, two bottom).
    for die_index, die in enumerate(s.dies):
        rows = sorted(
            s.mesh.coord(st.router)[1] for st in s.stacks if die.covers(*s.mesh.coord(st.router))
        )
        assert rows == [0, 0, 5, 5], die_index
    # Ports only on the far ends, 12 per edge router.
    columns = [s.mesh.coord(p.router)[0] for p in s.ports]
    assert columns == [0] * 72 + [23] * 72


@pytest.mark.parametrize(
    ("name", "dies", "cus", "stacks", "ports"),
    [("nextgen-2die", 2, 288, 8, 72), ("monolithic", 1, 144, 4, 36)],
)
def test_smaller_variants_keep_per_die_resources(name, dies, cus, stacks, ports):
    summary = summarise(load_preset(name))
    assert (summary.dies, summary.cus, summary.stacks, summary.ports) == (dies, cus, stacks, ports)
    big = summarise(load_preset("nextgen-4die"))
    assert summary.cu_to_port.average < big.cu_to_port.average  # NUNA shrinks with the socket
    assert load_preset(name).socket.link_bandwidth == pytest.approx(10e12 / 12)


def test_preset_from_file_and_round_trip(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(_nextgen_document()))
    mine = load_preset(str(path))
    assert mine.source == str(path)
    assert mine.pod == load_preset("nextgen-4die").pod


def test_optional_keys(tmp_path):
    doc = _nextgen_document()
    noc = doc["socket"]["noc"]
    del noc["bisection_bandwidth"], noc["routing"], noc["die_crossing_cycles"]
    noc["link_bandwidth"] = "800GB/s"
    doc["socket"]["hbm"]["stacks"][0] = {"router": [1, 0], "bandwidth": "1TB/s", "latency": "90ns"}
    doc["socket"]["nar"] = {"granularities": [1, 2, 12]}
    preset = parse_preset(yaml.safe_dump(doc), "custom")
    s = preset.socket
    assert s.link_bandwidth == pytest.approx(8e11)
    assert s.routing == "xy" and s.die_crossing_cycles == 0
    assert (s.stacks[0].bandwidth, s.stacks[0].latency_ps) == (1e12, 90_000)
    assert s.stacks[1].bandwidth == pytest.approx(2.5e12)
    assert s.valid_granularities == (1, 2, 12)


def test_page_interleave_orders(tmp_path):
    listed = load_preset("nextgen-4die").socket
    assert listed.interleave_order == tuple(range(16))
    doc = _nextgen_document()
    doc["socket"]["memory"]["interleave"] = "die-first"
    s = parse_preset(yaml.safe_dump(doc), "custom").socket
    # One stack of each die in turn: the round-robin visits the dies as the dispatcher does.
    dies = [s.die_of_router[s.stacks[k].router] for k in s.interleave_order]
    assert dies == [0, 1, 2, 3] * 4
    assert sorted(s.interleave_order) == list(range(16))


def test_reference_router_preset():
    s = load_preset("mesh8x8-vc").socket
    r = s.router
    assert (s.mesh.width, s.mesh.height) == (8, 8)
    assert (r.pipeline_stages, r.link_latency_cycles, s.cycles_per_hop) == (4, 1, 5)
    assert (r.buffer_flits, r.virtual_channels, r.flow_control) == (8, 2, "credit")
    # One flit per cycle on links and channels; 1-cycle channels, the last router's
    # pipeline and one flit time to receive a flit at the ends.
    assert s.link_flit_ps == s.injection_flit_ps == s.ejection_flit_ps == 1000
    assert (s.injection_latency_ps, s.ejection_latency_ps) == (1000, 6000)


def test_router_block_is_optional_and_its_defaults():
    s = load_preset("nextgen-4die").socket
    assert s.router is None
    assert (s.injection_latency_ps, s.ejection_latency_ps, s.endpoint_latency_ps) == (0, 0, 0)
    assert s.injection_flit_ps == s.ejection_flit_ps == s.flit_spacing_ps == s.link_flit_ps
    doc = _nextgen_document()
    doc["socket"]["noc"]["router"] = _ROUTER
    s = parse_preset(yaml.safe_dump(doc), "custom").socket
    assert s.router.link_latency_cycles == 6  # the rest of the 10 cycles per hop
    assert s.router.flow_control == "none"
    assert s.router.wait_for_tail_credit is False and s.tail_credit is False
    assert s.router.head_stages is None and s.router.head_stage_count == 2  # 4 - 2
    assert s.head_ps == 0  # no credits: no head stages to wait for
    doc["socket"]["noc"]["router"] = {**_ROUTER, "flow_control": "credit", "head_stages": 3}
    doc["socket"]["noc"]["router"]["wait_for_tail_credit"] = True
    s = parse_preset(yaml.safe_dump(doc), "custom").socket
    assert s.tail_credit and s.head_ps == cycles_to_ps(3, s.noc_clock_hz)
    assert s.injection_flit_ps == s.link_flit_ps  # channel widths default to the link's
    assert s.hop_ps == load_preset("nextgen-4die").socket.hop_ps


_ROUTER = {
    "pipeline_stages": 4,
    "buffer_flits": 8,
    "virtual_channels": 2,
    "injection_latency": 1,
    "ejection_latency": 1,
}


def _with_router(**changes):
    def edit(doc):
        doc["socket"]["noc"]["router"] = {**_ROUTER, **changes}

    return edit


def _error(doc_or_text, source="bad.yaml") -> ConfigError:
    text = doc_or_text if isinstance(doc_or_text, str) else yaml.safe_dump(doc_or_text)
    with pytest.raises(ConfigError) as info:
        parse_preset(text, source)
    return info.value


def _mutated(edit) -> dict:
    doc = copy.deepcopy(_nextgen_document())
    edit(doc)
    return doc


BAD_INPUTS = [
    # (what, edit, key path, words of the reason)
    (
        "unknown key",
        lambda d: d["socket"]["noc"].update(clok="1GHz"),
        "socket.noc.clok",
        "unknown key",
    ),
    ("unknown top-level key", lambda d: d.update(extra=1), "extra", "unknown key"),
    (
        "missing key",
        lambda d: d["socket"]["hbm"].pop("latency"),
        "socket.hbm",
        "missing required key 'latency'",
    ),
    (
        "port off the mesh",
        lambda d: d["socket"]["ports"][3].update(router=[30, 1]),
        "socket.ports[3].router",
        "off the 24 x 6 mesh",
    ),
    (
        "stack off the mesh",
        lambda d: d["socket"]["hbm"]["stacks"].__setitem__(5, [3, 6]),
        "socket.hbm.stacks[5]",
        "off the 24 x 6 mesh",
    ),
    (
        "zero port bandwidth",
        lambda d: d["pod"].update(port_bandwidth="0GB/s"),
        "pod.port_bandwidth",
        "must be positive",
    ),
    (
        "zero stack bandwidth",
        lambda d: d["socket"]["hbm"].update(bandwidth="0TB/s"),
        "socket.hbm.bandwidth",
        "must be positive",
    ),
    (
        "negative bisection",
        lambda d: d["socket"]["noc"].update(bisection_bandwidth="0TB/s"),
        "socket.noc.bisection_bandwidth",
        "must be positive",
    ),
    (
        "negative latency",
        lambda d: d["pod"].update(plane_latency="-5ns"),
        "pod.plane_latency",
        "not a time",
    ),
    (
        "bits for bytes",
        lambda d: d["pod"].update(port_bandwidth="50Gb/s"),
        "pod.port_bandwidth",
        "bits",
    ),
    (
        "time without unit",
        lambda d: d["socket"]["compute"].update(l1_latency=120),
        "socket.compute.l1_latency",
        "needs a unit",
    ),
    (
        "non-contiguous granularity",
        lambda d: d["socket"].update(nar={"granularities": [2, 3]}),
        "socket.nar.granularities[1]",
        "not on one connected group",
    ),
    (
        "granularity not dividing",
        lambda d: d["socket"].update(nar={"granularities": [5]}),
        "socket.nar.granularities[0]",
        "does not divide the 144 ports",
    ),
    (
        "overlapping dies",
        lambda d: d["socket"]["dies"][1].update(x=[5, 11]),
        "socket.dies[1]",
        "already in dies[0]",
    ),
    ("router in no die", lambda d: d["socket"]["dies"].pop(), "socket.dies", "belong to no die"),
    (
        "die off the mesh",
        lambda d: d["socket"]["dies"][3].update(x=[18, 24]),
        "socket.dies[3]",
        "leaves the 24 x 6 mesh",
    ),
    (
        "zero ports at a router",
        lambda d: d["socket"]["ports"][0].update(count=0),
        "socket.ports[0].count",
        "at least 1",
    ),
    ("zero sockets", lambda d: d["pod"].update(sockets=0), "pod.sockets", "at least 1"),
    (
        "page not whole lines",
        lambda d: d["socket"]["memory"].update(page="1000B"),
        "socket.memory.page",
        "whole lines",
    ),
    (
        "both link and bisection bandwidth",
        lambda d: d["socket"]["noc"].update(link_bandwidth="1TB/s"),
        "socket.noc",
        "exactly one",
    ),
    (
        "unknown routing",
        lambda d: d["socket"]["noc"].update(routing="adaptive"),
        "socket.noc.routing",
        "unknown routing",
    ),
    (
        "wrong type",
        lambda d: d["socket"]["mesh"].update(width="24"),
        "socket.mesh.width",
        "whole number",
    ),
    ("list instead of mapping", lambda d: d.update(pod=[8]), "pod", "expected a mapping"),
    (
        "unknown page interleave",
        lambda d: d["socket"]["memory"].update(interleave="random"),
        "socket.memory.interleave",
        "unknown page interleave",
    ),
    (
        "unknown router key",
        _with_router(stages=3),
        "socket.noc.router.stages",
        "unknown key",
    ),
    (
        "missing router key",
        lambda d: d["socket"]["noc"].update(router={"pipeline_stages": 4}),
        "socket.noc.router",
        "missing required key 'buffer_flits'",
    ),
    (
        "zero pipeline stages",
        _with_router(pipeline_stages=0, link_latency=10),
        "socket.noc.router.pipeline_stages",
        "must be positive",
    ),
    (
        "hop latency that does not add up",
        _with_router(link_latency=2),
        "socket.noc.router.link_latency",
        "must equal noc.cycles_per_hop (10)",
    ),
    (
        "more pipeline stages than the hop",
        _with_router(pipeline_stages=12),
        "socket.noc.router.link_latency",
        "must not be negative",
    ),
    ("zero buffer", _with_router(buffer_flits=0), "socket.noc.router.buffer_flits", "positive"),
    (
        "no virtual channel",
        _with_router(virtual_channels=0),
        "socket.noc.router.virtual_channels",
        "positive",
    ),
    (
        "negative injection latency",
        _with_router(injection_latency=-1),
        "socket.noc.router.injection_latency",
        "must not be negative",
    ),
    (
        "fractional ejection latency",
        _with_router(ejection_latency=1.5),
        "socket.noc.router.ejection_latency",
        "whole number",
    ),
    (
        "zero channel width",
        _with_router(ejection_width="0B"),
        "socket.noc.router.ejection_width",
        "must be positive",
    ),
    (
        "unknown flow control",
        _with_router(flow_control="on-off"),
        "socket.noc.router.flow_control",
        "unknown flow control",
    ),
    (
        "more head stages than the pipeline",
        _with_router(head_stages=5),
        "socket.noc.router.head_stages",
        "between 0 and pipeline_stages (4)",
    ),
    (
        "negative head stages",
        _with_router(head_stages=-1),
        "socket.noc.router.head_stages",
        "between 0 and pipeline_stages (4)",
    ),
    (
        "tail credit not a boolean",
        _with_router(wait_for_tail_credit="yes please"),
        "socket.noc.router.wait_for_tail_credit",
        "true or false",
    ),
]


@pytest.mark.parametrize(
    ("what", "edit", "where", "words"), BAD_INPUTS, ids=[case[0] for case in BAD_INPUTS]
)
def test_bad_input_names_file_key_and_reason(what, edit, where, words):
    error = _error(_mutated(edit))
    assert error.source == "bad.yaml"
    assert error.where == where, str(error)
    assert words in error.reason, str(error)
    assert str(error).startswith(f"bad.yaml: {where}: ")


def test_malformed_yaml_names_the_line():
    error = _error("name: x\nsocket: [1, 2\n")
    assert "not valid YAML" in error.reason
    assert error.where.startswith("line ")


def test_duplicate_key_is_refused():
    text = "name: a\nname: b\nsocket: {}\npod: {}\n"
    error = _error(text)
    assert "appears twice" in error.reason


def test_unsafe_yaml_tags_are_refused():
    error = _error("name: !!python/object/apply:os.system ['true']\n")
    assert "not valid YAML" in error.reason


def test_missing_file():
    with pytest.raises(ConfigError, match="no preset of that name"):
        load_preset("no-such-preset.yaml")


@settings(max_examples=30, deadline=None)
@given(pods())
def test_summary_of_random_pods(pod):
    preset = Preset("random", "", pod, "test")
    summary = summarise(preset)
    assert summary.cus == pod.socket.cus
    assert summary.cu_to_port.best <= summary.cu_to_port.average <= summary.cu_to_port.worst
    assert summary.port_bandwidth_total == pytest.approx(len(pod.socket.ports) * pod.port_bandwidth)
    assert summary.bisection_links == pod.socket.mesh.bisection_links()


def _transfers_one_by_one(pod) -> tuple[list[int], list[int]]:
    """Every Fig. 1 transfer's NoC part and whole time (ps), one combination at a time: the
    local read (there and back, its stack's access and the L1 crossing) then the store's
    own zero-load trip (``Pod.store_trip_at``)."""
    socket = pod.socket
    cus = sorted(set(int(r) for r in socket.router_of_cu))
    ports = {}
    for index, port in enumerate(socket.ports):
        ports.setdefault(port.router, index)  # one port per router: the same paths
    noc, total = [], []
    for cu in cus:
        for local in socket.stacks:
            read = 2 * socket.path_latency_ps(cu, local.router)
            for port in ports.values():
                for stack in range(len(socket.stacks)):
                    trip = pod.store_trip_at(cu, port, stack)
                    noc.append(read + trip.noc_ps)
                    total.append(socket.l1_latency_ps + read + local.latency_ps + trip.total_ps)
    return noc, total


@settings(max_examples=15, deadline=None)
@given(pods())
def test_transfer_spread_is_every_transfer_taken_one_by_one(pod):
    from nunasim.hardware.summary import transfer_spread

    if len({s.latency_ps for s in pod.socket.stacks}) > 1:
        return  # the spread takes one stack latency for all
    noc, total = _transfers_one_by_one(pod)
    spread = transfer_spread(Preset("random", "", pod, "test"))
    assert (spread.noc_best_ps, spread.noc_worst_ps) == (min(noc), max(noc))
    assert (spread.total_best_ps, spread.total_worst_ps) == (min(total), max(total))
    assert spread.noc_mean_ps == pytest.approx(sum(noc) / len(noc))
    assert spread.total_mean_ps == pytest.approx(sum(total) / len(total))


def test_nextgen_transfer_spread_is_section_1s_analysis():
    """On Table 2's GPU the longest transfer crosses 109 hops of 10 cycles at 1.2 GHz (a
    read across the socket and back, a store to the far end's port, a landing across the
    remote socket), the shortest two hops; a whole transfer adds the L1 twice (the read's and
    the store's), two stack accesses, a port's flit and the plane."""
    from nunasim.hardware.summary import transfer_spread

    preset = load_preset("nextgen-4die")
    spread = transfer_spread(preset)
    hop = cycles_to_ps(10, 1.2e9)
    assert spread.noc_worst_ps == pytest.approx(109 * hop, abs=109)
    assert spread.noc_best_ps == pytest.approx(2 * hop, abs=2)
    fixed = 2 * 120_000 + 2 * 150_000 + preset.pod.port_flit_ps + 500_000
    assert spread.total_worst_ps - spread.noc_worst_ps == fixed
    assert spread.ratios()["transfer worst/best"] == pytest.approx(1.84, abs=0.005)
