"""``nunasim calibrate``: residuals judged by the stated rule to the boundary, readings kept
inside their declared ranges, Table 2's numbers never moved, a fit reproduced from its
seed, and the shipped calibrated preset reproduced by the command."""

import pytest

from cli_run import run
from nunasim.experiments.calibrate import (
    Claim,
    base_document,
    fit,
    load_calibration,
    preset_of,
    with_readings,
    zero_load_claims,
)
from nunasim.io.presets import load_preset

ZERO_LOAD = ["s1-transfer-worst", "s1-transfer-mean", "s1-noc-worst", "s1-noc-mean"]


def test_a_ratio_is_judged_by_its_gain_to_the_boundary():
    claim = Claim("c", (1.8, 1.8), "ratio", "", 0.25)
    assert claim.residual(1.8) == 0
    assert claim.residual(2.0) == pytest.approx(1.0)  # gain 1.0 against 0.8: +25 %
    assert claim.residual(1.6) == pytest.approx(-1.0)
    assert abs(claim.residual(2.001)) > 1 and abs(claim.residual(1.599)) > 1
    ranged = Claim("r", (1.5, 1.9), "speedup", "", 0.25)
    assert ranged.residual(1.7) == 0
    assert ranged.residual(1.375) == pytest.approx(-1.0)  # gain 0.375: 25 % under 0.5
    assert ranged.residual(2.125) == pytest.approx(1.0)  # gain 1.125: 25 % over 0.9


def test_a_latency_is_judged_within_ten_percent():
    claim = Claim("l", (900.0, 900.0), "latency", "", 0.10)
    assert claim.residual(990) == pytest.approx(1.0)
    assert claim.residual(810) == pytest.approx(-1.0)
    assert claim.residual(1000) > 1


def test_every_declared_reading_has_a_range_a_source_and_its_literal_value():
    calibration = load_calibration()
    literal = load_preset(calibration.literal).socket
    for reading in calibration.readings.values():
        assert reading.low <= reading.literal <= reading.high, reading.name
        assert reading.source and reading.reads
    # The literal values are the literal preset's own readings.
    r = calibration.readings
    assert r["die_crossing_cycles"].literal == literal.die_crossing_cycles
    assert r["bisection_bandwidth"].literal * 1e12 / 12 == pytest.approx(literal.link_bandwidth)
    assert r["io_link_bandwidth"].literal * 1e9 == pytest.approx(literal.link_bandwidth, rel=1e-5)
    assert set(calibration.train) <= set(calibration.claims)


def test_readings_move_only_their_keys_never_table_2s_numbers():
    calibration = load_calibration()
    r = calibration.readings
    document = base_document(calibration.base)
    moved = preset_of(
        with_readings(
            document,
            {
                r["io_crossing_cycles"]: 37.4,
                r["io_link_bandwidth"]: 512,
                r["bisection_bandwidth"]: 17,
            },
            "moved",
        )
    )
    base = load_preset(calibration.base)
    s, b = moved.socket, base.socket
    assert s.io_crossing_cycles == 37  # whole cycles
    assert s.io_link_bandwidth == pytest.approx(512e9)
    assert s.link_bandwidth == pytest.approx(20e12 / 12)  # a choice: 10 or 20 TB/s
    for field in ("cycles_per_hop", "noc_clock_hz", "l1_latency_ps", "outstanding_requests"):
        assert getattr(s, field) == getattr(b, field)
    assert s.stacks == b.stacks and s.ports == b.ports and s.cus == b.cus
    assert moved.pod.plane_latency_ps == base.pod.plane_latency_ps
    assert moved.pod.port_bandwidth == base.pod.port_bandwidth


def test_zero_load_claims_of_the_literal_preset():
    values = zero_load_claims(load_preset("nextgen-4die"))
    # Its best NoC part is two hops (a CU on its stack's router, a port one hop away, the
    # remote stack one hop from its port): 2 x 8,333 ps; the worst write crosses the
    # socket twice (23 + 5 hops out, 22 + 5 back to the farthest stack: 55 hops).
    assert values["s1-noc-worst"] == pytest.approx(54.5)
    assert values["s313-noc-max"] == pytest.approx(55 * 8.333)


def _small_fit(seed: int):
    calibration = load_calibration()
    return fit(
        calibration,
        ["io_crossing_cycles", "die_crossing_cycles"],
        ZERO_LOAD,
        [],
        seed=seed,
        maxiter=2,
        popsize=3,
    )


def test_a_fit_is_reproduced_from_its_seed_and_stays_in_range():
    first, again = _small_fit(3), _small_fit(3)
    assert first.readings == again.readings
    assert first.claims.equals(again.claims)
    calibration = load_calibration()
    for name, value in first.readings.items():
        reading = calibration.readings[name]
        assert reading.low <= value <= reading.high
    # The fit is better than the literal reading on what it was trained on.
    c = first.claims
    assert (c["residual fitted"] ** 2).mean() < (c["residual literal"] ** 2).mean()


def test_unknown_names_are_refused_with_the_known_ones(capsys, tmp_path):
    code, _, err = run(capsys, "calibrate", "--readings", "hop_latency", "--out", tmp_path / "c")
    assert code == 2
    assert "unknown reading hop_latency" in err
    assert "io_crossing_cycles" in err
    assert not (tmp_path / "c").exists()


@pytest.mark.slow
def test_the_shipped_calibrated_preset_is_the_commands_default_fit(tmp_path):
    calibration = load_calibration()
    result = fit(
        calibration,
        list(calibration.readings),
        list(calibration.train),
        [],
        seed=0,
    )
    shipped = load_preset("nextgen-4die-calibrated")
    fitted = preset_of(result.document)
    assert repr(fitted.pod) == repr(shipped.pod)
