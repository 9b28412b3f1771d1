"""Communication protocols: Simple (fence and flag), LL and LL128 (flags in the data, MSCCL
and NCCL), MSCCL++ packets; their wire bytes, ordering and timing in the packet engine."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conservation import assert_conserved
from engine_modes import outputs_compiled_and_not
from nunasim.collectives.builder import PlanBuilder
from nunasim.collectives.builtins import builtin_plan
from nunasim.collectives.plan import Buffer, Chunks, Collective, Protocol
from nunasim.engine.analytic.bound import critical_path_ps, lower_bound_ps, store_latency_ps
from nunasim.engine.lowering.lower import count_messages, lower
from nunasim.engine.lowering.messages import FLAG, STORE
from nunasim.engine.packet.engine import simulate
from nunasim.errors import ConfigError
from nunasim.hardware import Pod
from nunasim.io.msccl import load_msccl_xml, parse_msccl_xml
from nunasim.io.mscclpp import load_mscclpp
from nunasim.io.presets import load_preset
from nunasim.policies.place import place
from nunasim.scenario import Scenario
from small_plans import one_store_plan
from strategies import BUILTIN_ALGORITHMS, sockets

POD = load_preset("nextgen-4die").pod
FIXTURES = Path(__file__).parent / "fixtures" / "plans"
LINE = POD.socket.line_bytes

# A 2-GPU in-place All-Gather: each GPU sends its chunk to the other, then receives.
AG2 = """<algo name="ag2" {proto} nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather"
  inplace="1" outofplace="0">
  <gpu id="0" i_chunks="0" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1"
        depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1"
        depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="0" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1"
        depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1"
        depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>"""


def ag2(proto: str | None):
    attribute = f'proto="{proto}"' if proto is not None else ""
    return parse_msccl_xml(AG2.format(proto=attribute), "ag2.xml")


def run(plan, size, config="UA", pod=POD):
    pod = pod.with_sockets(plan.ngpus)
    placement = place(plan, size, pod, config)
    lowered = lower(pod, plan, placement)
    return placement, lowered, simulate(lowered)


# --- the protocols' definitions --------------------------------------------------------------


def test_bytes_per_line_follow_the_protocols_words():
    assert Protocol.SIMPLE.data_bytes_per_line(256) == 256
    assert Protocol.LL.data_bytes_per_line(256) == 128  # 8 B of data per 16 B
    assert Protocol.PACKET.data_bytes_per_line(256) == 128
    assert Protocol.LL128.data_bytes_per_line(256) == 240  # 120 B of data per 128 B
    assert Protocol.LL128.data_bytes_per_line(128) == 120
    assert Protocol.LL.lines(1000, 256) == 8
    assert Protocol.LL128.lines(1000, 256) == 5
    assert Protocol.SIMPLE.lines(1000, 256) == 4
    assert [p.data_polled for p in Protocol] == [False, True, True, True]
    with pytest.raises(ValueError, match="not a whole number"):
        Protocol.LL128.data_bytes_per_line(64)


# --- importers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "protocol"),
    [
        ("ag-1k-512k.xml", Protocol.LL),
        ("r48ll.xml", Protocol.LL),
        ("custom_allreduce.xml", Protocol.LL128),
        ("ag-32m-1g.xml", Protocol.SIMPLE),
    ],
)
def test_msccl_proto_sets_every_transfer(fixture, protocol):
    plan = load_msccl_xml(FIXTURES / fixture)
    assert {t.protocol for t in plan.transfers} == {protocol}


def test_msccl_proto_defaults_to_simple_as_msccl_tools_writes():
    assert ag2(None).protocols == {Protocol.SIMPLE}
    assert ag2("LL128").protocols == {Protocol.LL128}


@pytest.mark.parametrize("bad", ["ll", "LL64", "simple", ""])
def test_msccl_unknown_proto_is_a_located_error(bad):
    with pytest.raises(ConfigError, match=r"ag2\.xml: <algo>: proto=") as info:
        ag2(bad)
    assert "Simple, LL, LL128" in str(info.value)


def test_mscclpp_packet_ops_are_packet_transfers_and_puts_stay_simple():
    packets = load_mscclpp(FIXTURES / "allreduce_packet.json")
    assert {t.protocol for t in packets.transfers} == {Protocol.PACKET}
    plain = load_mscclpp(FIXTURES / "allreduce.json")
    assert {t.protocol for t in plain.transfers} == {Protocol.SIMPLE}


def test_builtin_proto_parameter():
    assert builtin_plan("allgather:direct:gpus=4").protocols == {Protocol.SIMPLE}
    for proto in ("Simple", "LL", "LL128", "packet"):
        plan = builtin_plan(f"allgather:direct:gpus=4:proto={proto}")
        assert plan.protocols == {Protocol(proto)}
    ll = builtin_plan("allreduce:ring:gpus=4:tbs=2:proto=LL")
    simple = builtin_plan("allreduce:ring:gpus=4:tbs=2")
    assert ll.name == simple.name + ":proto=LL"
    assert ll.with_protocol(Protocol.SIMPLE).transfers == simple.transfers
    assert ll.gpus == simple.gpus
    with pytest.raises(ConfigError, match="unknown protocol proto='LL256'"):
        builtin_plan("allgather:direct:gpus=4:proto=LL256")


def test_cli_shows_protocols_and_refuses_unknown_ones(capsys):
    from nunasim.cli import main

    assert main(["plan", "show", "allgather:direct:gpus=4:proto=LL128"]) == 0
    assert "transfers         12 (LL128)" in capsys.readouterr().out
    assert main(["plan", "show", str(FIXTURES / "r48ll.xml")]) == 0
    assert "(LL)" in capsys.readouterr().out
    assert main(["plan", "show", "allgather:direct:gpus=4:proto=LL64"]) == 2
    assert "unknown protocol proto='LL64'" in capsys.readouterr().err


# --- wire bytes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "plan",
    [
        builtin_plan("allreduce:ring:gpus=3:proto=LL"),
        builtin_plan("reducescatter:direct:gpus=3:chunks=2:proto=LL128"),
        load_mscclpp(FIXTURES / "allreduce_packet.json"),
        load_msccl_xml(FIXTURES / "custom_allreduce.xml"),
    ],
    ids=lambda p: p.name,
)
def test_message_count_is_known_before_lowering(plan):
    placement = place(plan, 30_000, POD.with_sockets(plan.ngpus), "UA")
    expected = count_messages(plan, placement.chunk_bytes, placement.line_bytes)
    assert expected == lower(POD.with_sockets(plan.ngpus), plan, placement).messages


@pytest.mark.parametrize("size", [4 * 1024, 1 << 20])
def test_ll_moves_exactly_twice_the_bytes_of_simple(size):
    """The same MSCCL plan under ``proto="LL"``: every store carries half a line of data,
    so the engine counts twice the wire bytes for the same data, and no flag messages."""
    results = {}
    for proto in ("Simple", "LL"):
        plan = ag2(proto)
        results[proto] = Scenario(POD.with_sockets(2), plan, size, "UA").run()
        _, lowered, _ = run(plan, size)
        flags = int((lowered.msg_kind == FLAG).sum())
        assert flags == (2 if proto == "Simple" else 0)
    simple, ll = results["Simple"], results["LL"]
    assert ll.bytes_delivered == 2 * simple.bytes_delivered
    assert ll.data_bytes_delivered == simple.data_bytes_delivered == simple.bytes_delivered
    assert len(ll.stores) == 2 * len(simple.stores)
    assert (ll.stores["data_bytes"] == LINE // 2).all()


def test_ll_fixture_moves_twice_the_bytes_of_its_simple_twin():
    plan = load_msccl_xml(FIXTURES / "ag-1k-512k.xml")
    size = plan.chunks_per_size * 4 * LINE
    ll = Scenario(POD.with_sockets(8), plan, size, "UA").run()
    simple = Scenario(POD.with_sockets(8), plan.with_protocol("Simple"), size, "UA").run()
    assert ll.bytes_delivered == 2 * simple.bytes_delivered
    assert ll.data_bytes_delivered == simple.data_bytes_delivered


@pytest.mark.parametrize("chunk", [1, 239, 240, 241, 1000, 4096, 5000])
def test_ll128_moves_ceil_b_over_240_lines_per_chunk(chunk):
    plan = ag2("LL128")
    placement, lowered, _ = run(plan, 2 * chunk)
    assert placement.chunk_bytes == chunk
    stores = np.nonzero(lowered.msg_kind == STORE)[0]
    assert len(stores) == 2 * -(-chunk // 240)  # one chunk each way
    assert lowered.msg_bytes[stores].sum() == 2 * chunk
    assert lowered.msg_bytes[stores].max() <= 240


# --- ordering and timing ------------------------------------------------------------------


def test_ll_receivers_are_released_by_their_data():
    """No flag: a receiving step starts exactly when the last line of its transfer lands,
    and a sending step completes when its last line is issued, before any acknowledgement."""
    plan = ag2("LL")
    _, lowered, trace = run(plan, 64 * 1024)
    stores = np.nonzero(lowered.msg_kind == STORE)[0]
    for gpu in (0, 1):
        sender, receiver = 2 * gpu, 2 * gpu + 1  # steps: (tb 0, s), (tb 0, r) per GPU
        mine = stores[lowered.msg_dst_gpu[stores] == 1 - gpu]
        assert trace.step_end[sender] == trace.msg_issue[mine].max()
        assert trace.step_end[sender] < trace.msg_done[mine].max()
        landed = trace.msg_done[stores[lowered.msg_dst_gpu[stores] == gpu]].max()
        assert trace.step_begin[receiver] == max(landed, trace.step_end[receiver - 1])


def test_ll_is_faster_when_small_and_slower_when_large():
    """Direction of the protocols' trade-off on a 2-GPU All-Gather, one threadblock a GPU.

    Small (4 KiB): latency-bound. Simple waits, after its data, for the acknowledgements
    (the fence: the reverse path of a store) and then for its flag's one-way trip; LL's
    receiver starts when the last line lands, so LL takes well under half of Simple's
    time (about 1.2 us against 2.5 us). LL128 is as fast (its lines are nearly full).
    Large (1 MiB): bound by the CU's outstanding-request window; LL moves twice the lines
    and is slower than Simple by more than the fence it saves (about 11.4 us against
    8.1 us), while LL128's 7% more lines still beat Simple's fence.
    """
    times = {}
    for size in (4 * 1024, 1 << 20):
        for proto in ("Simple", "LL", "LL128"):
            result = Scenario(POD.with_sockets(2), ag2(proto), size, "UA").run()
            assert result.completion_ps >= result.lower_bound_ps
            times[(size, proto)] = result.completion_ps
    small, large = 4 * 1024, 1 << 20
    assert 2 * times[(small, "LL")] < times[(small, "Simple")]
    assert times[(small, "LL128")] < times[(small, "Simple")]
    assert times[(large, "Simple")] < times[(large, "LL")] < 2 * times[(large, "Simple")]
    assert times[(large, "LL128")] < times[(large, "Simple")]


@settings(max_examples=25, deadline=None)
@given(
    sockets(max_width=10, max_height=6),
    st.integers(0, 10**6),
    st.floats(1e9, 2e11),
    st.integers(0, 1000),
    st.sampled_from([Protocol.LL, Protocol.LL128, Protocol.PACKET]),
)
def test_single_data_polled_store_equals_the_oracle(socket, plane_ps, port_bw, seed, protocol):
    """One line of LL data (half a line of data) at zero load: the store takes exactly the
    oracle's latency, and the run, which ends when the line lands, its critical path."""
    pod = Pod(socket, 2, plane_ps, port_bw)
    plan = one_store_plan(protocol)
    size = protocol.data_bytes_per_line(socket.line_bytes)
    placement = place(plan, size, pod, "UA", 1, seed)
    lowered = lower(pod, plan, placement)
    trace = simulate(lowered)
    stores = np.nonzero(lowered.msg_kind == STORE)[0]
    assert len(stores) == 1 and not (lowered.msg_kind == FLAG).any()
    m = stores[0]
    amap = placement.address_map
    address = int(lowered.msg_address[m])
    cu_router = socket.cu_router(int(placement.gpus[0].tb_cu[0]))
    expected = store_latency_ps(pod, cu_router, amap.port_of(address), amap.stack_of(address))
    assert trace.msg_done[m] - trace.msg_issue[m] - socket.l1_latency_ps == expected
    assert int(trace.step_end.max()) == trace.msg_done[m]  # released by the data itself
    assert int(trace.step_end.max()) == critical_path_ps(lowered)


