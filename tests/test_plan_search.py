"""A plan file's NAR granularity, searched by simulation (``simulate --plan``, ``Point``):
every granularity ``auto`` may use runs to its end and the fastest is kept; the output
names the winner and its margins, and, where UA is still faster, the measured cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import run
from nunasim.experiments.plan_search import GranularitySearch, busiest, plan_report
from nunasim.experiments.sweep import Point, point_search, run_point
from nunasim.io.plans import load_plan
from nunasim.io.presets import load_preset
from nunasim.policies.place import auto_granularities
from nunasim.scenario import Configuration, Scenario

FIXTURES = Path(__file__).parent / "fixtures" / "plans"
SMALL = FIXTURES / "allreduce.json"  # 2 GPUs
SIZE = 64_000


def _point(path: Path, size: int, name: str = "NAP+NAR") -> Point:
    return Point(str(path), size, Configuration.parse(name))


def test_auto_runs_every_granularity_and_keeps_the_fastest():
    preset = load_preset("nextgen-4die")
    plan = load_plan(SMALL)
    pod = preset.fit(plan.ngpus).pod
    point = _point(SMALL, SIZE)
    result = run_point(point, preset)
    best = point_search(point, preset)
    assert best is not None and not (best.skipped or best.cut or best.screened)
    explicit = {
        g: Scenario(pod, plan, SIZE, Configuration.parse("NAP+NAR", g)).run().completion_ps
        for g in auto_granularities(pod.socket)
    }
    assert {g: ps for _, g, ps in best.tried} == explicit
    assert len(set(explicit.values())) > 1  # the granularity matters on this plan
    assert result.completion_ps == min(explicit.values())
    assert explicit[result.info.granularity] == result.completion_ps
    # The estimate's pick ran first, at the granularity the estimate alone gives.
    estimated = Scenario(pod, plan, SIZE, "NAP+NAR").placement().granularity
    assert best.estimated == estimated == best.tried[0][1]


def test_a_given_granularity_or_ua_is_not_searched():
    assert not _point(SMALL, SIZE, "UA").searched
    given = Point(str(SMALL), SIZE, Configuration.parse("NAP+NAR", 2))
    assert not given.searched and point_search(given, load_preset("nextgen-4die")) is None


def test_simulate_names_the_winner_and_the_runner_up_margin(capsys):
    args = ["simulate", "--plan", SMALL, "--size", "64kB", "--config", "NAP+NAR"]
    code, out, _ = run(capsys, *args, "--json")
    assert code == 0
    summary = json.loads(out)
    search = summary["granularity_search"]
    times = {int(g): ns for g, ns in search["completion_ns"].items()}
    winner = min(times, key=times.__getitem__)
    assert search["winner"] == summary["granularity"] == winner
    assert times[winner] == summary["completion_ns"]
    second = min((g for g in times if g != winner), key=times.__getitem__)
    assert search["runner_up"]["granularity"] == second
    assert search["runner_up"]["speedup"] == pytest.approx(times[second] / times[winner])
    assert search["baseline"]["speedup"] == pytest.approx(times[1] / times[winner])
    code, text, _ = run(capsys, *args)
    assert code == 0
    assert f"granularity    {winner} domains, the fastest of every granularity" in text
    ratio = times[second] / times[winner]
    assert f"{ratio:.3f}x over runner-up {second}" in text
    assert f"UA {summary['ua']['completion_ns']:,.1f} ns" in text


def test_the_runner_up_of_one_granularity_is_none():
    search = GranularitySearch(4, {4: 100}, 4)
    assert search.runner_up is None and search.speedup_over(1) is None
    assert search.summary()["runner_up"] is None


def test_where_ua_is_faster_the_cause_is_the_busiest_resource_measured():
    # ag-1k-512k at 1 MB: NAP+NAR at its best granularity still loses to UA (docs/plans.md)
    preset = load_preset("nextgen-4die")
    path = FIXTURES / "ag-1k-512k.xml"
    point = _point(path, 1_000_000)
    result = run_point(point, preset)
    best = point_search(point, preset)
    assert best is not None
    report = plan_report(point, preset, best, result)
    assert report.speedup < 1 and report.cause is not None
    named = report.cause.ours
    table = result.resources
    kind = table[table["kind"] == named.kind]
    top = kind.loc[kind["busy_ps"].idxmax()]
    assert (int(top["gpu"]), int(top["index"]), int(top["busy_ps"])) == (
        named.gpu,
        named.index,
        named.busy_ps,
    )
    assert busiest(report.reference, named.kind) == report.cause.theirs
    assert named.busy_ps > report.cause.theirs.busy_ps  # "busier than UA's" is measured
    assert f"{named.kind} {named.index} of GPU {named.gpu}" in report.cause.describe()
