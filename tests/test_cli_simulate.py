"""``nunasim simulate`` and ``nunasim headline``."""

import json
from pathlib import Path

import pandas as pd
import pytest

from cli_run import run
from nunasim.io.plans import load_plan

FIXTURES = Path(__file__).parent / "fixtures" / "plans"


def test_simulate_json_has_the_promised_fields(capsys):
    code, out, _ = run(
        capsys,
        "simulate",
        "--collective",
        "allgather",
        "--size",
        "100kB",
        "--gpus",
        "4",
        "--config",
        "UA+NAR",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    for key in ("completion_ns", "store_latency_ns", "bytes_delivered", "events", "wall_s"):
        assert key in data
    assert set(data["store_latency_ns"]) >= {"mean", "p50", "p99", "max"}
    assert data["completion_ns"] >= data["lower_bound_ns"] > 0
    # 4 GPUs each store 3 chunks of 25 kB: 98 lines of 256 B per chunk.
    assert data["bytes_delivered"] == 4 * 3 * 98 * 256


def test_simulate_writes_histogram_and_tables(tmp_path, capsys):
    hist, stores, resources = tmp_path / "h.png", tmp_path / "s.parquet", tmp_path / "r.csv"
    code, out, _ = run(
        capsys,
        "simulate",
        "--collective",
        "alltoall",
        "--gpus",
        "4",
        "--size",
        "64kB",
        "--config",
        "NAP+NAR",
        "--nar",
        "12",
        "--hist",
        str(hist),
        "--stores",
        str(stores),
        "--resources",
        str(resources),
    )
    assert code == 0 and "completion" in out
    assert hist.read_bytes()[:4] == b"\x89PNG"
    table = pd.read_parquet(stores)
    assert (
        table["latency_ps"] == table[["src_noc", "port", "plane", "dst_noc", "memory"]].sum(axis=1)
    ).all()
    assert set(pd.read_csv(resources)["kind"]) >= {"link", "port", "plane", "stack"}


def test_simulate_bad_input(tmp_path, capsys):
    code, _, err = run(capsys, "simulate", "--size", "0B")
    assert code == 2 and "must be positive" in err
    code, _, err = run(capsys, "simulate", "--hist", str(tmp_path / "h.txt"))
    assert code == 2 and ".png" in err
    assert list(tmp_path.iterdir()) == []


def test_headline(tmp_path, capsys):
    code, out, _ = run(
        capsys,
        "headline",
        "--plan",
        "allgather:direct:gpus=4",
        "--size",
        "100kB",
        "--out",
        str(tmp_path),
    )
    assert code == 0
    assert "speedup of NAP+NAR over UA" in out
    assert "paper" not in out  # the paper's figures are of 8 GPUs at 1 MB, not this
    table = pd.read_csv(tmp_path / "headline.csv")
    assert list(table["config"]) == ["UA", "NAP+NAR"]
    assert table["paper_mean_ns"].isna().all()
    assert (tmp_path / "fig10.png").stat().st_size > 10_000


def test_headline_takes_a_plan_file_at_its_own_threadblocks(tmp_path, capsys):
    plan = FIXTURES / "ag-1k-512k.xml"
    code, out, _ = run(capsys, "headline", "--plan", plan, "--size", "64kB", "--out", tmp_path)
    assert code == 0, out
    table = pd.read_csv(tmp_path / "headline.csv")
    assert set(table["threadblocks"]) == {load_plan(str(plan)).threadblocks_per_gpu[0]}


def test_the_paper_figures_belong_to_their_experiment():
    from nunasim.experiments.headline import paper_fig10_ns

    assert paper_fig10_ns("allgather", 8, 10**6) == {"UA": (920, 1320), "NAP+NAR": (780, 1180)}
    assert paper_fig10_ns("alltoall", 8, 10**6) == {}
    assert paper_fig10_ns("allgather", 8, 2**20) == {}


def test_heatmap_draws_the_loaded_links(tmp_path, capsys):
    from matplotlib.figure import Figure

    import nunasim.plotting.heatmap as heatmap

    drawn = {}
    original = heatmap.draw_heatmap

    def spy(*args, **kwargs) -> Figure:
        figure = original(*args, **kwargs)
        drawn["arrows"] = sum(1 for a in figure.axes[0].texts if a.get_gid() == "link-load")
        return figure

    heatmap.draw_heatmap = spy
    try:
        out = tmp_path / "heat.png"
        code, _, _ = run(
            capsys,
            "simulate",
            "--gpus",
            "4",
            "--size",
            "64kB",
            "--config",
            "UA",
            "--heatmap",
            str(out),
        )
    finally:
        heatmap.draw_heatmap = original
    assert code == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert drawn["arrows"] > 20  # stores cross many links of GPU 0


def test_fig9_table_and_picture(tmp_path, capsys):
    table, picture = tmp_path / "f9.csv", tmp_path / "f9.png"
    code, out, _ = run(
        capsys,
        "fig9",
        "--collectives",
        "allgather,alltoall",
        "--sizes",
        "64kB",
        "--gpus",
        "4",
        "--configs",
        "UA+NAR,NAP+NAR",
        "-o",
        str(table),
        "--png",
        str(picture),
    )
    assert code == 0 and "4 GPUs allgather 64kB" in out
    data = pd.read_csv(table)
    assert len(data) == 2 * 3  # two collectives x (UA and two configurations)
    assert (data[data["config"] == "UA"]["speedup_vs_ua"] == 1.0).all()
    assert picture.read_bytes()[:4] == b"\x89PNG"


def test_fig9_bad_input(capsys):
    assert run(capsys, "fig9", "--collectives", "gather")[0] == 2
    assert run(capsys, "fig9", "--configs", "NAP+NOTHING")[0] == 2
    assert run(capsys, "fig9", "--gpus", "one")[0] == 2


@pytest.mark.slow
def test_simulate_defaults_beat_the_baseline(capsys):
    """`nunasim simulate` with no options (NAP+NAR, each at its best threadblock count) is
    faster than the same run under UA."""
    code, default, _ = run(capsys, "simulate", "--json")
    assert code == 0
    code, baseline, _ = run(capsys, "simulate", "--config", "UA", "--json")
    assert code == 0
    aware, unaware = json.loads(default), json.loads(baseline)
    assert aware["config"] == "NAP+NAR" and unaware["config"] == "UA"
    assert aware["completion_ns"] < unaware["completion_ns"]


def test_a_search_in_a_log_prints_a_line_now_and_then_and_json_to_a_pipe_none(capsys, monkeypatch):
    import nunasim.cli.progress as progress
    from cli_run import run

    code, _, err = run(capsys, "simulate", "--size", "4kB", "--gpus", "2", "--config", "UA")
    assert code == 0 and "simulate: " not in err  # quicker than a line's interval
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)
    # another size: the search of 4 kB is remembered, and would not run again
    code, _, err = run(capsys, "simulate", "--size", "8kB", "--gpus", "2", "--config", "UA")
    lines = [line for line in err.splitlines() if line.startswith("simulate: ")]
    assert code == 0 and "(candidate 1)" in lines[0] and lines[0].endswith(" s")
    assert any("best so far" in line for line in lines)
    code, out, err = run(capsys, "simulate", "--size", "4kB", "--gpus", "2", "--json")
    assert code == 0 and out.startswith("{") and "simulate: " not in err


