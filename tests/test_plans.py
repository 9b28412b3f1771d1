"""Built-in plans, the checker, and access sets."""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from nunasim.collectives.access import access_sets
from nunasim.collectives.builtins import ALGORITHMS, builtin_plan
from nunasim.collectives.check import PlanError, check_plan
from nunasim.collectives.plan import Buffer, Chunks, Collective, StepId
from nunasim.errors import ConfigError
from plan_mutations import drop_dep, drop_transfer, move_read, still_ordered

GPU_COUNTS = [2, 3, 4, 5, 8, 16, 64]


def _cases():
    for name in ALGORITHMS:
        for gpus in GPU_COUNTS:
            if name == "allreduce:onepass":
                yield f"{name}:gpus={gpus}:chunks={min(gpus, 8)}"
                continue
            yield f"{name}:gpus={gpus}"
            if name.endswith(":direct"):
                yield f"{name}:gpus={gpus}:tbs={2 * (gpus - 1)}"
                yield f"{name}:gpus={gpus}:tbs=1:chunks=2"
            else:
                yield f"{name}:gpus={gpus}:tbs=4:chunks=4"


@pytest.mark.parametrize("name", list(_cases()))
def test_every_builtin_is_proved(name):
    plan = builtin_plan(name)
    report = check_plan(plan)
    assert report.steps == plan.step_count > 0
    assert plan.ngpus == int(name.split("gpus=")[1].split(":")[0])


def test_out_of_place_allgather():
    check_plan(builtin_plan("allgather:direct:gpus=8:inplace=0"))


def test_paper_threadblock_counts():
    # Fig. 13: 7 and 1,008 threadblocks per GPU for the 8-GPU 1 MB All-Gather.
    low = builtin_plan("allgather:direct:gpus=8")
    assert low.threadblocks_per_gpu == (7,) * 8
    high = builtin_plan("allgather:direct:gpus=8:tbs=1008")
    assert high.threadblocks_per_gpu == (1008,) * 8
    check_plan(high)


def test_chunk_bytes():
    plan = builtin_plan("allgather:direct:gpus=8")
    assert plan.chunks_per_size == 8
    assert plan.chunk_bytes(1_000_000) == 125_000
    assert plan.chunk_bytes(100_000) == 12_500
    assert builtin_plan("allgather:direct:gpus=3").chunk_bytes(100) == 34  # padded up
    with pytest.raises(ConfigError, match="must be positive"):
        plan.chunk_bytes(0)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("allgather:direct", "give the number of GPUs"),
        ("allgather:direct:gpus=1", "at least 2 GPUs"),
        ("allgather:tree:gpus=8", "unknown built-in plan"),
        ("allgather:direct:gpus=8:speed=3", "unknown parameter"),
        ("allgather:direct:gpus=eight", "not a whole number"),
        ("allgather:direct:gpus=4:tbs=7:chunks=2", r"only 6 \(peer, chunk\) items"),
        ("allgather:ring:gpus=4:tbs=3:chunks=2", "at least 3 chunks"),
        ("allreduce:direct:gpus=4:inplace=0", "unknown parameter"),
    ],
)
def test_bad_builtin_names(name, words):
    with pytest.raises(ConfigError, match=words):
        builtin_plan(name)


def test_figure_7_access_sets():
    """The paper's Figure 7: a two-GPU All-Gather whose threadblocks fall into two disjoint
    logical groups, one per NAR domain. Each GPU has two threadblocks; threadblock j of
    GPU g stores chunk j of its block into the peer's output and waits for the peer's chunk j.
    """
    plan = builtin_plan("allgather:direct:gpus=2:tbs=2:chunks=2")
    sets = access_sets(plan)
    assert sets[(0, 0)].local_reads == {(0, "o", 0)}
    assert sets[(0, 0)].remote_writes == {(0, "o", 1)}
    assert sets[(0, 0)].local_writes == {(2, "o", 0)}
    assert sets[(0, 1)].local_reads == {(1, "o", 0)}
    assert sets[(0, 1)].remote_writes == {(1, "o", 1)}
    assert sets[(0, 1)].local_writes == {(3, "o", 0)}
    assert sets[(1, 0)].local_reads == {(2, "o", 1)}
    assert sets[(1, 0)].remote_writes == {(2, "o", 0)}
    assert sets[(1, 0)].local_writes == {(0, "o", 1)}
    assert sets[(1, 1)].chunks == {(3, "o", 1), (3, "o", 0), (1, "o", 1)}
    assert all(not s.remote_reads for s in sets.values())
    # Two groups, disjoint in chunks: {tb 0 of both GPUs} and {tb 1 of both GPUs}.
    group_a = sets[(0, 0)].chunks | sets[(1, 0)].chunks
    group_b = sets[(0, 1)].chunks | sets[(1, 1)].chunks
    assert sets[(0, 0)].chunks & sets[(1, 0)].chunks
    assert sets[(0, 1)].chunks & sets[(1, 1)].chunks
    assert not group_a & group_b


def test_access_sets_cover_every_moved_chunk():
    plan = builtin_plan("allreduce:direct:gpus=4:tbs=6")
    sets = access_sets(plan)
    written = set().union(*(s.local_writes | s.remote_writes for s in sets.values()))
    for transfer in plan.transfers:
        for k in transfer.dst.indices():
            assert (k, str(transfer.dst.buffer), transfer.dst_gpu) in written


# --- corrupted plans are rejected -----------------------------------------------------------

