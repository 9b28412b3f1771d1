"""Importing MSCCL++ JSON execution plans: the real fixtures, hand-made plans for each
synchronisation rule, and every class of bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nunasim.collectives.check import PlanError, check_plan
from nunasim.collectives.plan import Buffer, Chunks, Collective, Plan, StepId
from nunasim.errors import ConfigError
from nunasim.io.mscclpp import load_mscclpp, parse_mscclpp

PLANS = Path(__file__).parent / "fixtures" / "plans"
ALLREDUCE = PLANS / "allreduce.json"
PACKET = PLANS / "allreduce_packet.json"

Doc = dict[str, Any]


def _doc(path: Path) -> Doc:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(tmp_path: Path, doc: Doc, name: str = "plan.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _ops(doc: Doc, gpu: int, tb: int) -> list[Doc]:
    return doc["gpus"][gpu]["threadblocks"][tb]["ops"]


def _transfers_from(plan: Plan, sid: StepId) -> list:
    return [plan.transfers[x] for x in plan.step(sid).sends]


def _rejected(tmp_path: Path, doc: Doc) -> str:
    """The reason import or check_plan refuses ``doc``; fails the test if both accept it."""
    try:
        check_plan(load_mscclpp(_write(tmp_path, doc)))
    except ConfigError as exc:
        return str(exc)
    pytest.fail("a corrupted plan was accepted")


# --- the real fixtures ------------------------------------------------------------------


def test_allreduce_fixture_imports_and_checks():
    plan = load_mscclpp(ALLREDUCE)
    report = check_plan(plan)
    assert plan.source == str(ALLREDUCE)
    assert (plan.name, plan.collective, plan.inplace) == ("allreduce", Collective.ALLREDUCE, True)
    assert plan.chunks_per_size == 16
    # In place: every 'o' reference folds into 'i', which is all the plan keeps.
    assert [(g.input_chunks, g.output_chunks, g.scratch_chunks) for g in plan.gpus] == [
        (16, 0, 0),
        (16, 0, 0),
    ]
    assert plan.threadblocks_per_gpu == (8, 8)
    # One step per op, named after it, so indices match the file.
    names = [op["name"] for op in _ops(_doc(ALLREDUCE), 0, 0)]
    assert [s.op for s in plan.gpus[0].threadblocks[0].steps] == names
    # 16 relaxed handshakes, 16 signals, 16 plain puts of rres.
    assert report.transfers == 48
    assert any("rlxsignal" in note for note in plan.notes)


def test_allreduce_rres_reads_reduces_and_puts():
    plan = load_mscclpp(ALLREDUCE)
    rres = plan.step(StepId(1, 2, 3))
    assert rres.op == "rres"
    assert rres.reads == (Chunks(Buffer.INPUT, 10),)
    assert [(r.gpu, r.chunks) for r in rres.loads] == [(0, Chunks(Buffer.INPUT, 10))]
    assert rres.writes == (Chunks(Buffer.INPUT, 10),)
    (put,) = _transfers_from(plan, StepId(1, 2, 3))
    assert (put.dst_gpu, put.dst, put.receiver) == (0, Chunks(Buffer.INPUT, 10), None)


def test_allreduce_signals_pair_with_the_peers_waits():
    plan = load_mscclpp(ALLREDUCE)
    for tb in range(8):
        (handshake,) = _transfers_from(plan, StepId(0, tb, 0))
        assert (handshake.dst, handshake.receiver) == (None, StepId(1, tb, 1))
        (done,) = _transfers_from(plan, StepId(0, tb, 5))
        assert (done.dst, done.receiver) == (None, StepId(1, tb, 6))
        assert plan.step(StepId(0, tb, 6)).recvs  # gpu 0's final wait hears gpu 1


def test_packet_fixture_imports_and_checks():
    plan = load_mscclpp(PACKET)
    check_plan(plan)
    assert plan.chunks_per_size == 4
    assert [(g.input_chunks, g.output_chunks, g.scratch_chunks) for g in plan.gpus] == [
        (4, 0, 4),
        (4, 0, 4),
    ]


def test_packet_fixture_gpu0_tb0_accesses_match_the_notes():
    """Notes section 4.2: (chunk, buffer, gpu) tuples of GPU 0 TB 0."""
    plan = load_mscclpp(PACKET)
    reads: set[tuple[int, str, int]] = set()
    writes: set[tuple[int, str, int]] = set()
    for s, step in enumerate(plan.gpus[0].threadblocks[0].steps):
        for chunks in step.reads:
            reads |= {(k, chunks.buffer.value, 0) for k in chunks.indices()}
        for remote in step.loads:
            reads |= {(k, remote.chunks.buffer.value, remote.gpu) for k in remote.chunks.indices()}
        for chunks in step.writes:
            writes |= {(k, chunks.buffer.value, 0) for k in chunks.indices()}
        for t in _transfers_from(plan, StepId(0, 0, s)):
            if t.dst is not None:
                writes |= {(k, t.dst.buffer.value, t.dst_gpu) for k in t.dst.indices()}
    assert reads == {(0, "i", 0), (0, "s", 0), (2, "i", 0), (3, "i", 0)}
    assert writes == {(0, "i", 0), (0, "s", 1), (1, "s", 1), (2, "s", 1)}


def test_packet_stores_are_received_by_their_readers():
    plan = load_mscclpp(PACKET)
    # gpu 0's ppkt fills gpu 1 s[0:2]; tb 0 step 1 reads s[0], tb 1 step 0 reads s[1].
    data, flag = _transfers_from(plan, StepId(0, 0, 0))
    assert (data.dst_gpu, data.dst, data.receiver) == (
        1,
        Chunks(Buffer.SCRATCH, 0, 2),
        StepId(1, 0, 1),
    )
    assert (flag.dst, flag.receiver) == (None, StepId(1, 1, 0))
    # Both respkt stores land in gpu 1 s[2:4], unpacked by gpu 1 tb 0 step 2.
    upkt = plan.step(StepId(1, 0, 2))
    senders = {plan.transfers[x].src for x in upkt.recvs}
    assert senders == {StepId(0, 0, 1), StepId(0, 1, 0)}


# --- channel pairing ----------------------------------------------------------------------


def test_kth_channel_pairs_with_the_peers_kth_channel(tmp_path):
    """gpu 1's threadblocks take their channels in reverse, so gpu 0 tb k (channel k) must
    meet gpu 1's channel k, which tb 7-k now holds."""
    doc = _doc(ALLREDUCE)
    for k, tb in enumerate(doc["gpus"][1]["threadblocks"]):
        tb["channels"][0]["channel_ids"] = [7 - k]
    plan = load_mscclpp(_write(tmp_path, doc))
    check_plan(plan)
    for k in range(8):
        (done,) = _transfers_from(plan, StepId(0, k, 5))
        assert done.receiver == StepId(1, 7 - k, 6)


