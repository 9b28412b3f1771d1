"""The rule a claim's number is judged by (``figures.common.verdict``): a speedup or a ratio
by its gain (the value less 1) within 25 % of the paper's gain, a percent change, a share
or a decay within 25 % of the paper's, a latency within 10 %, a range within that of its
ends, and only in the paper's direction; exactly at the band's edges."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.experiments.figures import FIGURES
from nunasim.experiments.figures.common import (
    GAIN_KINDS,
    TOLERANCES,
    claim_numbers,
    holding_band,
    judged,
    tolerance_text,
    verdict,
)


def _number(low: float, high: float, kind: str) -> tuple[tuple[float, float], str, float]:
    return (low, high), kind, TOLERANCES[kind]


def test_the_kinds_and_their_tolerances():
    assert TOLERANCES == {
        "speedup": 0.25,
        "ratio": 0.25,
        "change": 0.25,
        "share": 0.25,
        "decay": 0.25,
        "latency": 0.10,
    }
    assert {"speedup", "ratio"} == GAIN_KINDS


@pytest.mark.parametrize(
    ("value", "holds"),
    [(1.375, True), (1.625, True), (1.5, True), (1.37, False), (1.63, False), (1.2, False)],
)
def test_a_speedup_of_1_5x_holds_from_1_375_to_1_625x(value, holds):
    _, held, said = verdict(True, value, _number(1.5, 1.5, "speedup"))
    assert held is holds and (said == "holds") is holds


def test_a_range_holds_within_a_quarter_of_its_ends_gains():
    number = _number(1.5, 1.9, "speedup")
    assert holding_band(number) == (0.375, 1.125)  # 1.375x to 2.125x
    assert verdict(True, (1.375, 2.125), number)[1]
    assert not verdict(True, (1.42, 1.276), number)[1]
    magnitude, _, said = verdict(True, (1.42, 1.276), number)
    assert magnitude == pytest.approx(0.276 / 0.5)
    assert said == "direction only (0.55x the paper's gain)"


@pytest.mark.parametrize(
    ("kind", "paper", "edges"),
    [
        ("change", -6.0, (-7.5, -4.5)),
        ("share", 20.0, (15.0, 25.0)),
        ("latency", 920.0, (828.0, 1012.0)),
        ("ratio", 3.0, (2.5, 3.5)),  # a gain of 2, within 0.5
    ],
)
def test_each_kinds_band_edges_hold_and_just_beyond_them_does_not(kind, paper, edges):
    number = _number(paper, paper, kind)
    low, high = edges
    for edge, outward in ((low, -math.inf), (high, math.inf)):
        assert verdict(True, edge, number)[1], (kind, edge)
        beyond = math.nextafter(edge, outward)
        assert not verdict(True, beyond, number)[1], (kind, beyond)


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(sorted(TOLERANCES)),
    paper=st.floats(-50, 50, allow_nan=False).filter(lambda v: abs(v) > 1e-3),
    width=st.floats(0, 5, allow_nan=False),
    position=st.floats(-1, 2, allow_nan=False),
)
def test_a_number_holds_exactly_when_its_judged_value_is_in_the_band(kind, paper, width, position):
    """Against the rule written out: judged value (gain for a speedup or a ratio) between
    the low end's less 25 % (10 % for a latency) of itself and the high end's plus as much."""
    low = paper
    high = paper + width
    tolerance = TOLERANCES[kind]
    a, b = (low - 1, high - 1) if kind in GAIN_KINDS else (low, high)
    lowest, highest = a - tolerance * abs(a), b + tolerance * abs(b)
    candidate = lowest + position * (highest - lowest)
    value = candidate + 1 if kind in GAIN_KINDS else candidate
    _, holds, _ = verdict(True, value, ((low, high), kind, tolerance))
    assert holds is (lowest <= judged(kind, value) <= highest)
    # Out of the paper's direction nothing holds, however close.
    assert verdict(False, value, ((low, high), kind, tolerance))[1] is False


@settings(max_examples=100, deadline=None)
@given(gain=st.floats(0.01, 10, allow_nan=False))
def test_the_band_of_a_speedup_is_a_quarter_of_its_gain_either_way(gain):
    speedup = 1 + gain
    gain = speedup - 1  # as the rule computes it, rounded
    number = _number(speedup, speedup, "speedup")
    assert holding_band(number) == (gain - 0.25 * gain, gain + 0.25 * gain)
    assert verdict(True, speedup, number)[1]


def test_a_decay_is_judged_by_the_fraction_of_the_gain_kept():
    """Fig. 12's 1.5-1.9x up to 1 MB, 1.1x by 64 MB keeps 1/9 to 1/5 of the gain; a decay
    holds from 0.75 of 1/9 to 1.25 of 1/5, by its value, not a gain."""
    number = _number(1 / 9, 1 / 5, "decay")
    assert holding_band(number) == (1 / 9 - 0.25 / 9, 0.2 + 0.25 * 0.2)
    assert verdict(True, 0.25, number)[1] and verdict(True, 1 / 12, number)[1]
    assert not verdict(True, math.nextafter(0.25, 1), number)[1]
    _, holds, said = verdict(True, 0.93, number)
    assert not holds and said == "direction only (4.65x the paper's)"


def test_no_latency_holds_without_its_number_and_none_without_a_direction_is_judged():
    number = _number(920, 920, "latency")
    assert verdict(None, 1100.0, number)[2] == "no (1.20x the paper's)"
    assert verdict(None, None, None)[2] == "not measured"
    assert verdict(True, None, number)[2] == "holds"


def test_every_claim_of_paper_yaml_is_judged_by_a_known_kind():
    for figure in FIGURES:
        for claim, ((low, high), kind, tolerance) in claim_numbers(figure).items():
            assert kind in TOLERANCES, (figure, claim)
            assert low <= high and 0 < tolerance < 1, (figure, claim)


def test_the_rules_words_name_every_kind_and_the_example():
    text = tolerance_text()
    assert "1.375x to 1.625x" in text and "gain" in text and "10 %" in text
    for words in ("speedup", "ratio", "percent change", "share", "decay", "latency"):
        assert words in text


def test_fig12s_decay_in_paper_yaml_is_a_tenth_to_a_fifth_of_the_gain_kept():
    (low, high), kind, tolerance = claim_numbers("fig12")["decay"]
    assert kind == "decay" and tolerance == 0.25
    assert (low, high) == pytest.approx((0.1 / 0.9, 0.1 / 0.5))