def test_extra_packet_readers_poll_the_packets_before_them():
    """In the MSCCL++ packet fixture a ``ppkt`` of two chunks has two readers: the second's
    transfer carries no message, and both start only after every packet landed."""
    plan = load_mscclpp(FIXTURES / "allreduce_packet.json")
    placement, lowered, trace = run(plan, 64 * 1024)
    assert not (lowered.msg_kind == FLAG).any()
    pos = {sid: i for i, (sid, _) in enumerate(plan.steps())}
    for x, transfer in enumerate(plan.transfers):
        if transfer.dst is not None:
            continue
        data = plan.transfers[x - 1]  # the packets it polls
        assert data.dst is not None and data.src == transfer.src
        lines = np.nonzero((lowered.msg_target >= 0) & (lowered.msg_dst_gpu == data.dst_gpu))[0]
        sender = pos[transfer.src]
        mine = lines[lowered.lineop_step[lowered.msg_lineop[lines]] == sender]
        assert len(mine) == data.count * Protocol.PACKET.lines(placement.chunk_bytes, LINE)
        landed = trace.msg_done[mine].max()
        assert trace.step_begin[pos[transfer.receiver]] >= landed
        assert trace.step_begin[pos[data.receiver]] >= landed


def test_a_data_polled_flag_needs_data_to_poll():
    b = PlanBuilder(
        "bad",
        Collective.BROADCAST,
        2,
        input_chunks=0,
        output_chunks=1,
        chunks_per_size=1,
        source="bad-plan",
    )
    b.threadblock(0)
    b.threadblock(1)
    send = b.step(0, 0, "s", reads=[Chunks(Buffer.OUTPUT, 0)])
    receive = b.step(1, 0, "r")
    b.transfer(send, 1, None, receive, Protocol.LL)
    plan = b.build()
    with pytest.raises(ConfigError, match="bad-plan: gpu 0 tb 0 step 0: a LL flag alone"):
        run(plan, 1024)


