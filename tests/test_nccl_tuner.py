"""The tuning table as NCCL's example tuner plugin reads it: what ``tune`` writes parses
back to its decisions, the ranges tile every size as the library's lookup rule does, and
nothing is written as a line the plugin would misread."""

from itertools import pairwise

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli_run import run
from nunasim.errors import ConfigError
from nunasim.experiments.cache import shipped_folder
from nunasim.io.nccl_tuner import (
    ALGORITHMS,
    COLLECTIVES,
    MAX_LINE,
    read_tuner,
    tuner_lines,
    tuner_text,
)
from nunasim.io.size_ranges import LARGEST

NAMES = ["allgather:ring", "allreduce:ring:proto=LL", "allgather", "alltoall", "reducescatter"]


def _table(choices: dict[str, list[tuple[int, int]]], gpus: int = 8) -> dict:
    """A thresholds table: per name, (from_bytes, threadblocks) ranges in increasing order."""
    collectives = {
        name: [
            {"from_bytes": low, "to_bytes": low, "configuration": "NAP+NAR", "threadblocks": tbs}
            for low, tbs in ranges
        ]
        for name, ranges in choices.items()
    }
    return {"preset": "nextgen-4die", "gpus": gpus, "collectives": collectives}


def _lookup(ranges: list[tuple[int, int]], size: int) -> int:
    """The library's rule: the last range starting at or below the size, else the first."""
    chosen = ranges[0][1]
    for low, tbs in ranges:
        if low <= size:
            chosen = tbs
    return chosen


ranges_strategy = st.lists(
    st.tuples(st.integers(1, 1 << 40), st.integers(1, 1008)), min_size=1, max_size=6
).map(lambda r: sorted({low: tbs for low, tbs in r}.items()))


@given(
    st.dictionaries(st.sampled_from(NAMES), ranges_strategy, min_size=1), st.integers(0, 1 << 41)
)
def test_lines_tile_every_size_and_pick_what_the_table_picks(choices, size):
    table = _table(choices)
    lines = tuner_lines(table)
    assert read_tuner(tuner_text(table)) == lines
    for name, ranges in choices.items():
        collective = name.split(":")[0]
        algorithm = "direct" if ":" not in name else name.split(":")[1]
        mine = [ln for ln in lines if ln.collective == collective and ln.algorithm == algorithm]
        assert mine[0].min_bytes == 0 and mine[-1].max_bytes == LARGEST
        assert all(a.max_bytes + 1 == b.min_bytes for a, b in pairwise(mine))
        hit = [ln for ln in mine if ln.min_bytes <= size <= ln.max_bytes]
        assert len(hit) == 1 and hit[0].channels == _lookup(ranges, size)
        assert hit[0].ranks == 8


@given(st.dictionaries(st.sampled_from(NAMES), ranges_strategy, min_size=1))
def test_no_line_the_plugin_would_misread(choices):
    text = tuner_text(_table(choices))
    for line in text.splitlines():
        assert len(line) <= MAX_LINE
        if line.startswith("#"):
            continue
        fields = line.split(",")
        # The plugin reads an unknown collective as allreduce and an unknown algorithm as ring.
        assert fields[0] in COLLECTIVES and fields[3] in ALGORITHMS.values()
        assert fields[4] in ("simple", "ll", "ll128") and len(fields) == 10


def test_what_nccl_cannot_run_is_commented_out_with_the_reason():
    text = tuner_text(_table({"alltoall": [(1, 14)], "allgather": [(1, 28)]}))
    assert "NCCL's tuner has no alltoall" in text and "NCCL has no direct algorithm" in text
    assert [ln.runnable for ln in read_tuner(text)] == [False, False]
    live = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert live == []


def test_a_broken_line_is_located():
    with pytest.raises(ConfigError, match=r"line 2.*fields"):
        read_tuner("# c\nallgather,0,1\n", "t.conf")
    with pytest.raises(ConfigError, match=r"line 1.*integers"):
        read_tuner("allgather,0,x,ring,simple,1,-1,8\n")


def test_tune_writes_the_tuner_table_beside_the_tuning_table(tmp_path, capsys):
    out = tmp_path / "tuning"
    code, stdout, err = run(
        capsys, "tune", "--gpus", "8", "--cache-dir", shipped_folder(), "--out", out
    )
    assert code == 0, err
    assert "nccl_tuner.conf" in stdout
    lines = read_tuner((out / "nccl_tuner.conf").read_text())
    best = pd.read_csv(out / "tuning.csv")
    assert len(best) == 6
    for row in best.itertuples():
        hit = [
            ln
            for ln in lines
            if ln.collective == row.collective and ln.min_bytes <= row.size_bytes <= ln.max_bytes
        ]
        assert len(hit) == 1, row
        assert hit[0].channels == row.threadblocks and hit[0].ranks == 8
        # the paper's direct algorithms: decisions NCCL's own algorithms cannot take
        assert not hit[0].runnable and hit[0].algorithm == "direct"
