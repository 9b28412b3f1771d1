"""The finished points the repository ships (``reproduction/cache``: a result cache the
figures' grids were run into, over several sessions) are this code's: the cheapest of
them are found under the keys the current code computes and come out the same when run
again. When a change alters the model, these fail until the shipped points are run again
or removed."""

from pathlib import Path

import pytest

from nunasim.experiments.cache import ENTRY_SUFFIX, ResultCache, point_key
from nunasim.experiments.figures import fig9
from nunasim.experiments.sweep import TIMING_COLUMNS, grid_points, run_points
from nunasim.io.presets import load_preset

SHIPPED = Path(__file__).resolve().parent.parent / "reproduction" / "cache"
PRESET = load_preset("nextgen-4die")

# Fig. 9's cheapest cell: All-Gather, 100 kB, 2 GPUs, the eight configurations, searched.
CHEAP = {**fig9.grid(quick=False), "collective": "allgather", "size": "100kB", "gpus": 2}


def test_the_shipped_entries_are_whole():
    cache = ResultCache(SHIPPED)
    entries = cache.entries()
    assert entries, f"no shipped points in {SHIPPED}"
    for path in entries:
        row = cache.get(path.name.removesuffix(ENTRY_SUFFIX))
        assert row is not None, path
        assert row["completion_ps"] > 0 and row["point_s"] > 0, path


@pytest.mark.parametrize("point", grid_points(CHEAP), ids=lambda p: str(p.configuration))
def test_a_shipped_point_is_what_this_code_computes(point):
    stored = ResultCache(SHIPPED).get(point_key(point, PRESET))
    assert stored is not None, "not shipped under this code's key: run the figures again"
    fresh = run_points([point], PRESET, cache=None, workers=1).iloc[0].to_dict()
    for column in TIMING_COLUMNS:
        stored.pop(column, None)
        fresh.pop(column, None)
    assert fresh == pytest.approx(stored)