# --- conservation, bounds, compiled == uncompiled ---------------------------------------------

BUILTINS = [
    ("allgather:direct:gpus=4:tbs=6", 100_000),
    ("reducescatter:direct:gpus=4", 100_000),
    ("allreduce:direct:gpus=3", 30_000),
    ("allreduce:onepass:gpus=4:chunks=4", 40_000),
    ("alltoall:direct:gpus=4", 40_000),
    ("allreduce:ring:gpus=4:tbs=2:chunks=2", 64_000),
    ("allgather:ring:gpus=3", 30_000),
]


@pytest.mark.parametrize(("name", "size"), BUILTINS)
@pytest.mark.parametrize("proto", ["LL", "LL128", "packet"])
def test_every_data_byte_arrives_under_every_protocol(name, size, proto):
    plan = builtin_plan(f"{name}:proto={proto}")
    placement, lowered, trace = run(plan, size, "NAP+NAR")
    assert_conserved(plan, placement, lowered, trace)
    assert int(trace.step_end.max()) >= lower_bound_ps(lowered)


@pytest.mark.parametrize(
    "fixture",
    ["ag-1k-512k.xml", "r48ll.xml", "custom_allreduce.xml", "allreduce_packet.json"],
)
@pytest.mark.parametrize("convert", [None, "Simple", "LL", "LL128"])
def test_fixture_plans_conserve_bytes_under_every_protocol(fixture, convert):
    path = FIXTURES / fixture
    plan = load_mscclpp(path) if fixture.endswith(".json") else load_msccl_xml(path)
    if convert is not None:
        plan = plan.with_protocol(convert)
    placement, lowered, trace = run(plan, 48 * 1024, "UA")
    assert_conserved(plan, placement, lowered, trace)
    assert int(trace.step_end.max()) >= lower_bound_ps(lowered)


