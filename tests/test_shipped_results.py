"""The finished points the package ships (``nunasim/results``, which ``reproduction/cache``
links to: a result cache the figures' grids were run into, over several sessions) are this
code's: the cheapest of them are found under the keys the current code computes and come
out the same when run again, every cache serves them read-only after its own folder, and
a point whose model changed is never served. When a change alters the model, these fail
until the shipped points are run again or removed."""

from pathlib import Path

import pytest

import nunasim.engine
import nunasim.experiments.cache as cache_module
from nunasim.engine.base import ENGINES
from nunasim.errors import ConfigError
from nunasim.experiments.cache import ENTRY_SUFFIX, ResultCache, point_key, shipped_folder
from nunasim.experiments.figures import fig9
from nunasim.experiments.sweep import TIMING_COLUMNS, grid_points, run_points
from nunasim.io.presets import load_preset

SHIPPED = Path(__file__).resolve().parent.parent / "reproduction" / "cache"
FOLDER = Path(__file__).resolve().parent.parent / "src" / "nunasim" / "results"
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


def test_the_installed_package_holds_every_shipped_point():
    """What ``pip install .`` installs (CI tests the installed package, not the source)."""
    installed = shipped_folder()
    assert installed is not None, "the package holds no results: see pyproject's package-data"
    names = {path.name for path in ResultCache(installed, shipped=False).entries()}
    assert names == {path.name for path in ResultCache(FOLDER, shipped=False).entries()}
    assert SHIPPED.resolve() == FOLDER  # the repository keeps one copy


def test_any_cache_serves_the_shipped_points_read_only(tmp_path):
    point = grid_points(CHEAP)[0]
    key = point_key(point, PRESET)
    assert ResultCache(tmp_path).get(key) == ResultCache(SHIPPED, shipped=False).get(key)
    assert ResultCache(tmp_path, shipped=False).get(key) is None
    rows = run_points([point], PRESET, cache=ResultCache(tmp_path), workers=1)
    assert rows.iloc[0]["point_s"] == ResultCache(SHIPPED).get(key)["point_s"]  # not rerun
    assert list(tmp_path.iterdir()) == []  # nothing copied, nothing written
    assert ResultCache(tmp_path).clear() == (0, [])


def test_the_shipped_folder_cannot_be_cleared():
    with pytest.raises(ConfigError, match="read-only"):
        ResultCache(SHIPPED).clear()


@pytest.mark.parametrize("change", ["model", "version", "flow engine"])
def test_a_shipped_point_whose_model_changed_is_never_served(tmp_path, monkeypatch, change):
    point = grid_points({**CHEAP, "size": "1GB"})[0]  # may run on either engine
    assert ResultCache(tmp_path).get(point_key(point, PRESET)) is not None
    if change == "model":
        monkeypatch.setattr(cache_module, "MODEL_REVISION", nunasim.engine.MODEL_REVISION + 1)
    elif change == "version":
        monkeypatch.setattr(cache_module, "__version__", cache_module.__version__ + ".post1")
    else:
        flow = ENGINES["flow"]
        monkeypatch.setattr(flow, "revision", flow.revision + 1)
    assert ResultCache(tmp_path).get(point_key(point, PRESET)) is None
