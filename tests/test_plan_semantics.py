"""Plan semantics as the collective libraries execute them: MSCCL's ``hasdep``, MSCCL++'s
fused multi-destination puts, what ``bytes_delivered`` counts, and that every command
proves a plan before it places or runs it."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import nunasim.collectives.check as check
from cli_run import run
from nunasim.collectives.builtins import builtin_plan
from nunasim.collectives.check import PlanError, check_plan, prove_once
from nunasim.collectives.plan import Buffer, Chunks, StepId
from nunasim.engine.lowering.lower import lower
from nunasim.engine.lowering.messages import READ, STORE, WRITE
from nunasim.engine.packet.engine import simulate
from nunasim.errors import ConfigError
from nunasim.io.msccl import parse_msccl_xml
from nunasim.io.mscclpp import load_mscclpp, parse_mscclpp
from nunasim.io.presets import load_preset
from nunasim.policies.place import place
from nunasim.scenario import Scenario

FIXTURES = Path(__file__).parent / "fixtures" / "plans"
POD = load_preset("nextgen-4die").pod


# --- MSCCL hasdep ---------------------------------------------------------------------------

# An out-of-place All-Gather on 2 GPUs, derived by hand. On each GPU, tb 0 copies the
# GPU's input into its own output block; tb 1 sends that block to the peer once tb 0 step 0
# is done (depid="0" deps="0"); tb 2 receives the peer's block. {COPY} and {RECV} are the
# hasdep flags of the copies (waited on) and of the receives (nobody waits on them).
HASDEP_XML = """<algo name="hasdep" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2"
    coll="allgather" inplace="0" outofplace="1">
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="1">
    <tb id="0" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1"
        depid="-1" deps="-1" hasdep="{COPY}"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1"
        depid="-1" deps="-1" hasdep="{LATER}"/>
    </tb>
    <tb id="1" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1"
        depid="0" deps="0" hasdep="0"/>
    </tb>
    <tb id="2" send="-1" recv="1" chan="0">
      <step s="0" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1"
        depid="-1" deps="-1" hasdep="{RECV}"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="1">
    <tb id="0" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1"
        depid="-1" deps="-1" hasdep="{COPY}"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1"
        depid="-1" deps="-1" hasdep="{LATER}"/>
    </tb>
    <tb id="1" send="0" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1"
        depid="0" deps="0" hasdep="0"/>
    </tb>
    <tb id="2" send="-1" recv="0" chan="0">
      <step s="0" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1"
        depid="-1" deps="-1" hasdep="{RECV}"/>
    </tb>
  </gpu>
