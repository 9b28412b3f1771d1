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
from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.base import ENGINES
from nunasim.engine.packet.runs import RUNS_FROM_MESSAGES
from nunasim.errors import ConfigError
from nunasim.experiments.cache import ENTRY_SUFFIX, ResultCache, point_key, shipped_folder
from nunasim.experiments.figures import fig9
from nunasim.experiments.sweep import TIMING_COLUMNS, grid_points, run_points
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration, Scenario

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
    stored = ResultCache(SHIPPED).find(point, PRESET)  # as a sweep reads it back
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
    installed = shipped_folder()
    assert installed is not None
    with pytest.raises(ConfigError, match="read-only"):
        ResultCache(installed).clear()
    assert len(ResultCache(installed, shipped=False).entries()) == len(
        ResultCache(FOLDER, shipped=False).entries()
    )


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


def _sampled_points(seed: int = 2026, budget_s: float = 30.0) -> list:
    """A fixed, seeded sample of Fig. 9's shipped points on 4-64 GPUs: one of every
    collective on each engine, and two more, each among those that took at most
    ``budget_s`` to compute (as its row says), so the sample reruns in minutes."""
    import random

    cache = ResultCache(SHIPPED, shipped=False)
    pool: dict[tuple[str, str], list] = {}
    for point in grid_points(fig9.grid(quick=False)):
        if not 4 <= point.gpus <= 64:
            continue
        row = cache.get(point_key(point, PRESET))
        if row is not None and row["point_s"] <= budget_s:
            pool.setdefault((point.plan, row["engine"]), []).append(point)
    chooser = random.Random(seed)
    chosen = [chooser.choice(pool[key]) for key in sorted(pool)]
    rest = [p for key in sorted(pool) for p in pool[key] if p not in chosen]
    return chosen + chooser.sample(rest, 2)


@pytest.mark.slow
def test_a_seeded_sample_of_the_shipped_points_is_what_this_code_computes():
    """Both engines, every collective, 4 to 64 GPUs, recomputed from nothing: identical to
    the picosecond, and in every other column but the timings."""
    points = _sampled_points()
    engines = {ResultCache(SHIPPED).get(point_key(p, PRESET))["engine"] for p in points}
    assert engines == {"packet", "flow"} and {p.plan for p in points} == set(fig9.COLLECTIVES)
    fresh = run_points(points, PRESET, cache=None, workers=1)
    for point, row in zip(points, fresh.to_dict("records"), strict=True):
        stored = ResultCache(SHIPPED).find(point, PRESET)
        for column in TIMING_COLUMNS:
            stored.pop(column, None)
            row.pop(column, None)
        assert row["completion_ps"] == stored["completion_ps"], point.describe()
        assert row == pytest.approx(stored, nan_ok=True), point.describe()


@pytest.mark.slow
def test_shipped_packet_runs_large_enough_for_event_runs_come_out_the_same():
    """The packet core keeps runs of events beside its heap from RUNS_FROM_MESSAGES
    messages on (``nunasim.engine.packet.runs``): the three shipped packet points with the
    fewest events among those that reach it, each run again at its searched count and
    granularity, are the same to the picosecond, event for event."""
    cache = ResultCache(SHIPPED)
    rows = [cache.get(path.name.removesuffix(ENTRY_SUFFIX)) for path in cache.entries()]
    large = [
        row
        for row in rows
        if row is not None
        and row["engine"] == "packet"
        and row["messages"] >= RUNS_FROM_MESSAGES
        and row["preset"] == "nextgen-4die"
    ]
    large.sort(key=lambda row: (row["events"], row["plan"], row["configuration"]))
    assert len(large) >= 3
    for row in large[:3]:
        pod = PRESET.fit(row["gpus"]).pod
        plan = builtin_plan(row["plan"])
        config = Configuration.parse(row["configuration"])
        granularity = row["granularity"] if config.uses_domains else None
        scenario = Scenario(pod, plan, row["size_bytes"], config, granularity, row["seed"])
        result = scenario.run()
        assert result.messages == row["messages"] >= RUNS_FROM_MESSAGES, row["plan"]
        assert (result.completion_ps, result.events) == (row["completion_ps"], row["events"])
        assert result.lower_bound_ps == row["lower_bound_ps"]
