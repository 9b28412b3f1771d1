"""Execution traces: the fixtures' collective counts and sizes, and located errors."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.cli.main import main
from nunasim.errors import ConfigError
from nunasim.io.traces import CHAKRA_COLLECTIVES, read_trace

TRACES = Path(__file__).parent / "fixtures" / "traces"


def test_astra_sim_all_to_all_microbenchmark():
    found = read_trace(TRACES / "all_to_all.0.et")
    assert [(c.kind, c.size) for c in found] == [("alltoall", 1048576)]


def test_msccl_converted_ring_allreduce_has_send_and_recv_nodes():
    found = read_trace(TRACES / "custom_allreduce.0.et")
    assert Counter(c.kind for c in found) == {"send": 14, "recv": 14}
    assert {c.size for c in found} == {131072}  # 1 MiB over 8 ranks


def test_dlrm_pytorch_trace_output_buffers():
    found = read_trace(TRACES / "dlrm_eg_0.json")
    assert Counter(c.kind for c in found) == {"alltoall": 5, "allreduce": 3}
    # output tensors' numel x itemsize (all_to_allv 1103 receives 768 floats, sends 3392)
    assert [c.size for c in found] == [24576, 192, 1536, 3072, 1576964, 24576, 448, 907840]


def test_resnet_gzipped_trace():
    found = read_trace(TRACES / "resnet_2gpu_et.json.gz")
    assert Counter(c.kind for c in found) == {"allreduce": 15, "broadcast": 6}
    allreduce = sorted({c.size for c in found if c.kind == "allreduce"})
    # 5 distinct float32 sizes, 2049000 ... 7875584 elements
    assert allreduce == [4 * n for n in (2049000, 2431040, 6563840, 6637568, 7875584)]


def test_a_truncated_chakra_trace_is_refused_with_its_place(tmp_path):
    data = (TRACES / "custom_allreduce.0.et").read_bytes()
    bad = tmp_path / "cut.et"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ConfigError, match=r"cut\.et: byte \d+: message of \d+ bytes runs past"):
        read_trace(bad)


def test_a_chakra_node_with_a_bad_comm_type_is_refused(tmp_path):
    # metadata (empty), then a COMM_COLL_NODE (type 7) with comm_type 42 and comm_size 8
    def attr(name: bytes, number: int, value: int) -> bytes:
        body = b"\x0a" + bytes([len(name)]) + name + bytes([number << 3]) + bytes([value])
        return b"\x52" + bytes([len(body)]) + body

    node = b"\x08\x05\x18\x07" + attr(b"comm_type", 9, 42) + attr(b"comm_size", 9, 8)
    bad = tmp_path / "bad.et"
    bad.write_bytes(b"\x00" + bytes([len(node)]) + node)
    with pytest.raises(ConfigError, match=r"bad\.et: node 5: unknown comm_type 42"):
        read_trace(bad)


def test_a_pytorch_trace_without_nodes_is_refused(tmp_path):
    bad = tmp_path / "t.json.gz"
    bad.write_bytes(gzip.compress(b'{"schema": "1.0.1"}'))
    with pytest.raises(ConfigError, match="expected an object with a 'nodes' list"):
        read_trace(bad)


def test_trace_sizes_command_prints_and_plots(tmp_path, capsys):
    out = tmp_path / "cdf.png"
    assert main(["trace", "sizes", str(TRACES / "dlrm_eg_0.json"), "--plot", str(out)]) == 0
    text = capsys.readouterr().out
    assert "dlrm_eg_0.json  alltoall: 5 collectives" in text
    assert out.stat().st_size > 0


def test_trace_sizes_command_exits_2_on_a_bad_file(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    assert main(["trace", "sizes", str(bad)]) == 2
    assert "x.json: line 1, column 2: not valid JSON" in capsys.readouterr().err


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _delimited(number: int, body: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(body)) + body


def _int_attr(name: str, value: int, field: int = 9) -> bytes:
    return _delimited(10, _delimited(1, name.encode()) + _varint(field << 3) + _varint(value))


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(
        st.tuples(
            st.sampled_from([4, 5, 6, 7]),  # COMP, SEND, RECV, COLL
            st.integers(0, 9),  # comm_type
            st.integers(0, 1 << 40),  # comm_size
            st.booleans(),  # is_cpu_op
            st.sampled_from([9, 13]),  # int64_val or uint64_val: producers differ
        ),
        max_size=12,
    )
)
def test_chakra_reader_round_trips_what_a_writer_encodes(nodes, tmp_path_factory):
    blob = bytearray()
    metadata = _delimited(1, b"0.0.4")
    blob += _varint(len(metadata)) + metadata
    expected = []
    for node_id, (node_type, comm, size, cpu, field) in enumerate(nodes, start=1):
        body = _varint(1 << 3) + _varint(node_id) + _varint(3 << 3) + _varint(node_type)
        body += _delimited(2, b"node")
        body += _int_attr("comm_type", comm, field) + _int_attr("comm_size", size, field)
        body += _int_attr("is_cpu_op", int(cpu), 27)
        blob += _varint(len(body)) + body
        if node_type != 4 and not cpu:
            kind = {5: "send", 6: "recv"}.get(node_type) or CHAKRA_COLLECTIVES[comm]
            expected.append((kind, size, node_id))
    path = tmp_path_factory.mktemp("et") / "t.et"
    path.write_bytes(bytes(blob))
    assert [(c.kind, c.size, c.node) for c in read_trace(path)] == expected