CORRUPTIBLE = [
    "allgather:direct:gpus=4:tbs=6",
    "reducescatter:direct:gpus=4:tbs=3:chunks=2",
    "allreduce:direct:gpus=3",
    "allreduce:onepass:gpus=3:chunks=3",
    "alltoall:direct:gpus=4",
    "allgather:ring:gpus=4:tbs=2:chunks=2",
    "allreduce:ring:gpus=4",
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CORRUPTIBLE), st.data())
def test_dropped_transfer_is_rejected(name, data):
    plan = builtin_plan(name)
    x = data.draw(st.integers(0, len(plan.transfers) - 1))
    with pytest.raises(PlanError):
        check_plan(drop_transfer(plan, x))


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(CORRUPTIBLE), st.data())
def test_moved_chunk_is_rejected(name, data):
    plan = builtin_plan(name)
    readers = [sid for sid, step in plan.steps() if step.reads]
    sid = data.draw(st.sampled_from(readers))
    step = plan.step(sid)
    position = data.draw(st.integers(0, len(step.reads) - 1))
    old = step.reads[position]
    size = plan.gpus[sid.gpu].buffer_chunks(old.buffer)
    index = data.draw(st.integers(0, size - old.count).filter(lambda i: i != old.index))
    with pytest.raises(PlanError) as info:
        check_plan(move_read(plan, sid, position, index))
    assert "gpu" in str(info.value)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CORRUPTIBLE[1:4]), st.data())
def test_broken_dependency_is_rejected(name, data):
    plan = builtin_plan(name)
    with_deps = [sid for sid, step in plan.steps() if step.deps]
    sid = data.draw(st.sampled_from(with_deps))
    position = data.draw(st.integers(0, len(plan.step(sid).deps) - 1))
    tb, s = plan.step(sid).deps[position]
    broken = drop_dep(plan, sid, position)
    assume(not still_ordered(broken, sid, StepId(sid.gpu, tb, s)))
    with pytest.raises(PlanError, match="nothing ordering the two"):
        check_plan(broken)


def test_deadlock_is_found_and_described():
    plan = builtin_plan("allreduce:ring:gpus=3")
    # Make the first step of gpu 0 wait for the last step of its own threadblock.
    from plan_mutations import _with_step

    last = len(plan.gpus[0].threadblocks[0].steps) - 1
    first = plan.step(StepId(0, 0, 0))
    from dataclasses import replace

    broken = _with_step(plan, StepId(0, 0, 0), replace(first, deps=((0, last),)))
    with pytest.raises(PlanError, match="deadlock") as info:
        check_plan(broken)
    assert "which waits for" in str(info.value)


def test_structural_errors():
    plan = builtin_plan("allgather:direct:gpus=2")
    from dataclasses import replace

    from plan_mutations import _with_step

    sid = StepId(0, 0, 0)
    bad = _with_step(plan, sid, replace(plan.step(sid), reads=(Chunks(Buffer.OUTPUT, 5),)))
    with pytest.raises(PlanError, match="outside its 2-chunk output buffer"):
        check_plan(bad)
    bad = _with_step(plan, sid, replace(plan.step(sid), deps=((0, 9),)))
    with pytest.raises(PlanError, match="does not exist"):
        check_plan(bad)
    assert replace(plan, collective=Collective.ALLREDUCE).collective == "allreduce"


def test_builtin_plans_are_built_once_per_recipe():
    # A sweep's searches share the plan object, and with it the work done on it.
    plan = builtin_plan("allgather", gpus=8, tbs=14)
    assert builtin_plan("allgather:direct:gpus=8:tbs=14") is plan
    assert builtin_plan("allgather", gpus=8, tbs=28) is not plan
    assert builtin_plan("allgather", gpus=8, tbs=14, inplace=0) is not plan
    assert builtin_plan("allgather:proto=LL", gpus=8, tbs=14).transfers[0].protocol != (
        plan.transfers[0].protocol
    )


def test_built_plans_kept_are_bounded_by_threadblocks(monkeypatch):
    from nunasim.collectives import builtins

    monkeypatch.setattr(builtins, "PLAN_MEMO_THREADBLOCKS", 3 * 56)
    monkeypatch.setattr(builtins, "_BUILT", builtins.OrderedDict())
    first = builtin_plan("allgather", gpus=4, tbs=6)  # 24 threadblocks
    second = builtin_plan("allgather", gpus=8, tbs=14)  # 112
    assert builtin_plan("allgather", gpus=4, tbs=6) is first  # 136 kept, and used last
    builtin_plan("allgather", gpus=8, tbs=7)  # 56 more: 192, the least recently used goes
    assert sum(sum(p.threadblocks_per_gpu) for p in builtins._BUILT.values()) <= 3 * 56
    assert builtin_plan("allgather", gpus=4, tbs=6) is first
    assert builtin_plan("allgather", gpus=8, tbs=14) is not second  # built again
    monkeypatch.setattr(builtins, "PLAN_MEMO_THREADBLOCKS", 10)
    assert builtin_plan("allgather", gpus=8, tbs=21) is not builtin_plan(
        "allgather", gpus=8, tbs=21
    )


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(sorted(ALGORITHMS)),
    st.integers(2, 6),
    st.integers(1, 6),
    st.integers(1, 4),
)
def test_the_size_estimate_bounds_every_built_in(key, gpus, tbs, chunks):
    from nunasim.collectives.plan_admission import builtin_steps

    try:
        plan = builtin_plan(f"{key}:gpus={gpus}:tbs={tbs}:chunks={chunks}")
    except ConfigError:
        return  # a combination the algorithm refuses (ring channels, too few items)
    steps = sum(len(tb.steps) for g in plan.gpus for tb in g.threadblocks)
    bound = builtin_steps(ALGORITHMS[key].rounds, gpus, tbs, chunks)
    assert steps <= bound <= 4 * steps + 4 * gpus * tbs