def test_a_silent_phase_still_prints_a_line_every_interval(capsys):
    import time

    from nunasim.cli.progress import Heartbeat, PlainLines

    lines = PlainLines("simulate", plain_every_s=0.05)
    with Heartbeat(lines.tick, every_s=0.01):
        lines("candidate 1 of 7")
        time.sleep(0.5)  # one engine run that reports nothing
    err = capsys.readouterr().err.splitlines()
    assert len(err) >= 3, err
    assert err[-1].startswith("simulate: candidate 1 of 7, still running, ")
    # the thread is gone with the block: nothing more is printed
    time.sleep(0.1)
    assert capsys.readouterr().err == ""


def test_fig9_in_a_log_prints_its_runs_now_and_then(capsys, monkeypatch, tmp_path):
    import nunasim.cli.progress as progress
    from cli_run import run

    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)
    argv = ["fig9", "--collectives", "allgather", "--sizes", "4kB", "--gpus", "2"]
    code, _, err = run(capsys, *argv, "--configs", "UA,NAP", "-o", tmp_path / "f.csv")
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith("fig9: ")]
    assert lines and all(line.endswith(" s") for line in lines), err
    assert "UA" in lines[0] and "(candidate 1)" in lines[0], lines
    assert any("NAP" in line and "best so far" in line for line in lines), lines
