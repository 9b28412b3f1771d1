"""A background GEMM beside the collective (paper section 6.6)."""

import pytest

from nunasim.cli import main
from nunasim.collectives.builtins import builtin_plan
from nunasim.errors import ConfigError
from nunasim.io.presets import load_preset
from nunasim.io.workloads import load_gemm_tile
from nunasim.scenario import Scenario

POD = load_preset("nextgen-4die").pod


@pytest.fixture(scope="module")
def small_tile(tmp_path_factory):
    path = tmp_path_factory.mktemp("gemm") / "tile.yaml"
    path.write_text("tile: {m: 64, n: 64, k: 64, dtype: bf16}\n")
    return load_gemm_tile(path)


def test_shipped_tile():
    tile = load_gemm_tile()
    assert (tile.m, tile.n, tile.k, tile.dtype) == (128, 128, 1024, "bf16")
    assert tile.input_bytes == (128 * 1024 * 2) * 2
    assert tile.output_bytes == 128 * 128 * 2
    assert tile.flops == 2 * 128 * 128 * 1024


@pytest.mark.parametrize("config", ["UA", "NAP+NAR"])
def test_more_gemm_tiles_never_speed_the_collective_up(config, small_tile):
    plan = builtin_plan("allgather:direct:gpus=4:tbs=6")
    times = []
    for tiles in (0, 20, 80, 320):
        result = Scenario(POD, plan, 200_000, config, gemm_tiles=tiles, gemm_tile=small_tile).run()
        times.append(result.completion_ps)
        assert result.completion_ps >= result.lower_bound_ps
    assert times == sorted(times)
    assert times[-1] > times[0]  # the GEMM's traffic does get in the way


def test_gemm_work_is_all_done_and_separate(small_tile):
    from nunasim.engine.lowering.lower import lower
    from nunasim.engine.lowering.messages import READ, WRITE
    from nunasim.engine.packet.engine import simulate
    from nunasim.policies.background import place_gemm
    from nunasim.policies.place import place

    plan = builtin_plan("alltoall:direct:gpus=2")
    placement = place(plan, 100_000, POD, "UA")
    background = place_gemm(placement.address_map, 2, 10, small_tile, seed=0)
    lowered = lower(POD, plan, placement, background=background)
    trace = simulate(lowered)
    assert (trace.step_end >= 0).all()
    gemm = lowered.step_background[lowered.lineop_step[lowered.msg_lineop]]
    reads = (lowered.msg_kind == READ) & gemm
    writes = (lowered.msg_kind == WRITE) & gemm
    assert reads.sum() == 2 * 10 * small_tile.input_bytes // 256
    assert writes.sum() == 2 * 10 * small_tile.output_bytes // 256
    # The GEMM's lines never share an address with the collective's.
    collective = set(lowered.msg_address[~gemm].tolist())
    assert not collective & set(lowered.msg_address[gemm].tolist())
    # Each tile computes between its loads and its stores.
    steps = lowered.step_background.nonzero()[0].reshape(-1, 3)
    for load, compute, store in steps:
        assert trace.step_end[load] <= trace.step_begin[compute]
        assert (
            trace.step_end[compute] - trace.step_begin[compute] >= lowered.step_compute_ps[compute]
        )
        assert trace.step_end[compute] <= trace.step_begin[store]


def test_bad_tile_files(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("tile: {m: 0, n: 64, k: 64, dtype: bf16}\n")
    with pytest.raises(ConfigError, match=r"tile\.m: must be at least 1"):
        load_gemm_tile(bad)
    bad.write_text("tile: {m: 8, n: 64, k: 64, dtype: int3}\n")
    with pytest.raises(ConfigError, match="unknown data type"):
        load_gemm_tile(bad)
    bad.write_text("tile: {m: 8, n: 64, k: 64, dtype: bf16, extra: 1}\n")
    with pytest.raises(ConfigError, match="unknown key 'extra'"):
        load_gemm_tile(bad)
    assert main(["simulate", "--gemm-tiles", "-1"]) == 2
