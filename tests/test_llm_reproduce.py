"""The quick Fig. 15 study end to end through the packet simulator (slow: tens of runs)."""

from __future__ import annotations

import pytest

from nunasim.experiments.cache import ResultCache
from nunasim.experiments.llm_study import (
    fig2_table,
    fig15_summary,
    fig15_table,
    load_study,
    size_cdf,
)
from nunasim.plotting.llm import draw_fig15, draw_size_cdfs


@pytest.mark.slow
def test_quick_fig15_runs_and_summarises(tmp_path):
    study = load_study()
    table = fig15_table(quick=True, cache=ResultCache(tmp_path / "cache"))
    expected = len(study.quick_models) * len(study.quick_gpus) * 2 * len(study.configurations)
    assert len(table) == expected
    assert (table.time_ms >= table.compute_ms).all()
    parts = [
        c for c in table.columns if c.endswith("_ms") and c not in ("time_ms", "communication_ms")
    ]
    assert (table[parts].sum(axis=1) - table.time_ms).abs().max() < 1e-6
    summary = fig15_summary(table)
    assert list(summary.metric) == ["TTFT", "TPOT"]
    draw_fig15(table, study.quick_gpus[0]).savefig(tmp_path / "fig15.png")
    draw_size_cdfs(size_cdf(fig2_table(study.quick_models)), "Fig. 2").savefig(
        tmp_path / "fig2.png"
    )
    assert (tmp_path / "fig15.png").stat().st_size > 0
