"""MSCCL XML import: every real fixture is proved; bad files are refused precisely."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.access import access_sets
from nunasim.collectives.check import PlanError, check_plan
from nunasim.collectives.plan import Buffer, Chunks, Collective
from nunasim.errors import ConfigError
from nunasim.io.msccl import load_msccl_xml, parse_msccl_xml
from plan_mutations import drop_transfer, move_read

FIXTURES = Path(__file__).parent / "fixtures" / "plans"
XML_FIXTURES = sorted(FIXTURES.glob("*.xml"))


def test_all_ten_fixtures_are_present():
    assert len(XML_FIXTURES) == 10


@pytest.mark.parametrize("path", XML_FIXTURES, ids=[p.name for p in XML_FIXTURES])
def test_fixture_imports_and_is_proved(path):
    plan = load_msccl_xml(path)
    report = check_plan(plan)
    assert report.steps == plan.step_count
    assert plan.source == str(path)


def test_fixture_shapes():
    ag = load_msccl_xml(FIXTURES / "ag-1k-512k.xml")
    assert ag.collective == Collective.ALLGATHER and ag.inplace
    assert ag.ngpus == 8 and ag.threadblocks_per_gpu == (28,) * 8
    assert ag.chunks_per_size == 16
    assert len(ag.transfers) == 112
    ring = load_msccl_xml(FIXTURES / "allreduce_ring_Simple_gpu64_ch8_ins1.xml")
    assert ring.ngpus == 64 and ring.inplace
    # Reducing receives (rrs, rrcs) land in scratch slots the file did not have.
    assert all(g.scratch_chunks > 0 for g in ring.gpus)
    a2a = load_msccl_xml(FIXTURES / "a2a2ll.xml")
    assert not a2a.inplace and a2a.collective == Collective.ALLTOALL
    assert any("proto=LL" in note for note in a2a.notes)


def test_access_sets_match_the_notes():
    """Worked examples of the MSCCL executor's semantics, in our model."""
    ag = access_sets(load_msccl_xml(FIXTURES / "ag-1k-512k.xml"))
    # GPU 0 TB 0 receives from GPU 1 the chunk that lands in o[2] (GPU 1's block, in place).
    assert ag[(0, 0)].local_writes == {(2, "o", 0)}
    r48 = load_msccl_xml(FIXTURES / "r48ll.xml")
    sets = access_sets(r48)
    tb = sets[(0, 0)]
    assert {(0, "i", 0), (32, "i", 0)} <= tb.local_reads
    assert {(0, "i", 0), (32, "i", 0)} <= tb.local_writes
    remote_gpus = {gpu for _, _, gpu in tb.remote_writes}
    assert remote_gpus == {1}


def test_inplace_allgather_input_is_canonicalised():
    text = """<algo name="t" proto="LL" nchannels="1" nchunksperloop="2" ngpus="2"
      coll="allgather" inplace="1" outofplace="0">
      <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
        <tb id="0" send="1" recv="1" chan="0">
          <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1"
            depid="-1" deps="-1" hasdep="0"/>
          <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1"
            depid="-1" deps="-1" hasdep="0"/>
        </tb>
      </gpu>
      <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0">
        <tb id="0" send="0" recv="0" chan="0">
          <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1"
            depid="-1" deps="-1" hasdep="0"/>
          <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1"
            depid="-1" deps="-1" hasdep="0"/>
        </tb>
      </gpu>
    </algo>"""
    plan = parse_msccl_xml(text, "t.xml")
    # GPU 1's input chunk 0 is its output chunk 1.
    assert plan.gpus[1].threadblocks[0].steps[0].reads == (Chunks(Buffer.OUTPUT, 1),)
    check_plan(plan)


def _fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


BAD_FILES = [
    ("unknown op", lambda t: t.replace('type="r"', 'type="recv"', 1), "unknown step type 'recv'"),
    ("unpaired send", lambda t: t.replace('type="r"', 'type="nop"', 1), "no matching receive"),
    (
        "missing dependency target",
        lambda t: t.replace('depid="8" deps="0"', 'depid="8" deps="99"', 1),
        "depends on step 99 of tb 8, which does not exist",
    ),
    (
        "dependency on missing threadblock",
        lambda t: t.replace('depid="8"', 'depid="77"', 1),
        "depends on tb 77",
    ),
    (
        "inconsistent gpu count",
        lambda t: t.replace('ngpus="8"', 'ngpus="9"', 1),
        "ngpus=9 but the file has 8",
    ),
    (
        "unknown collective",
        lambda t: t.replace('coll="allreduce"', 'coll="gather"', 1),
        "collective 'gather' is not supported",
    ),
    ("bad number", lambda t: t.replace('cnt="1"', 'cnt="one"', 1), "is not a whole number"),
    (
        "gap in threadblock ids",
        lambda t: t.replace('<tb id="1"', '<tb id="5"', 1),
        "ids must have no gaps",
    ),
    ("send without peer", lambda t: t.replace('send="1"', 'send="-1"', 1), "needs a send peer"),
    ("not well formed", lambda t: t[: len(t) // 2], "not well-formed XML"),
]


@pytest.mark.parametrize(("what", "edit", "words"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_files_are_refused_with_location(what, edit, words):
    text = edit(_fixture_text("ap-1pass.xml"))
    with pytest.raises(ConfigError) as info:
        plan = parse_msccl_xml(text, "bad.xml")
        check_plan(plan)
    error = info.value
    assert error.source == "bad.xml"
    assert words in error.reason, str(error)


def test_unpaired_send_names_the_step():
    text = _fixture_text("custom_allreduce.xml").replace('type="rrc"', 'type="cpy"', 1)
    with pytest.raises(ConfigError) as info:
        parse_msccl_xml(text, "bad.xml")
    assert info.value.where.startswith("gpu ")
    assert "step" in info.value.where


def test_mismatched_counts_are_refused():
    text = _fixture_text("custom_allreduce.xml").replace(
        'type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1"',
        'type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="2"',
        1,
    )
    with pytest.raises(ConfigError, match="sends 2 chunks but the matching receive"):
        parse_msccl_xml(text, "bad.xml")


def test_entity_expansion_is_refused():
    bomb = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<algo name="&lol2;" ngpus="1" nchunksperloop="1" coll="allreduce" inplace="0"/>"""
    with pytest.raises(ConfigError, match="refused unsafe XML"):
        parse_msccl_xml(bomb, "bomb.xml")


def test_wrong_root_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not <algo>"):
        parse_msccl_xml("<plan/>", "x.xml")
    with pytest.raises(ConfigError, match="cannot read"):
        load_msccl_xml(tmp_path / "missing.xml")


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(["custom_allreduce.xml", "ag-1k-512k.xml", "a2a2ll.xml", "r48ll.xml"]),
    st.data(),
)
def test_corrupted_fixtures_are_rejected(name, data):
    plan = load_msccl_xml(FIXTURES / name)
    if data.draw(st.booleans()):
        x = data.draw(st.integers(0, len(plan.transfers) - 1))
        broken = drop_transfer(plan, x)
    else:
        readers = [sid for sid, step in plan.steps() if step.reads]
        sid = data.draw(st.sampled_from(readers))
        old = plan.step(sid).reads[0]
        size = plan.gpus[sid.gpu].buffer_chunks(old.buffer)
        index = data.draw(st.integers(0, size - old.count).filter(lambda i: i != old.index))
        broken = move_read(plan, sid, 0, index)
    with pytest.raises(PlanError):
        check_plan(broken)
