"""The LLM study's collective timer and search (with a stand-in for the simulator, so the
properties are checked in milliseconds; the simulator itself is exercised in the slow test)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.experiments.llm_study import (
    Candidate,
    CollectiveTimer,
    PhaseGrid,
    Pricer,
    candidates,
    choice_within_grid,
    choose,
    collective_time,
    contenders,
    fig2_table,
    fig15_summary,
    largest_collective,
    llm_table,
    load_study,
    rates_for,
    size_cdf,
)
from nunasim.io.models import load_inference_settings, load_model
from nunasim.io.presets import load_preset
from nunasim.llm.operators import Step

GRID = (4096, 65536, 1048576)


def fake_simulator(kind, size, gpus, configuration):
    """Alpha-beta: 2 us start-up, 7.2 TB/s per GPU, NAP+NAR 20% faster (ps)."""
    scale = 0.8 if configuration == "NAP+NAR" else 1.0
    return round(scale * (2e6 + 1e12 * size * 2 * (gpus - 1) / gpus / 7.2e12))


def _timer(calls=None):
    def simulate(*point):
        if calls is not None:
            calls.append(point)
        return fake_simulator(*point)

    return CollectiveTimer(load_preset("nextgen-4die"), GRID, simulate=simulate)


def test_each_grid_point_is_simulated_once():
    calls = []
    timer = _timer(calls)
    for _ in range(3):
        timer.time("allreduce", 20000, 8, "UA")
        timer.time("allreduce", 4096, 8, "UA")
    assert sorted(calls) == [("allreduce", 4096, 8, "UA"), ("allreduce", 65536, 8, "UA")]


@settings(max_examples=50, deadline=None)
@given(size=st.integers(1, 1 << 26), gpus=st.sampled_from([2, 8, 64]))
def test_interpolation_is_exact_on_the_grid_and_bracketed_between(size, gpus):
    timer = _timer()
    t = timer.time("alltoall", size, gpus, "UA")
    for point in GRID:
        assert timer.time("alltoall", point, gpus, "UA") == fake_simulator(
            "alltoall", point, gpus, "UA"
        )
    if size <= GRID[0]:
        assert t == fake_simulator("alltoall", GRID[0], gpus, "UA")
    elif size <= GRID[-1]:
        hi = next(p for p in GRID if p >= size)
        lo = GRID[GRID.index(hi) - 1]
        assert (
            fake_simulator("alltoall", lo, gpus, "UA")
            <= t
            <= fake_simulator("alltoall", hi, gpus, "UA")
        )
        # a straight line in size between the neighbours (alpha-beta between them): exact
        # for the alpha-beta stand-in
        assert t == pytest.approx(fake_simulator("alltoall", size, gpus, "UA"), abs=1)
    else:  # the largest's time plus the extra bytes at the fitted or ideal slope
        slope = timer.slope_ps_per_byte("alltoall", gpus, "UA")
        top = fake_simulator("alltoall", GRID[-1], gpus, "UA")
        assert t == round(top + slope * (size - GRID[-1]))


@settings(max_examples=30, deadline=None)
@given(
    times=st.lists(st.integers(1, 10**8), min_size=3, max_size=3),
    gpus=st.sampled_from([2, 8, 64]),
    kind=st.sampled_from(["allreduce", "allgather", "alltoall", "sendrecv"]),
)
def test_beyond_the_grid_no_collective_beats_the_injection_bandwidth(times, gpus, kind):
    table = dict(zip(GRID, times, strict=True))
    timer = CollectiveTimer(load_preset("nextgen-4die"), GRID, simulate=lambda k, s, g, c: table[s])
    # 144 ports x 50 GB/s: 7.2 TB/s a GPU; an All-Reduce puts 2(n-1)/n of its size on them
    share = (gpus - 1) / gpus
    factor = {"allreduce": 2 * share, "sendrecv": 1.0}.get(kind, share)
    ideal = factor * 1e12 / 7.2e12
    slope = timer.slope_ps_per_byte(kind, gpus, "UA")
    # 64 kiB and 1 MiB are within 16x of the largest, 4 kiB is not
    fitted = float(np.polyfit(GRID[1:], times[1:], 1)[0])
    assert slope == pytest.approx(max(fitted, ideal))
    extra = 10**9
    assert timer.time(kind, GRID[-1] + extra, gpus, "UA") >= times[-1] + ideal * extra - 1


@pytest.mark.parametrize(
    ("name", "phase"), [("llama-3.1-70b", "decode"), ("mixtral-8x7b", "prefill")]
)
def test_the_search_is_no_worse_than_anything_it_enumerated(name, phase):
    settings_ = load_inference_settings()
    rates = rates_for(load_preset("nextgen-4die"), settings_)
    grid = PhaseGrid(batch=(1, 8, 64), seq=(1024, 4096), min_tokens_per_s_per_gpu=500)
    model = load_model(name)
    for configuration in ("UA", "NAP+NAR"):
        found = candidates(model, 16, phase, configuration, _timer(), grid, settings_, rates)
        assert len(found) > 10
        chosen = choose(found, grid.min_tokens_per_s_per_gpu)
        meeting = [c for c in found if c.meets(grid.min_tokens_per_s_per_gpu)]
        assert chosen in meeting
        assert all(chosen.breakdown.total_ps <= c.breakdown.total_ps for c in meeting)


def test_without_a_feasible_point_the_search_takes_the_highest_throughput():
    settings_ = load_inference_settings()
    rates = rates_for(load_preset("nextgen-4die"), settings_)
    grid = PhaseGrid(batch=(1, 8), seq=(4096,), min_tokens_per_s_per_gpu=1e12)
    found = candidates(
        load_model("llama-2-7b"), 4, "decode", "UA", _timer(), grid, settings_, rates
    )
    chosen = choose(found, grid.min_tokens_per_s_per_gpu)
    assert chosen.tokens_per_s == max(c.tokens_per_s for c in found)


def test_faster_collectives_never_slow_the_chosen_step():
    # NAP+NAR's stand-in times are 20% lower everywhere, so its optimum can only be faster.
    settings_ = load_inference_settings()
    rates = rates_for(load_preset("nextgen-4die"), settings_)
    grid = load_study().phases["decode"]
    timer = _timer()
    model = load_model("qwen3-30b-a3b")
    best = {
        c: choose(
            candidates(model, 8, "decode", c, timer, grid, settings_, rates),
            grid.min_tokens_per_s_per_gpu,
        )
        for c in ("UA", "NAP+NAR")
    }
    assert best["NAP+NAR"].breakdown.total_ps <= best["UA"].breakdown.total_ps


def test_fig2_model_sizes_cdf_ends_at_one():
    table = fig2_table(["llama-3.1-70b", "qwen3-30b-a3b"], gpus=64)
    cdf = size_cdf(table)
    last = cdf.groupby(["source", "phase", "kind"])["fraction"].last()
    assert all(value == pytest.approx(1.0) for value in last)
    # Llama 70B on 64 GPUs (TP 8): one All-Reduce of T h b after attention and after the FFN
    llama = table[(table.source == "llama-3.1-70b") & (table.phase == "decode")]
    assert set(llama["size"]) == {64 * 8192 * 2}
    assert llama["count"].sum() == 160


def test_a_point_to_point_message_is_priced_as_a_two_gpu_all_to_all():
    # Both calls run the same 2-GPU scenario, so they must agree to the picosecond.
    assert collective_time("sendrecv", 4096, 2, "UA") == collective_time("alltoall", 8192, 2, "UA")


def _warm_quick_cache(folder, threadblocks):
    """A result cache holding made-up times for every quick-grid collective on 2 GPUs,
    priced at ``threadblocks``: a command reading it needs to simulate nothing."""
    from cache_rows import row_of
    from nunasim.experiments.cache import ResultCache, point_key
    from nunasim.experiments.llm_study import collective_point

    study = load_study()
    preset = load_preset("nextgen-4die")
    cache = ResultCache(folder)
    for kind in ("allreduce", "allgather", "alltoall", "reducescatter", "sendrecv"):
        for configuration in study.configurations:
            for size in study.quick_sizes:
                point = collective_point(kind, size, 2, configuration, threadblocks, study.engine)
                time = fake_simulator(kind, size, 2, configuration)
                cache.put(point_key(point, preset), row_of(time))
    return cache


def test_llm_command_prints_both_configurations_from_a_warm_cache(tmp_path, capsys):
    from nunasim.cli.main import main

    # The study's collectives live in the sweeps' result cache: fill it with made-up times
    # and the command must use them (and simulate nothing).
    cache = _warm_quick_cache(tmp_path / "cache", load_study().threadblocks)
    before = {p.name: p.read_text() for p in cache.entries()}
    argv = ["llm", "mixtral-8x7b", "--gpus", "2", "--quick", "--cache-dir", str(cache.folder)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for text in ("prefill on 2 GPUs, UA: TTFT", "decode on 2 GPUs, NAP+NAR: TPOT", "compute"):
        assert text in out
    assert "the paper's search" in out  # says which threadblocks ran
    assert {p.name: p.read_text() for p in cache.entries()} == before  # nothing simulated


def test_llm_command_refuses_an_unknown_model(capsys, tmp_path):
    from nunasim.cli.main import main

    cache = str(tmp_path / "c")
    assert main(["llm", "llama-9", "--gpus", "2", "--quick", "--cache-dir", cache]) == 2
    assert "shipped: llama-2-7b" in capsys.readouterr().err


def test_fig2_follows_the_chosen_configuration():
    import pandas as pd

    choices = pd.DataFrame(
        [
            {"model": "mixtral-8x7b", "phase": "decode", "gpus": 8, "configuration": "UA"}
            | {"tp": 2, "dp": 4, "pp": 1, "batch": 16, "seq": 1000},
            {"model": "mixtral-8x7b", "phase": "decode", "gpus": 8, "configuration": "NAP+NAR"}
            | {"tp": 1, "dp": 8, "pp": 1, "batch": 1, "seq": 1000},
        ]
    )
    table = fig2_table(["mixtral-8x7b"], gpus=8, choices=choices)
    assert set(table.phase) == {"decode"}  # no prefill choice given
    # the UA row: TP 2 x DP 4, 16 tokens per group (see test_llm_inference)
    sizes = table.groupby("kind")["size"].unique().to_dict()
    assert sorted(sizes["alltoall"]) == [67584, 131072]
    assert list(sizes["allreduce"]) == [16 * 4096 * 2]
    assert table["count"].sum() == 32 * 4


def test_a_model_too_large_for_the_pod_is_refused(capsys, tmp_path):
    from nunasim.cli.main import main

    # 405B bf16 weights (810 GB) cannot fit one GPU's 576 GB: refused before any simulation
    cache = tmp_path / "c"
    argv = ["llm", "llama-3.1-405b", "--gpus", "1", "--quick", "--cache-dir", str(cache)]
    assert main(argv) == 2
    assert not cache.exists()
    assert "llama-3.1-405b on 1 GPUs: no configuration" in capsys.readouterr().err


def test_the_collective_speedup_compares_one_step_under_both_configurations():
    from nunasim.experiments.llm_study import fig15_summary, llm_table

    table = llm_table(["mixtral-8x7b"], [8], timer=_timer())
    ua = table[table.configuration == "UA"].set_index("phase")
    nap = table[table.configuration == "NAP+NAR"].set_index("phase")
    assert (ua.reference_communication_ms == ua.communication_ms).all()
    # The stand-in prices every simulated NAP+NAR point at 0.8 of UA's; beyond the grid
    # the ideal-bandwidth floor on the slope can only raise NAP+NAR's share of that.
    moving = ua.communication_ms > 0
    assert moving.any()
    ratio = nap.reference_communication_ms[moving] / ua.communication_ms[moving]
    assert ((ratio > 0.8 - 1e-6) & (ratio < 1)).all()
    summary = fig15_summary(table).set_index("phase")
    for phase in ratio.index:
        expected = 1 / ratio[phase]
        assert summary.loc[phase, "collective_speedup_geomean"] == pytest.approx(expected)


def test_simulated_collectives_are_kept_in_the_sweeps_result_cache(tmp_path):
    from nunasim.experiments.cache import ResultCache

    preset = load_preset("nextgen-4die")
    cache = ResultCache(tmp_path / "cache")
    first = CollectiveTimer(preset, (4096,), cache)
    time = first.point("alltoall", 4096, 2, "UA")
    assert first.runs == 1 and cache.info().points == 1
    # a new study (a new process) finds it there and runs nothing
    again = CollectiveTimer(preset, (4096,), cache)
    assert again.point("alltoall", 4096, 2, "UA") == time
    assert again.runs == 0
    assert time == collective_time("alltoall", 4096, 2, "UA")  # the cache changes nothing


def test_a_choice_resting_on_sizes_beyond_the_grid_is_flagged_and_a_covering_grid_clears_it():
    # Mixtral 8x7B's prefill collectives on 8 GPUs are MBs to GBs, far beyond GRID's 1 MiB:
    # every choice that rests on the extrapolation says so, per row and in the summary.
    table = llm_table(["mixtral-8x7b"], [8], timer=_timer())
    prefill = table[table.phase == "prefill"]
    assert not prefill.within_grid.any()
    assert fig15_summary(table).set_index("phase").loc["prefill", "beyond_grid"] == 2
    # A grid reaching the largest collective the search can issue extrapolates nothing.
    study = load_study()
    model, settings_ = load_model("mixtral-8x7b"), load_inference_settings()
    top = max(largest_collective(model, 8, p, study.phases[p], settings_) for p in study.phases)
    # batch 8 x 8192 tokens, 2 experts a token, 4096 wide, bf16: the combine's All-to-All
    assert top == 8 * 8192 * 2 * 4096 * 2
    timer = CollectiveTimer(load_preset("nextgen-4die"), (*GRID, top), simulate=fake_simulator)
    covered = llm_table(["mixtral-8x7b"], [8], timer=timer)
    assert covered.within_grid.all() and timer.extrapolated == 0
    assert fig15_summary(covered).beyond_grid.eq(0).all()


@settings(max_examples=10, deadline=None)
@given(
    factors=st.lists(st.floats(1.0, 4.0), min_size=4, max_size=4),
    floor=st.sampled_from([0.0, 1e3, 1e4]),
)
def test_a_choice_within_the_grid_survives_any_pricing_beyond_it(factors, floor):
    # Price the sizes beyond GRID anew (simulated points at 1-4x the port-bandwidth bound,
    # which no run beats): a choice flagged within the grid must not move. Decode steps of
    # 1-256 tokens read about the same weights, so the large batches beyond the grid compete.
    preset = load_preset("nextgen-4die")
    wide = (*GRID, 1 << 22, 1 << 24, 1 << 26, 1 << 28)
    probe = CollectiveTimer(preset, GRID)

    def repriced(kind, size, gpus, configuration):
        if size <= GRID[-1]:
            return fake_simulator(kind, size, gpus, configuration)
        bound = probe.lower_bound_ps(kind, size, gpus)
        return max(round(factors[wide.index(size) - len(GRID)] * bound), 1)

    settings_ = load_inference_settings()
    rates = rates_for(preset, settings_)
    grid = PhaseGrid(batch=(1, 8, 32, 64, 128, 256), seq=(4096,), min_tokens_per_s_per_gpu=floor)
    model = load_model("qwen3-30b-a3b")
    held = []
    for gpus in (4, 16):
        before = candidates(model, gpus, "decode", "UA", _timer(), grid, settings_, rates)
        assert any(c.beyond_grid for c in before)
        chosen = choose(before, floor)
        again = CollectiveTimer(preset, wide, simulate=repriced)
        after = choose(
            candidates(model, gpus, "decode", "UA", again, grid, settings_, rates), floor
        )
        if choice_within_grid(before, chosen, floor):
            held.append(gpus)
            assert (after.parallelism, after.batch, after.seq) == (
                chosen.parallelism,
                chosen.batch,
                chosen.seq,
            )
    assert held  # the property is exercised, not vacuous


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.integers(1, 100),  # time (us)
            st.integers(1, 64),  # tokens
            st.booleans(),  # beyond the grid
            st.floats(0.0, 1.0),  # lower bound as a share of the time
            st.floats(0.0, 1.0),  # where the true time falls between bound and extrapolation
        ),
        min_size=1,
        max_size=8,
    ),
    floor=st.sampled_from([0.0, 1e5, 1e6]),
)
def test_within_the_grid_means_no_true_price_beyond_it_changes_the_choice(steps, floor):
    from nunasim.llm.parallelism import Parallelism
    from nunasim.llm.step_time import Breakdown

    def candidate(tokens, ps, beyond, bound):
        most = tokens / (bound * 1e-12) if bound * 1e-12 > 0 else math.inf
        return Candidate(
            Parallelism(1, 1, 1),
            tokens,
            1,
            Breakdown(ps),
            tokens / (ps * 1e-12),
            beyond,
            bound,
            most,
        )

    found = [candidate(n, t * 10**6, b, share * t * 10**6) for t, n, b, share, _ in steps]
    chosen = choose(found, floor)
    # each step beyond the grid at another price no lower than its bound
    truth = [
        candidate(
            c.batch,
            round(c.lower_bound_ps + w * (c.breakdown.total_ps - c.lower_bound_ps)),
            True,
            c.lower_bound_ps,
        )
        if c.beyond_grid and c.lower_bound_ps >= 1
        else c
        for c, (*_, w) in zip(found, steps, strict=True)
    ]
    if choice_within_grid(found, chosen, floor):
        assert truth.index(choose(truth, floor)) == found.index(chosen)


@settings(max_examples=12, deadline=None)
@given(
    name=st.sampled_from(["llama-3.1-70b", "mixtral-8x7b", "qwen3-30b-a3b"]),
    gpus=st.sampled_from([2, 8, 16]),
    phase=st.sampled_from(["prefill", "decode"]),
    floor=st.sampled_from([0.0, 1e3, 2e4, 1e12]),
)
def test_pricing_from_the_lowest_bound_up_chooses_what_pricing_everything_does(
    name, gpus, phase, floor
):
    settings_ = load_inference_settings()
    rates = rates_for(load_preset("nextgen-4die"), settings_)
    grid = PhaseGrid(batch=(1, 8, 64), seq=(1024, 4096), min_tokens_per_s_per_gpu=floor)
    model = load_model(name)
    every = candidates(model, gpus, phase, "UA", _timer(), grid, settings_, rates)
    some = contenders(Pricer(model, "UA", _timer(), settings_, rates), gpus, phase, grid)
    assert all(c in every for c in some)  # priced as the exhaustive search prices it
    chosen = choose(every, floor)
    assert choose(some, floor) == chosen
    # no pricing lifts a step above its throughput at its bound
    assert all(c.may_meet(floor) for c in every if c.meets(floor))
    if chosen.meets(floor):  # left unpriced only what cannot be faster, or meet the floor
        assert all(
            c in some or c.lower_bound_ps > chosen.breakdown.total_ps or not c.may_meet(floor)
            for c in every
        )
    else:
        assert some == every
    assert choice_within_grid(some, choose(some, floor), floor) == choice_within_grid(
        every, choose(every, floor), floor
    )


def test_steps_too_small_for_the_floor_are_not_priced():
    # Decode steps of a few sequences are fast but cannot reach the floor even at their
    # bounds: the search leaves them unpriced (their points unsimulated) and still
    # chooses what pricing every step chooses.
    settings_ = load_inference_settings()
    rates = rates_for(load_preset("nextgen-4die"), settings_)
    grid = load_study().phases["decode"]
    model, floor = load_model("mixtral-8x7b"), grid.min_tokens_per_s_per_gpu
    every = candidates(model, 16, "decode", "UA", _timer(), grid, settings_, rates)
    asked: list = []
    some = contenders(Pricer(model, "UA", _timer(asked), settings_, rates), 16, "decode", grid)
    chosen = choose(every, floor)
    assert chosen.meets(floor) and choose(some, floor) == chosen
    small = [c for c in every if c.lower_bound_ps <= chosen.breakdown.total_ps]
    small = [c for c in small if not c.may_meet(floor)]
    assert len(small) >= 5 and not any(c in some for c in small)
    assert not any(c.meets(floor) for c in small)
    # pricing them would have asked for points the search did not
    extra: list = []
    pricer = Pricer(model, "UA", _timer(extra), settings_, rates)
    for c in small:
        pricer.candidate(c.parallelism, Step("decode", c.batch, c.seq))
    assert set(extra) - set(asked)


def test_the_shipped_grid_reaches_every_collective_the_search_prices():
    # With stand-in times (alpha-beta at the ports' bandwidth), the study's own grid prices
    # every collective its search looks at from simulations: nothing is extrapolated and
    # every choice is within the grid, for the smallest and largest models and pods. A grid
    # stopping at 1 MB (as the study's once did) cannot say so.
    study = load_study()
    preset = load_preset("nextgen-4die")
    for models, gpus in ((study.quick_models, [8]), (["deepseek-v3.2"], [2, 64])):
        timer = CollectiveTimer(preset, study.collective_sizes, simulate=fake_simulator)
        table = llm_table(models, gpus, timer=timer)
        assert table.within_grid.all() and timer.extrapolated == 0
    short = tuple(size for size in study.collective_sizes if size <= 10**6)
    timer = CollectiveTimer(preset, short, simulate=fake_simulator)
    assert not llm_table(study.quick_models, [8], timer=timer).within_grid.all()


def test_the_study_threadblocks_setting_names_the_plans_count_the_search_or_a_count():
    from nunasim.errors import ConfigError
    from nunasim.experiments.llm_study import PLAN_COUNT, collective_point, study_threadblocks

    assert load_study().threadblocks == "auto"  # the paper's method is the default
    assert study_threadblocks(None, "f") == study_threadblocks("plan", "f") == PLAN_COUNT
    assert study_threadblocks(56, "f") == 56
    for bad in (0, -3, True, "some", 2.5):
        with pytest.raises(ConfigError, match="'auto', 'plan' or a count"):
            study_threadblocks(bad, "llm_study.yaml")
    # "plan" is the point of the built-in plan's own count: the same point (and cache key)
    # as no count at all
    plan = collective_point("allreduce", 4096, 8, "UA", PLAN_COUNT)
    assert plan == collective_point("allreduce", 4096, 8, "UA") and plan.threadblocks is None
    assert collective_point("allreduce", 4096, 8, "UA", "auto").threadblocks == "auto"


def test_llm_command_tbs_plan_prices_the_plans_own_count_from_a_warm_cache(tmp_path, capsys):
    from nunasim.cli.main import main
    from nunasim.experiments.llm_study import PLAN_COUNT

    cache = _warm_quick_cache(tmp_path / "cache", PLAN_COUNT)
    before = {p.name: p.read_text() for p in cache.entries()}
    argv = ["llm", "mixtral-8x7b", "--gpus", "2", "--quick", "--tbs", "plan"]
    assert main([*argv, "--cache-dir", str(cache.folder)]) == 0
    out = capsys.readouterr().out
    assert "the plan's own threadblock count" in out and "decode on 2 GPUs, UA: TPOT" in out
    assert {p.name: p.read_text() for p in cache.entries()} == before  # nothing simulated
    assert main([*argv[:-1], "several", "--cache-dir", str(cache.folder)]) == 2
    assert "'auto' or 'plan'" in capsys.readouterr().err


def test_the_study_prices_fig9s_sizes_from_fig9s_own_points():
    # The study's grid holds Fig. 9's sizes, and a searched study point there is Fig. 9's
    # point, under the same cache key: the two share their runs.
    from nunasim.experiments.cache import point_key
    from nunasim.experiments.figures import fig9
    from nunasim.experiments.llm_study import collective_point
    from nunasim.experiments.sweep import grid_points

    study = load_study()
    preset = load_preset("nextgen-4die")
    figure = {point_key(p, preset) for p in grid_points(fig9.grid(quick=False))}
    sizes = {p.size for p in grid_points(fig9.grid(quick=False))}
    assert sizes <= set(study.collective_sizes)
    for kind in fig9.COLLECTIVES:
        for size in sizes:
            for configuration in study.configurations:
                point = collective_point(
                    kind, size, 8, configuration, study.threadblocks, study.engine
                )
                assert point_key(point, preset) in figure, point


def _bounded_row(point) -> dict:
    """A stand-in simulator's row for a sweep point, never faster than the ports allow
    (as no simulation is): the search in rounds relies on that bound."""
    gpus, kind = point.gpus, point.plan
    ideal = 1e12 * point.size * (2 if kind == "allreduce" else 1) * (gpus - 1) / gpus / 7.2e12
    scale = 1.1 if point.configuration.name == "NAP+NAR" else 1.3
    return {"completion_ps": round(2e6 + scale * ideal), "point_s": 0.5}


def test_the_search_in_rounds_runs_only_and_all_the_points_the_one_at_a_time_search_needs():
    import pandas as pd

    from nunasim.experiments.llm_study import collective_point

    preset = load_preset("nextgen-4die")
    models, pods = ["llama-3.1-70b", "mixtral-8x7b"], [2, 8, 64]
    needed = []

    def simulate(*key):
        needed.append(collective_point(*key))
        return _bounded_row(needed[-1])["completion_ps"]

    alone = llm_table(models, pods, timer=CollectiveTimer(preset, GRID, simulate=simulate))
    rounds = []

    def run_many(points):
        rounds.append(points)
        return pd.DataFrame([_bounded_row(p) for p in points])

    together = llm_table(models, pods, timer=CollectiveTimer(preset, GRID), run_many=run_many)
    pd.testing.assert_frame_equal(alone, together)
    ran = [point for batch in rounds for point in batch]
    assert len(ran) == len(set(ran)) and set(ran) == set(needed)  # each once, none spare
    assert len(rounds) > 1  # the later rounds price with the earlier ones' results
    assert together.attrs["runs"] == len(needed) == together.attrs["points"]
    assert together.attrs["point_s"] == pytest.approx(0.5 * len(needed))


def test_the_default_study_runs_uas_plan_under_both_configurations(tmp_path):
    """Section 6.7: compute unchanged, so no step gains more than its communication's share
    of UA's time. Each configuration's own choice stays beside it (``own_time_ms``), and
    under ``execution: own`` it may break that bound (Llama 3.1 405B prefill: TP4 under
    NAP+NAR against UA's TP2). Priced from the shipped points."""
    from nunasim.experiments.cache import ResultCache
    from nunasim.experiments.llm_study import fig15_summary, llm_table

    models, pods = ["llama-3.1-405b", "llama-3.1-70b"], [4, 64]
    cache = ResultCache(tmp_path)
    shared = llm_table(models, pods, cache=cache)
    assert shared.attrs["runs"] == 0 and shared.attrs["execution"] == "shared"
    keys = ["model", "gpus", "phase"]
    ua = shared[shared.configuration == "UA"].set_index(keys)
    nap = shared[shared.configuration == "NAP+NAR"].set_index(keys)
    plan = ["tp", "dp", "pp", "ep", "batch", "seq", "compute_ms"]
    pd.testing.assert_frame_equal(ua[plan], nap[plan])
    assert (1 - nap.time_ms / ua.time_ms <= ua.communication_ms / ua.time_ms + 1e-12).all()
    assert (fig15_summary(shared).beyond_amdahl == 0).all()
    assert (ua.own_time_ms == ua.time_ms).all() and (nap.own_time_ms <= nap.time_ms).all()

    own = llm_table(models, pods, cache=cache, execution="own")
    mine = own.set_index([*keys, "configuration"])
    prefill = ("llama-3.1-405b", 4, "prefill")
    assert (mine.loc[(*prefill, "UA"), "tp"], mine.loc[(*prefill, "NAP+NAR"), "tp"]) == (2, 4)
    assert fig15_summary(own).beyond_amdahl.sum() > 0
    assert mine.loc[(*prefill, "NAP+NAR"), "shared_time_ms"] == nap.loc[prefill, "time_ms"]
    assert (fig15_summary(shared).own_max_reduction == fig15_summary(own).max_reduction).all()


def test_an_unknown_execution_is_refused():
    from nunasim.errors import ConfigError
    from nunasim.experiments.llm_search import study_execution

    with pytest.raises(ConfigError, match="shared or own, not 'mine'"):
        study_execution("mine")