def test_channels_of_several_entries_are_numbered_in_order(tmp_path):
    doc = _doc(ALLREDUCE)
    doc["gpus"][0]["channels"] = [
        {"channel_type": "memory", "connected_to": [1, 1, 1]},
        {"channel_type": "memory", "connected_to": [1, 1, 1, 1, 1]},
    ]
    plan = load_mscclpp(_write(tmp_path, doc))
    check_plan(plan)
    (done,) = _transfers_from(plan, StepId(0, 6, 5))
    assert done.receiver == StepId(1, 6, 6)


def _two_gpu(collective: str, inplace: bool, per_gpu: Callable[[int, int], Doc]) -> Doc:
    gpus = []
    for g in range(2):
        gpu = {"id": g, "scratch_chunks": 0, "semaphores": []}
        gpu.update(per_gpu(g, 1 - g))
        gpus.append(gpu)
    return {
        "name": f"{collective}-test",
        "collective": collective,
        "protocol": "Simple",
        "inplace": inplace,
        "gpus": gpus,
    }


def _allgather(inplace: bool, channel: str = "memory") -> Doc:
    """Each GPU stores its one input chunk into the peer's gathered output and signals."""

    def gpu(g: int, peer: int) -> Doc:
        ops: list[Doc] = []
        if not inplace:
            ops.append(
                {
                    "name": "copy",
                    "src_buff": [{"type": "i", "index": 0, "size": 1}],
                    "dst_buff": [{"type": "o", "index": g, "size": 1}],
                }
            )
        remote = {"buffer_id": 0, "index": g, "size": 1}
        store = {
            "src_buff": [{"type": "i", "index": 0, "size": 1}],
            "dst_buff": [remote],
            "channel_type": channel,
            "channel_ids": [0],
        }
        if channel == "port":
            ops.append({"name": "pws", **store})
        else:
            ops.append({"name": "put", **store})
            ops.append({"name": "signal", "channel_type": channel, "channel_ids": [0]})
        ops.append({"name": "wait", "channel_type": channel, "channel_ids": [0]})
        return {
            "input_chunks": 1,
            "output_chunks": 2,
            "threadblocks": [
                {
                    "id": 0,
                    "ops": ops,
                    "channels": [{"channel_type": channel, "channel_ids": [0]}],
                    "remote_buffer_refs": [
                        {"access_channel_type": channel, "remote_buffer_ids": [0]}
                    ],
                }
            ],
            "channels": [{"channel_type": channel, "connected_to": [peer]}],
            "remote_buffers": [{"rank": peer, "type": "o", "access_channel_types": [channel]}],
        }

    return _two_gpu("allgather", inplace, gpu)


