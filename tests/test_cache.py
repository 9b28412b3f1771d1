"""The result cache: keys that change with everything that decides a point, rows that come
back exactly, entries written whole, and ``nunasim cache info|clear``."""

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli_run import run
from nunasim.errors import ConfigError
from nunasim.experiments.cache import CacheWarning, ResultCache, point_key
from nunasim.experiments.executor import same_as_stored
from nunasim.experiments.sweep import TIMING_COLUMNS, Point, grid_points, sweep
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration
from nunasim.workload import GemmTile

FIXTURES = Path(__file__).parent / "fixtures" / "plans"
PRESET = load_preset("nextgen-4die")
BASE = Point("allgather", 100_000, Configuration.parse("NAP+NAR"), gpus=8, threadblocks=7)
TILE = GemmTile(64, 64, 64, "bf16", 2.0)
GRID = {
    "plan": "allgather",
    "gpus": 4,
    "size": "100kB",
    "configuration": ["UA", "NAP+NAR"],
    "threadblocks": 3,
}


class Counter:
    """A tracker that remembers what the sweep reported."""

    def __init__(self) -> None:
        self.total = self.cached = self.ran = 0

    def start(self, total: int, cached: int) -> None:
        self.total, self.cached = total, cached

    def advance(self, what: str) -> None:
        self.ran += 1

    def close(self) -> None:
        pass


def test_the_key_changes_with_every_field_and_only_then():
    variants = [
        replace(BASE, size=200_000),
        replace(BASE, configuration=Configuration.parse("UA+NAR")),
        replace(BASE, configuration=Configuration("NAP", True, 4)),
        replace(BASE, gpus=4),
        replace(BASE, threadblocks=14),
        replace(BASE, threadblocks="auto"),
        replace(BASE, seed=1),
        replace(BASE, layout="packed"),
        replace(BASE, gemm_tiles=10, gemm_tile=TILE),
        replace(BASE, gemm_tiles=10, gemm_tile=replace(TILE, k=128)),
        replace(BASE, plan="allgather:ring"),
        replace(BASE, threadblocks="auto", search="joint"),
    ]
    keys = {point_key(p, PRESET) for p in variants}
    assert len(keys) == len(variants)
    assert point_key(BASE, PRESET) not in keys
    assert point_key(replace(BASE), load_preset("nextgen-4die")) == point_key(BASE, PRESET)
    assert point_key(BASE, load_preset("nextgen-2die")) != point_key(BASE, PRESET)


def test_the_search_keys_only_where_it_can_change_the_answer():
    searched = replace(BASE, threadblocks="auto")
    assert replace(searched, search="joint").search == "joint"
    # A count given, or one granularity to try (no domains, or a granularity given): the
    # two searches are one, and so is the point and its key.
    for point in (
        replace(BASE, search="joint"),
        replace(searched, configuration=Configuration.parse("UA"), search="joint"),
        replace(searched, configuration=Configuration("NAP", True, 4), search="joint"),
    ):
        assert point.search == "staged"
        assert point_key(point, PRESET) == point_key(replace(point, search="staged"), PRESET)
    with pytest.raises(ConfigError, match="unknown search"):
        replace(searched, search="greedy")


def test_the_fast_search_keys_only_where_it_ranks_granularities():
    # It differs from the exhaustive search only in its granularity round: with one
    # granularity to try, no search, or a plan file, it is the one point.
    searched = replace(BASE, threadblocks="auto")
    fast = replace(searched, search="fast")
    assert fast.search == "fast"
    assert point_key(fast, PRESET) != point_key(searched, PRESET)
    for point in (
        replace(searched, configuration=Configuration.parse("UA")),
        replace(searched, configuration=Configuration("NAP", True, 4)),
        BASE,
    ):
        assert replace(point, search="fast").search == "staged"
    plan_file = sorted(FIXTURES.rglob("*.xml"))[0]
    file_point = Point(str(plan_file), 1_000_000, Configuration.parse("NAP+NAR"), search="fast")
    assert file_point.searched and file_point.search == "staged"


def test_the_key_follows_a_plan_files_bytes(tmp_path):
    fixture = sorted(FIXTURES.rglob("*.xml"))[0]
    plan = tmp_path / "plan.xml"
    plan.write_bytes(fixture.read_bytes())
    point = grid_points({"plan": plan, "size": "1MB", "configuration": "UA"})[0]
    before = point_key(point, PRESET)
    plan.write_bytes(fixture.read_bytes() + b"\n")
    assert point_key(point, PRESET) != before


def test_a_cached_sweep_gives_the_fresh_table_and_runs_nothing(tmp_path):
    cache = ResultCache(tmp_path / "cache")
    plain = sweep(GRID)
    first, again = Counter(), Counter()
    fresh = sweep(GRID, cache=cache, tracker=first)
    cached = sweep(GRID, cache=cache, tracker=again)
    assert (first.cached, first.ran) == (0, 2)
    assert (again.total, again.cached, again.ran) == (2, 2, 0)
    pd.testing.assert_frame_equal(fresh, cached)  # every value, every dtype, wall_s too
    pd.testing.assert_frame_equal(
        plain.drop(columns=list(TIMING_COLUMNS)), fresh.drop(columns=list(TIMING_COLUMNS))
    )
    assert cache.info().points == 2