</algo>
"""


def hasdep_xml(copy: int, later: int = 0, recv: int = 0) -> str:
    return (
        HASDEP_XML.replace("{COPY}", str(copy))
        .replace("{LATER}", str(later))
        .replace("{RECV}", str(recv))
    )


def test_waiting_on_a_step_without_hasdep_is_a_deadlock(tmp_path, capsys):
    path = tmp_path / "nohasdep.xml"
    path.write_text(hasdep_xml(copy=0))
    code, out, err = run(capsys, "plan", "check", path)
    assert code == 2 and out == ""
    assert f"{path}: gpu 0 tb 1 step 0: deadlock: waits for gpu 0 tb 0 step 0 (cpy)" in err
    assert 'lacks hasdep="1"' in err
    assert "Traceback" not in err


def test_the_same_plan_with_hasdep_is_proved(tmp_path, capsys):
    path = tmp_path / "hasdep.xml"
    path.write_text(hasdep_xml(copy=1))
    code, out, _ = run(capsys, "plan", "check", path)
    assert code == 0 and out.startswith("proved: hasdep implements allgather on 2 GPUs")
    plan = parse_msccl_xml(hasdep_xml(copy=1), "hasdep.xml")
    assert plan.step(StepId(0, 0, 0)).signals and not plan.step(StepId(0, 1, 0)).signals
    assert plan.signaller(0, (0, 0)) == StepId(0, 0, 0)
    assert not plan.notes or all("hasdep" not in note for note in plan.notes)


def test_a_later_signalling_step_releases_the_wait():
    """The executor's flag only grows: a later hasdep="1" step of the threadblock publishes
    a step number past the one waited for, and that releases the waiter."""
    plan = parse_msccl_xml(hasdep_xml(copy=0, later=1), "later.xml")
    assert plan.signaller(0, (0, 0)) == StepId(0, 0, 1)
    check_plan(plan)
    placement = place(plan, 4096, POD.with_sockets(2), "UA")
    lowered = lower(POD.with_sockets(2), plan, placement)
    # gpu 0's steps in order: tb 0 steps 0 and 1, tb 1 step 0, tb 2 step 0.
    released_by = lowered.succ[lowered.succ_start[1] : lowered.succ_start[2]].tolist()
    assert released_by == [2]
    assert 2 not in lowered.succ[lowered.succ_start[0] : lowered.succ_start[1]].tolist()
    trace = simulate(lowered)
    assert trace.step_begin[2] >= trace.step_end[1] > trace.step_end[0]


def test_the_engine_agrees_a_wait_nothing_releases_never_ends():
    plan = parse_msccl_xml(hasdep_xml(copy=0), "nohasdep.xml")
    pod = POD.with_sockets(2)
    with pytest.raises(ConfigError, match="would never finish") as info:
        lower(pod, plan, place(plan, 4096, pod, "UA"))
    assert info.value.where == "gpu 0 tb 1 step 0"
    with pytest.raises(PlanError, match="deadlock"):
        Scenario(pod, plan, 4096, "UA").run()


def test_hasdep_on_a_step_nobody_waits_on_is_a_note():
    plan = parse_msccl_xml(hasdep_xml(copy=1, recv=1), "extra.xml")
    check_plan(plan)
    (note,) = [n for n in plan.notes if "hasdep" in n]
    assert note.startswith('2 step(s) marked hasdep="1" that no step waits on')
    assert note.endswith("gpu 0 tb 2 step 0")


# --- MSCCL++ fused multi-destination puts -----------------------------------------------------


def fused_alltoall(swap: bool = False, channel: str = "memory") -> dict:
    """An All-to-All on 3 GPUs: each GPU copies its own block, then one fused put sends
    input block p to peer p's output block g for both peers (two sources, two
    destinations in one op), signals both peers and waits for both. Over port channels
    the put is a ``pws``, whose stores signal their channels themselves."""

    def gpu(g: int) -> dict:
        peers = [p for p in range(3) if p != g]
        sources = list(reversed(peers)) if swap else peers
        copy = {
            "name": "copy",
            "src_buff": [{"type": "i", "index": g, "size": 1}],
            "dst_buff": [{"type": "o", "index": g, "size": 1}],
        }
        put = {
            "name": "put" if channel == "memory" else "pws",
            "src_buff": [{"type": "i", "index": p, "size": 1} for p in sources],
            "dst_buff": [{"buffer_id": k, "index": g, "size": 1} for k in range(2)],
            "channel_type": channel,
            "channel_ids": [0, 1],
        }
        signal = {"name": "signal", "channel_type": channel, "channel_ids": [0, 1]}
        wait = {"name": "wait", "channel_type": channel, "channel_ids": [0, 1]}
        ops = [copy, put, signal, wait] if channel == "memory" else [copy, put, wait]
        return {
            "id": g,
            "input_chunks": 3,
            "output_chunks": 3,
            "scratch_chunks": 0,
            "threadblocks": [
                {
                    "id": 0,
                    "ops": ops,
                    "channels": [{"channel_type": channel, "channel_ids": [0, 1]}],
                    "remote_buffer_refs": [
                        {"access_channel_type": channel, "remote_buffer_ids": [0, 1]}
                    ],
                }
            ],
            "channels": [{"channel_type": channel, "connected_to": peers}],
            "remote_buffers": [
                {"rank": p, "type": "o", "access_channel_types": [channel]} for p in peers
            ],
            "semaphores": [],
        }

    return {
        "name": "fused-put",
        "collective": "alltoall",
        "protocol": "Simple",
        "inplace": False,
        "gpus": [gpu(g) for g in range(3)],
    }


def test_fused_put_is_one_step_with_a_store_per_pair():
    plan = parse_mscclpp(json.dumps(fused_alltoall()), "fused.json")
    check_plan(plan)
    put = plan.step(StepId(1, 0, 1))
    assert put.op == "put" and put.reads == () and put.writes == ()
    stores = [plan.transfers[x] for x in put.sends]
    assert [(t.source, t.dst_gpu, t.dst) for t in stores] == [
        (Chunks(Buffer.INPUT, 0), 0, Chunks(Buffer.OUTPUT, 1)),
        (Chunks(Buffer.INPUT, 2), 2, Chunks(Buffer.OUTPUT, 1)),
    ]
    assert all(t.receiver is None for t in stores)  # plain puts; the signals follow


def test_fused_put_with_signal_over_port_channels_is_received_by_the_waits():
    plan = parse_mscclpp(json.dumps(fused_alltoall(channel="port")), "fused-port.json")
    check_plan(plan)
    stores = [plan.transfers[x] for x in plan.step(StepId(1, 0, 1)).sends]
    assert [(t.source, t.dst_gpu, t.dst, t.receiver) for t in stores] == [
        (Chunks(Buffer.INPUT, 0), 0, Chunks(Buffer.OUTPUT, 1), StepId(0, 0, 2)),
        (Chunks(Buffer.INPUT, 2), 2, Chunks(Buffer.OUTPUT, 1), StepId(2, 0, 2)),
    ]
    result = Scenario(POD.with_sockets(3), plan, 3 * 4096, "UA").run()
    assert result.bytes_delivered == 3 * 3 * 4096


def test_fused_put_with_crossed_sources_fails_the_postcondition():
    plan = parse_mscclpp(json.dumps(fused_alltoall(swap=True)), "crossed.json")
    with pytest.raises(PlanError, match="ends holding"):
        check_plan(plan)


def test_fused_put_delivers_each_source_to_its_destination():
    plan = parse_mscclpp(json.dumps(fused_alltoall()), "fused.json")
    pod = POD.with_sockets(3)
    placement = place(plan, 3 * 4096, pod, "NAP+NAR")
    lowered = lower(pod, plan, placement)
    trace = simulate(lowered)
    assert (trace.msg_done >= 0).all() and (trace.step_end >= 0).all()

    def lines(gpu, chunks):
        addrs = placement.line_addresses(gpu, chunks.buffer, chunks.index, chunks.count)
        return [(gpu, int(a)) for a in addrs]

    # Every line operation of a fused put reads one line of its source and stores it to
    # the same line of its destination: (source line, destination line) pairs, exactly.
    expected, stored = [], []
    for transfer in plan.transfers:
        if transfer.source is None:
            continue
        src = transfer.src
        expected += zip(
            lines(src.gpu, transfer.source), lines(transfer.dst_gpu, transfer.dst), strict=True
        )
    for first, sink, end in lowered.lineop_msgs.tolist():
        kinds = lowered.msg_kind[first:end].tolist()
        if kinds != [READ, STORE]:
            continue
        src_gpu = int(
            lowered.tb_gpu[lowered.step_tb[lowered.lineop_step[lowered.msg_lineop[first]]]]
        )
        stored.append(
            (
                (src_gpu, int(lowered.msg_address[first])),
                (int(lowered.msg_dst_gpu[sink]), int(lowered.msg_address[sink])),
            )
        )
    assert len(expected) == 6 * placement.lines_per_chunk
    assert sorted(stored) == sorted(expected)
    # Every output chunk of every GPU is written exactly once: copies and fused stores.
    data = np.isin(lowered.msg_kind, [STORE, WRITE])
    delivered = sorted(
        zip(lowered.msg_dst_gpu[data].tolist(), lowered.msg_address[data].tolist(), strict=True)
    )
    outputs = [line for g in range(3) for line in lines(g, Chunks(Buffer.OUTPUT, 0, 3))]
    assert delivered == sorted(outputs)


# --- bytes delivered ------------------------------------------------------------------------


def _bytes_moved(plan, size: int, line_bytes: int) -> int:
    """From the plan alone: a line per local write, remote store and remote load."""
    lines = math.ceil(plan.chunk_bytes(size) / line_bytes)
    chunks = 0
    for _, step in plan.steps():
        for x in step.sends:
            transfer = plan.transfers[x]
            chunks += transfer.count  # a store, of the step's value or of its own source
        chunks += sum(c.count for c in step.writes)
        chunks += sum(r.chunks.count for r in step.loads)
    return chunks * lines * line_bytes


def test_bytes_delivered_counts_writes_stores_and_loads():
    plan = load_mscclpp(FIXTURES / "allreduce.json")
    size = 16 * 4096
    result = Scenario(POD.with_sockets(2), plan, size, "NAP+NAR").run()
    line = POD.socket.line_bytes
    expected = _bytes_moved(plan, size, line)
    assert result.bytes_delivered == expected
    # Each GPU reduces its half of the 16 chunks: 8 rres steps of one chunk, each loading
    # the peer's chunk, writing the sum locally and storing it back (three deliveries).
    assert expected == 2 * 8 * 3 * (4096 // line) * line
    assert result.bytes_delivered == 3 * len(result.stores) * line  # stores alone: a third


def test_bytes_delivered_of_a_fused_put():
    plan = parse_mscclpp(json.dumps(fused_alltoall()), "fused.json")
    result = Scenario(POD.with_sockets(3), plan, 3 * 4096, "UA").run()
    assert result.bytes_delivered == _bytes_moved(plan, 3 * 4096, POD.socket.line_bytes)
    assert result.bytes_delivered == 3 * 3 * 4096  # every output chunk, once


# --- every command proves its plan first ---------------------------------------------------


def _out_of_range(tmp_path: Path) -> Path:
    """custom_allreduce.xml with one offset past gpu 0's 8-chunk input buffer."""
    text = (FIXTURES / "custom_allreduce.xml").read_text()
    old = 'type="s" srcbuf="i" srcoff="7"'
    assert old in text
    path = tmp_path / "out-of-range.xml"
    path.write_text(text.replace(old, 'type="s" srcbuf="i" srcoff="70"', 1))
    return path


