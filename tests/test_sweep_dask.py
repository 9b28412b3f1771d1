"""Sweeps on Dask, and a sweep killed part-way then run again."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from nunasim.experiments.cache import ResultCache
from nunasim.experiments.sweep import TIMING_COLUMNS, sweep

GRID = {
    "plan": "allgather",
    "gpus": 8,
    "size": "100kB",
    "configuration": ["UA", "NAP+NAR"],
    "threadblocks": [7, 14],
}


@pytest.mark.slow  # starting a cluster, and compiling the engine in each worker, takes a while
def test_a_local_cluster_gives_the_serial_table(tmp_path):
    serial = sweep(GRID)
    cache = ResultCache(tmp_path, shipped=False)  # every point run and stored, none shipped
    on_dask = sweep(GRID, workers=2, cache=cache)
    pd.testing.assert_frame_equal(
        serial.drop(columns=list(TIMING_COLUMNS)), on_dask.drop(columns=list(TIMING_COLUMNS))
    )
    assert cache.info().points == len(serial)
    # What the workers stored reads back as the same table, without a cluster.
    pd.testing.assert_frame_equal(on_dask, sweep(GRID, cache=cache))


@pytest.mark.slow  # starting a cluster
def test_a_scheduler_address_runs_the_points_on_that_cluster():
    from dask.distributed import LocalCluster

    grid = {**GRID, "threadblocks": 7}
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        remote = sweep(grid, scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(
        sweep(grid).drop(columns=list(TIMING_COLUMNS)), remote.drop(columns=list(TIMING_COLUMNS))
    )


@pytest.mark.slow  # the connection's timeout
def test_an_unreachable_scheduler_is_bad_input():
    from nunasim.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot reach the Dask scheduler"):
        sweep({**GRID, "threadblocks": 7}, scheduler="tcp://127.0.0.1:1")


def _reproduce(tmp_path: Path, out: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    return [
        sys.executable,
        "-m",
        "nunasim",
        "reproduce",
        "fig11",
        "--quick",
        "--workers",
        "1",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / out),
    ], env


def _shipped_points_of_the_quick_fig11() -> int:
    from nunasim.experiments.cache import point_key, shipped_folder
    from nunasim.experiments.figures import fig11
    from nunasim.experiments.sweep import grid_points
    from nunasim.io.presets import load_preset

    shipped, preset = ResultCache(shipped_folder(), shipped=False), load_preset("nextgen-4die")
    points = grid_points(fig11.grid(quick=True))
    assert len(points) == 16
    return sum(shipped.get(point_key(p, preset)) is not None for p in points)


@pytest.mark.slow
def test_a_killed_sweep_reruns_only_what_it_had_not_finished(tmp_path):
    argv, env = _reproduce(tmp_path, "first")
    cache = ResultCache(tmp_path / "cache")
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while cache.info().points < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = {path.name: path.stat().st_mtime_ns for path in cache.entries()}
    served = _shipped_points_of_the_quick_fig11()  # found, never run nor written
    assert 3 <= len(finished) < 16 - served, "the kill came part-way through the points"
    assert not (tmp_path / "first" / "fig11").exists()  # nothing half-written

    argv, env = _reproduce(tmp_path, "second")
    rerun = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    n = len(finished) + served
    assert rerun.stderr.splitlines()[0] == f"fig11: {n}/16 points ({n} cached, 0 run)"
    assert f"({n} cached, {16 - n} run)" in rerun.stderr
    # The finished points were not computed (nor written) again.
    assert {p.name: p.stat().st_mtime_ns for p in cache.entries() if p.name in finished} == finished
    assert cache.info().points == 16 - served
    table = pd.read_csv(tmp_path / "second" / "fig11" / "fig11.csv")
    assert len(table) == 16
    assert not table.duplicated(["size_bytes", "configuration"]).any()


def test_progress_in_a_log_is_plain_lines_with_the_counts(capsys):
    from nunasim.cli.progress import SweepProgress

    progress = SweepProgress("fig", plain_every_s=3600.0)
    progress.start(5, 2)
    for _ in range(3):
        progress.advance("a point")
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    # The first and the last line always; none between within the interval.
    assert lines == ["fig: 2/5 points (2 cached, 0 run)", "fig: 5/5 points (2 cached, 3 run)"]
    progress = SweepProgress("fig", plain_every_s=0.0)
    progress.start(3, 0)
    progress.advance("a point")
    assert re.fullmatch(
        r"fig: 1/3 points \(0 cached, 1 run\), about \d+ s left",
        capsys.readouterr().err.splitlines()[-1],
    )
    progress.close()


def test_progress_in_a_log_goes_on_through_a_long_point(capsys):
    import time

    from nunasim.cli.progress import SweepProgress

    progress = SweepProgress("llm", plain_every_s=0.05)
    progress.start(2, 0)
    time.sleep(1.6)  # a first point that takes minutes, in miniature
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "llm: 0/2 points (0 cached, 0 run)"
    assert re.fullmatch(r"llm: 0/2 points \(0 cached, 0 run\), 1 s so far", lines[-1]), lines
    time.sleep(1.2)  # closed: the heartbeat is gone
    assert capsys.readouterr().err == ""