def test_a_grid_that_repeats_a_point_runs_it_once(tmp_path):
    counter = Counter()
    table = sweep(
        {**GRID, "configuration": ["UA", "UA"]}, cache=ResultCache(tmp_path), tracker=counter
    )
    assert counter.ran == 1 and len(table) == 2
    assert table.iloc[0].equals(table.iloc[1])


def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path):
    cache = ResultCache(tmp_path)
    sweep(GRID, cache=cache)
    damaged = cache.entries()[0]
    damaged.write_text('{"format": 1, "row": ')  # as a killed writer without os.replace would
    counter = Counter()
    with pytest.warns(CacheWarning, match=f"{damaged.name}: skipped, not JSON"):
        sweep(GRID, cache=cache, tracker=counter)
    assert (counter.cached, counter.ran) == (1, 1)
    assert cache.get(damaged.stem) is not None


def test_info_and_clear_count_entries_not_leftovers(tmp_path, capsys):
    cache = ResultCache(tmp_path)
    sweep(GRID, cache=cache)
    key = cache.entries()[0].stem
    (tmp_path / f".{key}.json.tmp123.json").write_text("half")  # a killed write's leftover
    info = cache.info()
    assert info.points == 2
    assert info.bytes == sum(p.stat().st_size for p in cache.entries())
    timed, seconds = cache.computing_time()
    assert timed == 2 and seconds == pytest.approx(
        sum(cache.get(p.stem)["point_s"] for p in cache.entries())
    )
    code, out, _ = run(capsys, "cache", "info", "--cache-dir", tmp_path)
    assert code == 0 and "points: 2" in out and str(tmp_path) in out
    assert "over the 2 timed points" in out
    code, out, _ = run(capsys, "cache", "clear", "--cache-dir", tmp_path)
    assert code == 0 and "deleted 2 points" in out
    assert list(tmp_path.iterdir()) == []


def test_the_cache_folder_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("NUNASIM_CACHE", str(tmp_path / "here"))
    assert ResultCache().folder == tmp_path / "here"


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(
            st.integers(-(2**62), 2**62),
            st.floats(allow_nan=False),
            st.text(max_size=8),
            st.booleans(),
            st.none(),
        ),
        max_size=6,
    )
)
def test_rows_round_trip_exactly(row):
    assert same_as_stored(row) == row
    assert [type(v) for v in same_as_stored(row).values()] == [type(v) for v in row.values()]


def test_an_unwritable_cache_folder_is_refused_before_any_run(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run(
        capsys,
        "reproduce",
        "fig12",
        "--quick",
        "--cache-dir",
        blocker / "cache",
        "--out",
        tmp_path / "o",
    )
    assert code == 2 and "is a file, not a folder" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_workers_must_be_positive(tmp_path, capsys, workers):
    code, _, err = run(capsys, "reproduce", "fig12", "--workers", workers, "--out", tmp_path)
    assert code == 2 and "workers must be at least 1" in err


def test_only_a_point_that_may_run_on_the_flow_engine_keys_on_its_revision(monkeypatch):
    """A change of the flow engine alone (its ``revision``) keeps the packet engine's
    cached points and misses the others."""
    from nunasim.engine.base import ENGINES

    packet_only = [BASE, replace(BASE, threadblocks="auto"), replace(BASE, engine="packet")]
    flow = [
        replace(BASE, size=1_000_000_000, threadblocks="auto"),
        replace(BASE, size=1_000_000_000),
        replace(BASE, engine="flow"),
    ]
    before = {p: point_key(p, PRESET) for p in packet_only + flow}
    flow_engine = ENGINES["flow"]
    monkeypatch.setattr(flow_engine, "revision", flow_engine.revision + 1)
    assert all(point_key(p, PRESET) == before[p] for p in packet_only)
    assert all(point_key(p, PRESET) != before[p] for p in flow)


def test_a_point_auto_chooses_the_engine_of_keys_on_the_engines_thresholds(monkeypatch):
    """A change of the packet engine's ``auto`` threshold could move a point to the flow
    engine: every point ``auto`` decides misses, and one that names its engine keeps."""
    from nunasim.engine.base import ENGINES

    decided = [BASE, replace(BASE, threadblocks="auto"), replace(BASE, size=1_000_000_000)]
    named = [replace(BASE, engine="packet"), replace(BASE, engine="flow")]
    before = {p: point_key(p, PRESET) for p in decided + named}
    packet = ENGINES["packet"]
    monkeypatch.setattr(packet, "auto_messages", packet.auto_messages // 2)
    assert all(point_key(p, PRESET) != before[p] for p in decided)
    assert all(point_key(p, PRESET) == before[p] for p in named)
    monkeypatch.undo()
    assert all(point_key(p, PRESET) == before[p] for p in decided + named)


def test_a_plan_in_a_data_polled_protocol_keys_on_the_cu_demand_rule(monkeypatch):
    """Placement charges a CU a step's wire lines: points of LL plans, whose placements
    that changed, key on the rule (and miss what was cached before it); Simple plans' keys
    are as they were."""
    import nunasim.experiments.cache as cache_module
    from nunasim.collectives.builtins import builtin_plan

    ll = replace(BASE, plan="allgather:direct:gpus=8:proto=LL")
    keys = point_key(ll, PRESET), point_key(BASE, PRESET)
    simple = builtin_plan("allgather", gpus=8)
    monkeypatch.setattr(cache_module, "point_plan", lambda point: simple)
    assert point_key(ll, PRESET) != keys[0]  # only the rule's entry separates them
    assert point_key(BASE, PRESET) == keys[1]