def test_compiled_and_uncompiled_engines_agree_on_data_polled_plans():
    code = (
        "from nunasim.io.presets import load_preset;"
        "from nunasim.collectives.builtins import builtin_plan;"
        "from nunasim.io.mscclpp import load_mscclpp;"
        "from nunasim.scenario import Scenario;"
        "pod = load_preset('nextgen-4die').pod;"
        f"plans = [builtin_plan('allreduce:ring:gpus=3:proto=LL'),"
        f" builtin_plan('allgather:direct:gpus=3:proto=LL128'),"
        f" load_mscclpp({str(FIXTURES / 'allreduce_packet.json')!r})];"
        "rs = [Scenario(pod.with_sockets(p.ngpus), p, 12288, 'NAP+NAR').run() for p in plans];"
        "print([(r.completion_ps, r.events, int(r.stores['latency_ps'].sum())) for r in rs])"
    )
    compiled, uncompiled = outputs_compiled_and_not(code)
    assert compiled == uncompiled


@settings(max_examples=40, deadline=None)
@given(
    sockets(max_width=8, max_height=4),
    st.sampled_from(BUILTIN_ALGORITHMS),
    st.sampled_from(list(Protocol)),
    st.integers(2, 4),
    st.integers(1, 2),
    st.integers(1, 3000),
    st.sampled_from(["UA", "NUMA", "NAP+NAR"]),
    st.integers(0, 3),
)
def test_random_protocol_scenarios_finish_conserve_and_respect_the_bound(
    socket, algorithm, protocol, gpus, chunks, chunk, config, seed
):
    """Every protocol on random floorplans, small built-ins (one or two chunks per item,
    so threadblocks run several sends in a row) and chunk sizes (not whole lines)."""
    pod = Pod(socket, gpus, 300_000, 50e9)
    plan = builtin_plan(f"{algorithm}:gpus={gpus}:chunks={chunks}:proto={protocol}")
    size = plan.chunks_per_size * chunk
    placement = place(plan, size, pod, config, max(socket.valid_granularities), seed)
    lowered = lower(pod, plan, placement)
    trace = simulate(lowered)
    assert_conserved(plan, placement, lowered, trace)
    assert int(trace.step_end.max()) >= lower_bound_ps(lowered)
    assert ((lowered.msg_kind == FLAG).sum() == 0) == protocol.data_polled
    assert_steps_start_when_their_predecessor_ends(plan, trace)


def assert_steps_start_when_their_predecessor_ends(plan, trace):
    """A step that waits only for the step before it starts the moment that one ends (also
    when that one ended by issuing its last data-polled line, with no event of its own)."""
    for i, (sid, step) in enumerate(plan.steps()):
        if sid.step and not step.deps and not step.recvs:
            assert trace.step_begin[i] == trace.step_end[i - 1], sid