def test_inplace_allgather_folds_input_into_the_gathered_output():
    plan = parse_mscclpp(json.dumps(_allgather(inplace=True)), "ag.json")
    check_plan(plan)
    assert plan.source == "ag.json"
    assert plan.chunks_per_size == 2
    assert [(g.input_chunks, g.output_chunks) for g in plan.gpus] == [(0, 2), (0, 2)]
    # gpu 1's i[0] is o[1 * N/G + 0] in place.
    assert plan.step(StepId(1, 0, 0)).reads == (Chunks(Buffer.OUTPUT, 1),)


def test_out_of_place_allgather_keeps_both_buffers():
    plan = parse_mscclpp(json.dumps(_allgather(inplace=False)), "ag.json")
    check_plan(plan)
    assert [(g.input_chunks, g.output_chunks) for g in plan.gpus] == [(1, 2), (1, 2)]


def test_port_put_with_signal_is_received_by_the_wait():
    plan = parse_mscclpp(json.dumps(_allgather(inplace=True, channel="port")), "ag.json")
    check_plan(plan)
    (store,) = _transfers_from(plan, StepId(0, 0, 0))
    assert (store.dst_gpu, store.dst, store.receiver) == (
        1,
        Chunks(Buffer.OUTPUT, 0),
        StepId(1, 0, 1),
    )


def test_memory_put_with_signal_does_not_signal(tmp_path):
    """The executor signals only on port channels, so the wait finds no signal."""
    doc = _allgather(inplace=True)
    for g in range(2):
        ops = _ops(doc, g, 0)
        ops[0]["name"] = "pws"
        del ops[1]  # the separate signal
    reason = _rejected(tmp_path, doc)
    assert "never signalled" in reason


# --- same-GPU synchronisation ----------------------------------------------------------------


