"""The paper's orderings at 8 GPUs (section 6.1): NAP+NAR beats UA for 100 kB and 1 MB
All-Gather, All-Reduce and All-to-All, and UA+NAR beats UA; each configuration with its
best threadblock count, as in the paper."""

import pytest

from nunasim.experiments.microbench import speedup_table
from nunasim.io.presets import load_preset

PRESET = load_preset("nextgen-4die")


@pytest.mark.parametrize("collective", ["allgather", "allreduce", "alltoall"])
@pytest.mark.parametrize("size", [100_000, 1_000_000])
def test_nap_nar_and_ua_nar_beat_ua(collective, size):
    table = speedup_table(
        PRESET, [collective], [size], [8], ["UA+NAR", "NAP+NAR"], tbs_per_peer=(1, 2, 4)
    )
    speedup = table.set_index("config")["speedup_vs_ua"]
    assert speedup["NAP+NAR"] > 1.0
    assert speedup["UA+NAR"] > 1.0
