"""A run's tables kept as columns until read: the same DataFrames, the same summary as
pandas gives, and ``nunasim simulate --json`` without loading pandas at all."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.result import SimResult
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario

PARTS = ("l1", "src_noc", "port", "plane", "dst_noc", "memory")


def _result(stores: object, resources: object) -> SimResult:
    return SimResult(
        completion_ps=1,
        gpu_completion_ps=np.zeros(1, dtype=np.int64),
        stores=stores,
        resources=resources,
        messages=0,
        events=0,
        wall_s=0.0,
        bytes_delivered=0,
        lower_bound_ps=0,
    )


latencies = st.lists(st.integers(0, 10**12), min_size=1, max_size=300)


@settings(max_examples=60, deadline=None)
@given(latencies, st.integers(0, 2**31))
def test_a_summary_from_columns_is_the_one_pandas_gives(values: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    columns = {"latency_ps": np.array(values, dtype=np.int64)}
    for part in PARTS:
        columns[part] = rng.integers(0, 10**12, size=len(values))
    resources = {"kind": np.array(["link"], dtype=object), "flits": np.array([1])}
    lazy = _result(columns, resources)
    eager = _result(pd.DataFrame(columns), pd.DataFrame(resources))
    # Bit for bit, not approximately: the JSON a run prints must not move.
    assert lazy.summary() == eager.summary()
    assert lazy.to_row() == eager.to_row()
    pd.testing.assert_frame_equal(lazy.stores, eager.stores)
    pd.testing.assert_frame_equal(lazy.resources, eager.resources)


def test_a_table_is_built_once_and_kept_with_its_changes() -> None:
    result = _result({"latency_ps": np.arange(3)}, {"flits": np.arange(2)})
    stores = result.stores
    assert result.stores is stores
    stores["extra"] = 1
    assert "extra" in result.stores
    moved = dataclasses.replace(result, events=5)
    assert moved.stores is stores and moved.events == 5


def test_an_empty_store_table_is_an_empty_dataframe_as_before() -> None:
    result = _result({"latency_ps": np.empty(0, dtype=object)}, {"flits": np.arange(0)})
    assert result.summary()["stores"] == 0
    pd.testing.assert_frame_equal(result.stores, pd.DataFrame(columns=["latency_ps"]))


def test_a_run_gives_the_tables_it_gave_as_dataframes() -> None:
    preset = load_preset("nextgen-4die")
    plan = builtin_plan("allgather:direct:gpus=2:tbs=1")
    result = Scenario(preset, plan, "64kB", "UA").run()
    stores, resources = result.stores, result.resources
    assert isinstance(stores, pd.DataFrame) and isinstance(resources, pd.DataFrame)
    assert len(stores) == result.summary()["stores"] > 0
    parts = stores[list(PARTS[1:])].sum(axis=1)
    assert (parts == stores["latency_ps"]).all()  # the breakdown adds up
    assert set(resources["kind"]) <= {"link", "port", "plane", "stack", "inject", "eject"}
    names = pd.DataFrame({"kind": resources["kind"].tolist()})  # as a list of names gives
    pd.testing.assert_frame_equal(resources[["kind"]], names)


def test_simulate_json_does_not_load_pandas() -> None:
    code = (
        "import sys\n"
        "from nunasim.cli import main\n"
        "status = main(['simulate', '--gpus', '2', '--size', '64kB', '--tbs', '1', '--json'])\n"
        "print(status, sorted(m for m in ('pandas', 'tqdm', 'matplotlib') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "0 []"