def _one_gpu(threadblocks: list[list[Doc]], chunks: int = 1, semaphores: int = 0) -> Doc:
    """An out-of-place allreduce on one GPU (the result is the input) staged in scratch."""
    return {
        "name": "local",
        "collective": "allreduce",
        "protocol": "Simple",
        "inplace": False,
        "gpus": [
            {
                "id": 0,
                "input_chunks": chunks,
                "output_chunks": chunks,
                "scratch_chunks": chunks,
                "threadblocks": [
                    {"id": t, "ops": ops, "channels": []} for t, ops in enumerate(threadblocks)
                ],
                "channels": [],
                "remote_buffers": [],
                "semaphores": [{"init_value": 0} for _ in range(semaphores)],
            }
        ],
    }


def _copy(src: str, src_index: int, dst: str, dst_index: int) -> Doc:
    return {
        "name": "copy",
        "src_buff": [{"type": src, "index": src_index, "size": 1}],
        "dst_buff": [{"type": dst, "index": dst_index, "size": 1}],
    }


RELEASE = {"name": "sem_release", "semaphore_ids": [0]}
ACQUIRE = {"name": "sem_acquire", "semaphore_ids": [0]}


def test_semaphore_release_orders_acquire():
    doc = _one_gpu([[_copy("i", 0, "s", 0), RELEASE], [ACQUIRE, _copy("s", 0, "o", 0)]], 1, 1)
    plan = parse_mscclpp(json.dumps(doc), "sem.json")
    check_plan(plan)
    assert plan.step(StepId(0, 1, 0)).deps == ((0, 1),)


def test_semaphore_with_a_free_token_orders_nothing():
    doc = _one_gpu([[_copy("i", 0, "s", 0), RELEASE], [ACQUIRE, _copy("s", 0, "o", 0)]], 1, 1)
    doc["gpus"][0]["semaphores"][0]["init_value"] = 1
    plan = parse_mscclpp(json.dumps(doc), "sem.json")
    assert plan.step(StepId(0, 1, 0)).deps == ()
    with pytest.raises(PlanError):
        check_plan(plan)


def test_semaphore_released_by_several_threadblocks_orders_only_what_is_certain():
    producers = [[_copy("i", k, "s", k), RELEASE] for k in range(2)]
    both_then_copy = [ACQUIRE, ACQUIRE, _copy("s", 0, "o", 0), _copy("s", 1, "o", 1)]
    plan = parse_mscclpp(json.dumps(_one_gpu([*producers, both_then_copy], 2, 1)), "sem.json")
    check_plan(plan)
    assert plan.step(StepId(0, 2, 0)).deps == ()  # either release may have been the first
    assert sorted(plan.step(StepId(0, 2, 1)).deps) == [(0, 1), (1, 1)]
    # Copying after the first acquire is a race: that acquire may follow the other release.
    early = [ACQUIRE, _copy("s", 0, "o", 0), ACQUIRE, _copy("s", 1, "o", 1)]
    plan = parse_mscclpp(json.dumps(_one_gpu([*producers, early], 2, 1)), "sem.json")
    with pytest.raises(PlanError):
        check_plan(plan)


def test_unbalanced_semaphore_gets_a_note():
    doc = _one_gpu([[_copy("i", 0, "s", 0), RELEASE, RELEASE], [ACQUIRE, _copy("s", 0, "o", 0)]])
    doc["gpus"][0]["semaphores"] = [{"init_value": 0}]
    plan = parse_mscclpp(json.dumps(doc), "sem.json")
    check_plan(plan)
    assert any("acquired 1 and released 2" in note for note in plan.notes)


def test_acquire_that_can_never_succeed_is_refused():
    doc = _one_gpu([[_copy("i", 0, "s", 0), RELEASE], [ACQUIRE, ACQUIRE, _copy("s", 0, "o", 0)]])
    doc["gpus"][0]["semaphores"] = [{"init_value": 0}]
    with pytest.raises(ConfigError, match="can never succeed") as caught:
        parse_mscclpp(json.dumps(doc), "sem.json")
    assert caught.value.where == "gpus[0].threadblocks[1].ops[1]"