def _deadlocked(tmp_path: Path) -> Path:
    """A plan the importer accepts and only the checker refuses."""
    path = tmp_path / "deadlocked.xml"
    path.write_text(hasdep_xml(copy=0))
    return path


COMMANDS = {
    "plan check": lambda plan, out: ["plan", "check", plan],
    "place": lambda plan, out: ["place", plan, "--size", "64kB", "-o", out.with_suffix(".json")],
    "simulate": lambda plan, out: ["simulate", "--plan", plan, "--size", "64kB", "--stores", out],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_out_of_range_offset_is_refused_with_its_location(tmp_path, capsys, command):
    plan, out = _out_of_range(tmp_path), tmp_path / "out.csv"
    code, stdout, err = run(capsys, *COMMANDS[command](plan, out))
    assert code == 2 and stdout == ""
    assert err.startswith(f"nunasim: error: {plan}: gpu 0 tb 0 step 2: srcoff=70")
    assert "i_chunks=8" in err and "Traceback" not in err
    assert not out.exists() and not out.with_suffix(".json").exists()


@pytest.mark.parametrize("command", ["place", "simulate"])
def test_a_plan_the_checker_refuses_is_never_placed_or_run(tmp_path, capsys, command):
    plan, out = _deadlocked(tmp_path), tmp_path / "out.csv"
    code, stdout, err = run(capsys, *COMMANDS[command](plan, out))
    assert code == 2 and stdout == ""
    assert f"{plan}: gpu 0 tb 1 step 0: deadlock" in err
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_a_checker_failure_inside_the_bounds_is_refused_by_place(tmp_path, capsys):
    """An offset the importer cannot judge (inside the declared buffer, the wrong chunk)."""
    text = (FIXTURES / "custom_allreduce.xml").read_text()
    path = tmp_path / "swapped.xml"
    path.write_text(
        text.replace('type="s" srcbuf="i" srcoff="7"', 'type="s" srcbuf="i" srcoff="6"', 1)
    )
    out = tmp_path / "placement.json"
    code, _, err = run(capsys, "place", path, "-o", out)
    assert code == 2 and f"{path}: gpu" in err and "too many" in err
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_a_plan_is_proved_once_per_object(monkeypatch):
    calls = []
    real = check.check_plan
    monkeypatch.setattr(check, "check_plan", lambda plan: calls.append(plan) or real(plan))
    plan = parse_mscclpp(json.dumps(fused_alltoall()), "fused.json")
    pod = POD.with_sockets(3)
    for size in (3 * 256, 3 * 1024):
        Scenario(pod, plan, size, "UA").run()
    assert calls == [plan]
    # An equal plan built again is another object: proved again.
    again = parse_mscclpp(json.dumps(fused_alltoall()), "fused.json")
    prove_once(again)
    assert len(calls) == 2


def test_builtins_get_the_structural_checks_only(monkeypatch):
    def refuse(plan):
        raise AssertionError("a built-in was proved in full")

    monkeypatch.setattr(check, "check_plan", refuse)
    plan = builtin_plan("allgather:direct:gpus=4")
    prove_once(plan)
    broken = replace(plan, transfers=plan.transfers[:-1])  # a store nobody makes
    with pytest.raises(PlanError, match="refers to transfer"):
        prove_once(broken)
