"""The public Python API: the docs' example runs, and each name does what docs/api.md says."""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import nunasim as ns
from nunasim.experiments.sweep import grid_points

DOCS = Path(__file__).resolve().parent.parent / "docs" / "api.md"
EIGHT = ("UA", "UA+NAR", "NUMA", "NUMA+NAR", "NAP", "NAP+NAR", "NAP*", "NAP*+NAR")
PRESET = ns.load_preset("nextgen-4die")


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)


def test_the_docs_examples_run(capsys):
    blocks = re.findall(r"```python\n(.+?)```", DOCS.read_text(), re.DOTALL)
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), {})
    out = capsys.readouterr().out
    assert "NAP+NAR" in out and "alltoall" in out and "unknown configuration" in out


def test_import_is_lazy():
    _python("import nunasim, sys; assert 'nunasim.engine' not in sys.modules")
    _python("import nunasim, sys; assert not [m for m in sys.modules if m.startswith('nunasim.')]")


def test_every_public_name_is_listed_documented_and_loads():
    assert set(ns.__all__) == set(dir(ns)) == {*ns._EXPORTS, "__version__"}
    for name in ns.__all__:
        value = getattr(ns, name)
        assert name == "__version__" or value.__doc__, name
    with pytest.raises(AttributeError):
        ns.no_such_name  # noqa: B018


def test_the_one_line_run_prints_one_row():
    out = _python(
        "import nunasim as ns; print(ns.Scenario(ns.load_preset('nextgen-4die'), "
        "ns.builtin_plan('allgather', gpus=8), '1MB', "
        "ns.Configuration.parse('NAP+NAR')).run().to_row())"
    ).stdout
    assert out.count("\n") == 1
    assert "'configuration': 'NAP+NAR'" in out and "'gpus': 8" in out


def test_a_bad_configuration_name_lists_the_eight():
    with pytest.raises(ns.ConfigError) as error:
        ns.Configuration.parse("NAP+NUMA")
    assert all(name in str(error.value) for name in EIGHT)
    with pytest.raises(ns.ConfigError, match="unknown placement"):
        ns.Configuration("NAP+NAR")
    with pytest.raises(ns.ConfigError, match="NAR granularity"):
        ns.Configuration("NAP", nar=True, granularity=0)


def test_configurations_by_name_and_by_parts_are_one():
    assert tuple(c.name for c in ns.Configuration.all()) == EIGHT
    assert ns.Configuration.parse("NAP*+NAR", 12) == ns.Configuration("NAP*", True, 12)
    assert str(ns.Configuration("NUMA")) == "NUMA"


def test_builtin_plan_by_collective_and_keywords():
    assert (
        ns.builtin_plan("allgather", gpus=4, tbs=6).name
        == ns.builtin_plan("allgather:direct:gpus=4:tbs=6").name
    )
    assert ns.builtin_plan("allreduce:ring:gpus=4").ngpus == 4
    with pytest.raises(ns.ConfigError, match="unknown keyword"):
        ns.builtin_plan("allgather", gpu=4)


def test_a_scenario_takes_a_preset_a_size_string_and_a_name():
    plan = ns.builtin_plan("alltoall", gpus=16)
    scenario = ns.Scenario(PRESET, plan, "64kB", "UA+NAR")
    assert scenario.pod == PRESET.fit(16).pod and scenario.pod.sockets == 16
    assert scenario == ns.Scenario(PRESET.fit(16).pod, plan, 64_000, ns.Configuration("UA", True))
    assert PRESET.fit(2) == PRESET


def test_to_row_has_the_headline_figures_and_to_frame_the_stores():
    plan = ns.builtin_plan("allgather", gpus=4, tbs=6)
    result = ns.Scenario(PRESET, plan, "16kB", ns.Configuration.parse("NAP+NAR", 12)).run()
    row = result.to_row()
    assert set(row) >= {
        "completion_ps",
        "lower_bound_ps",
        "store_mean_ns",
        "store_p50_ns",
        "store_p99_ns",
        "store_max_ns",
        "bytes_delivered",
        "events",
        "configuration",
        "size_bytes",
        "gpus",
        "threadblocks",
        "granularity",
    }
    assert (row["configuration"], row["size_bytes"], row["gpus"]) == ("NAP+NAR", 16_000, 4)
    assert (row["threadblocks"], row["granularity"]) == (6, 12)
    assert row["completion_ps"] == result.completion_ps >= row["lower_bound_ps"]
    frame = result.to_frame()
    assert len(frame) == row["stores"] and (frame["configuration"] == "NAP+NAR").all()
    assert set(result.to_frame("resources")["kind"]) >= {"link", "port", "stack"}


def test_a_sweep_has_one_row_per_point_each_the_scenarios_own():
    grid = {
        "collective": "allgather",
        "gpus": 4,
        "size": ["16kB", 32_000],
        "configuration": ["UA", "NAP+NAR"],
        "threadblocks": 6,
    }
    table = ns.sweep(grid, PRESET)
    assert isinstance(table, pd.DataFrame) and len(table) == 4
    assert list(table["size_bytes"]) == [16_000, 16_000, 32_000, 32_000]
    assert list(table["configuration"]) == ["UA", "NAP+NAR"] * 2
    assert (table["preset"] == "nextgen-4die").all()
    one = ns.Scenario(PRESET, ns.builtin_plan("allgather", gpus=4, tbs=6), 32_000, "NAP+NAR")
    assert table.iloc[3]["completion_ps"] == one.run().completion_ps


def test_a_bad_grid_is_refused_before_anything_runs():
    with pytest.raises(ns.ConfigError, match="unknown sweep key"):
        grid_points({"plan": "allgather", "size": 1, "configuration": "UA", "gpu": 4})
    with pytest.raises(ns.ConfigError, match="'size'"):
        grid_points({"plan": "allgather:gpus=4", "configuration": "UA"})
    with pytest.raises(ns.ConfigError, match="neither a built-in plan"):
        grid_points(
            {"collective": ["allgather", "gather"], "gpus": 4, "size": 1, "configuration": "UA"}
        )
    with pytest.raises(ns.ConfigError, match="unknown configuration"):
        grid_points({"collective": "allgather", "gpus": 4, "size": 1, "configuration": "NAP+X"})
    with pytest.raises(ns.ConfigError, match="at least 2 GPUs"):
        grid_points({"collective": "allgather", "gpus": [4, 1], "size": 1, "configuration": "UA"})