def test_local_packets_order_their_reader_after_the_writer():
    cpkt = {**_copy("i", 0, "s", 0), "name": "cpkt"}
    upkt = {**_copy("s", 0, "o", 0), "name": "upkt"}
    doc = _one_gpu([[cpkt], [upkt]])
    doc["protocol"] = "LL"
    plan = parse_mscclpp(json.dumps(doc), "pkt.json")
    check_plan(plan)
    assert plan.step(StepId(0, 1, 0)).deps == ((0, 0),)


def test_barrier_orders_the_steps_before_it():
    barrier = {"name": "barrier", "barrier_id": 0, "num_threadblocks": 2}
    doc = _one_gpu([[_copy("i", 0, "s", 0), barrier], [barrier, _copy("s", 0, "o", 0)]])
    plan = parse_mscclpp(json.dumps(doc), "barrier.json")
    check_plan(plan)
    assert plan.step(StepId(0, 1, 0)).deps == ((0, 0),)
    assert plan.step(StepId(0, 0, 1)).deps == ()  # tb 1 has nothing before its barrier


def test_barrier_with_the_wrong_threadblock_count_is_refused():
    barrier = {"name": "barrier", "barrier_id": 0, "num_threadblocks": 3}
    doc = _one_gpu([[_copy("i", 0, "s", 0), barrier], [barrier, _copy("s", 0, "o", 0)]])
    with pytest.raises(ConfigError, match="num_threadblocks is 3") as caught:
        parse_mscclpp(json.dumps(doc), "barrier.json")
    assert caught.value.where == "gpus[0].threadblocks[0].ops[1]"


def test_missing_synchronisation_fails_the_check():
    nop = {"name": "nop"}
    doc = _one_gpu([[_copy("i", 0, "s", 0), nop], [nop, _copy("s", 0, "o", 0)]])
    with pytest.raises(PlanError):
        check_plan(parse_mscclpp(json.dumps(doc), "nop.json"))


# --- bad input --------------------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        *parents, last = _steps(path)
        target = doc
        for key in parents:
            target = target[key]
        target[last] = value

    return mutate


def _delete(path: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        *parents, last = _steps(path)
        target = doc
        for key in parents:
            target = target[key]
        del target[last]

    return mutate


def _every_gpu(key: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        for gpu in doc["gpus"]:
            gpu[key] = value

    return mutate


def _steps(path: str) -> list[str | int]:
    """'gpus[0].threadblocks[3].name' -> ['gpus', 0, 'threadblocks', 3, 'name']."""
    steps: list[str | int] = []
    for part in path.replace("[", ".[").split("."):
        if part:
            steps.append(int(part[1:-1]) if part.startswith("[") else part)
    return steps


def _pipeline(doc: Doc) -> None:
    ops = _ops(doc, 0, 1)
    ops[3] = {
        "name": "pipeline",
        "iter_context": {"unit_size": 1024, "num_chunks": 1},
        "ops": [ops[3]],
    }


def _switch_channel(doc: Doc) -> None:
    doc["gpus"][0]["channels"].append(
        {
            "channel_type": "switch",
            "buffer_type": "i",
            "rank_groups": [{"size": 2, "ranks": [0, 1]}],
        }
    )


def _shared_channel(doc: Doc) -> None:
    doc["gpus"][0]["threadblocks"][1]["channels"][0]["channel_ids"] = [0]


OP = "gpus[0].threadblocks[3].ops[3]"

BAD_INPUTS = {
    "unknown op": (_set(f"{OP}.name", "frobnicate"), OP, "unknown op 'frobnicate'"),
    "missing op key": (_delete(f"{OP}.src_buff"), OP, "missing required key 'src_buff'"),
    "missing gpu key": (_delete("gpus[1].scratch_chunks"), "gpus[1]", "'scratch_chunks'"),
    "missing top key": (_delete("protocol"), "", "'protocol'"),
    "unresolvable buffer_id": (
        _set(f"{OP}.src_buff[1].buffer_id", 1),
        f"{OP}.src_buff[1]",
        "buffer_id 1 does not resolve",
    ),
    "no remote buffer refs": (
        _delete("gpus[0].threadblocks[3].remote_buffer_refs"),
        f"{OP}.src_buff[1]",
        "buffer_id 0 does not resolve",
    ),
    "remote buffer out of range": (
        _set("gpus[0].threadblocks[3].remote_buffer_refs[0].remote_buffer_ids[0]", 2),
        "gpus[0].threadblocks[3].remote_buffer_refs[0].remote_buffer_ids[0]",
        "remote buffer 2 does not exist",
    ),
    "remote buffer of another channel type": (
        _set("gpus[0].threadblocks[3].remote_buffer_refs[0].access_channel_type", "port"),
        "gpus[0].threadblocks[3].remote_buffer_refs[0].remote_buffer_ids[0]",
        "not accessible over port channels",
    ),
    "unpaired wait": (
        _delete("gpus[0].threadblocks[2].ops[5]"),
        "gpus[1].threadblocks[2].ops[6]",
        "never signalled",
    ),
    "unpaired signal": (
        _delete("gpus[1].threadblocks[4].ops[6]"),
        "gpus[0].threadblocks[4].ops[5]",
        "never waited for",
    ),
    "channel used by two threadblocks": (
        _shared_channel,
        "gpus[0].threadblocks[1].ops[1]",
        "ambiguous",
    ),
    "channel id out of range": (
        _set("gpus[0].threadblocks[0].ops[5].channel_ids", [1]),
        "gpus[0].threadblocks[0].ops[5].channel_ids[0]",
        "channel 1 does not exist",
    ),
    "pipeline": (_pipeline, "gpus[0].threadblocks[1].ops[3]", "'pipeline' ops"),
    "tbg_info": (
        _set(f"{OP}.tbg_info", {"tb_id": 0, "tbg_size": 2}),
        OP,
        "tbg_info",
    ),
    "nvls op": (_set(f"{OP}.name", "glres"), OP, "switch (NVLS multicast) op"),
    "switch channel": (
        _switch_channel,
        "gpus[0].channels[1].channel_type",
        "switch (NVLS multicast) channels",
    ),
    "gpu id": (_set("gpus[1].id", 0), "gpus[1].id", "gpus[1] has id 0"),
    "threadblock id": (
        _set("gpus[0].threadblocks[2].id", 5),
        "gpus[0].threadblocks[2].id",
        "threadblocks[2] has id 5",
    ),
    "index out of range": (
        _set(f"{OP}.src_buff[0].index", 16),
        f"{OP}.src_buff[0]",
        "outside gpu 0's 16-chunk input buffer",
    ),
    "remote index out of range": (
        _set(f"{OP}.src_buff[1]", {"buffer_id": 0, "index": 15, "size": 2}),
        f"{OP}.src_buff[1]",
        "outside gpu 1's 16-chunk input buffer",
    ),
    "inconsistent chunk counts": (
        _set("gpus[1].input_chunks", 8),
        "gpus[1].input_chunks",
        "gpus[0] has 16",
    ),
    "output chunks of an allreduce": (
        _every_gpu("output_chunks", 8),
        "gpus[0].output_chunks",
        "needs output_chunks = 16",
    ),
    "ranges of different sizes": (
        _set(f"{OP}.dst_buff[1].size", 2),
        OP,
        "different sizes",
    ),
    "memory-only op on a port channel": (
        _set(f"{OP}.channel_type", "port"),
        OP,
        "only over memory channels",
    ),
    "local where remote is needed": (
        _set(f"{OP}.dst_buff[1]", {"type": "i", "index": 3, "size": 1}),
        f"{OP}.dst_buff[1]",
        "must be a remote buffer",
    ),
    "unsupported collective": (
        _set("collective", "broadcast"),
        "collective",
        "'broadcast' is not supported",
    ),
    "legacy format": (_set("gpus[0].inputChunks", 16), "gpus[0]", "legacy MSCCL++"),
    "not a boolean": (_set("inplace", "yes"), "inplace", "expected true or false"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_names_file_and_element(tmp_path, case):
    mutate, where, reason = BAD_INPUTS[case]
    doc = _doc(ALLREDUCE)
    mutate(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(ConfigError) as caught:
        load_mscclpp(path)
    error = caught.value
    assert error.source == str(path)
    assert error.where == where
    assert reason in error.reason
    assert str(path) in str(error)


@pytest.mark.parametrize(
    "content",
    ['{"name": "x", "gpus": [', "not json at all", '{"name": "a", "name": "b"}', "[1, 2]"],
)
def test_invalid_json_is_refused(tmp_path, content):
    path = tmp_path / "broken.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_mscclpp(path)
    assert caught.value.source == str(path)
    assert "JSON" in caught.value.reason or "mapping" in caught.value.reason


def test_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "name": "x",\n  "gpus": [\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON") as caught:
        load_mscclpp(path)
    assert caught.value.where.startswith("line ")


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_mscclpp(tmp_path / "absent.json")


# --- corrupted fixtures ---------------------------------------------------------------------


def test_dropped_signal_is_rejected(tmp_path):
    doc = _doc(ALLREDUCE)
    del _ops(doc, 1, 6)[0]  # gpu 1 tb 6's rlxsignal
    assert "never signalled" in _rejected(tmp_path, doc)


def test_swapped_local_chunk_is_a_race(tmp_path):
    doc = _doc(ALLREDUCE)
    rres = _ops(doc, 0, 1)[3]
    rres["src_buff"][0]["index"] = rres["dst_buff"][0]["index"] = 0  # tb 0's chunk
    assert "nothing ordering the two" in _rejected(tmp_path, doc)


def test_swapped_remote_chunk_is_a_race(tmp_path):
    doc = _doc(ALLREDUCE)
    _ops(doc, 1, 5)[3]["src_buff"][1]["index"] = 4  # gpu 0 tb 4 writes that chunk
    assert "nothing ordering the two" in _rejected(tmp_path, doc)


def test_waiting_before_signalling_on_both_sides_deadlocks(tmp_path):
    doc = _doc(ALLREDUCE)
    for g in range(2):
        ops = _ops(doc, g, 3)
        ops[5], ops[6] = ops[6], ops[5]
    assert "deadlock" in _rejected(tmp_path, doc)


def test_swapped_packet_chunk_is_rejected(tmp_path):
    doc = _doc(PACKET)
    _ops(doc, 0, 0)[1]["src_buff"][1]["index"] = 1  # reduce the peer's chunk 1, not 0
    assert "must hold" in _rejected(tmp_path, doc)


def test_dropped_packet_store_is_rejected(tmp_path):
    doc = _doc(PACKET)
    del _ops(doc, 1, 0)[0]  # gpu 1's ppkt into gpu 0 s[0:2]
    assert "no other op writes in packet format" in _rejected(tmp_path, doc)


def test_packet_location_written_twice_is_rejected(tmp_path):
    doc = _doc(PACKET)
    _ops(doc, 1, 1)[0]["dst_buff"][1]["index"] = 2  # both respkts into gpu 0 s[2]
    assert "holds one write per run" in _rejected(tmp_path, doc)


def test_packets_outside_scratch_are_refused(tmp_path):
    doc = _doc(PACKET)
    _ops(doc, 0, 1)[1]["src_buff"][0] = {"type": "i", "index": 2, "size": 2}
    with pytest.raises(ConfigError, match="packets live in scratch") as caught:
        load_mscclpp(_write(tmp_path, doc))
    assert caught.value.where == "gpus[0].threadblocks[1].ops[1].src_buff[0]"
