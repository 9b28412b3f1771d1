"""Every engine through the conformance suite (``conformance.py``), on the same scenarios."""

import pytest

from conformance import (
    CASES,
    CHECKS,
    NOT_MODELLED,
    ZERO_LOAD_CASES,
    check_zero_load_is_exact,
    engine_runner,
)
from nunasim.engine.base import ENGINES


def _skip_unmodelled(engine, check):
    reason = NOT_MODELLED.get((engine, check.__name__))
    if reason:
        pytest.skip(f"{engine} engine: {reason}")


@pytest.mark.parametrize("engine", ENGINES.names())
@pytest.mark.parametrize("case", ZERO_LOAD_CASES, ids=str)
def test_zero_load_is_exact(engine, case):
    _skip_unmodelled(engine, check_zero_load_is_exact)
    check_zero_load_is_exact(engine_runner(engine), case)


@pytest.mark.parametrize("engine", ENGINES.names())
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
def test_engine_conforms(engine, case, check):
    _skip_unmodelled(engine, check)
    check(engine_runner(engine), case)


def _early(run):
    return run._replace(completion_ps=run.completion_ps // 2)


def _lossy(run):
    landed = run.landed.copy()
    landed[next(iter(landed))] -= 1
    return run._replace(landed=landed)


_calls = iter(range(10**9))


def _flaky(run):
    return run._replace(fingerprint=(*run.fingerprint, next(_calls)))


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        (_early, "check_zero_load_is_exact"),
        (_early, "check_respects_the_lower_bound"),
        (_lossy, "check_conserves_bytes"),
        (_flaky, "check_is_deterministic"),
    ],
)
def test_the_suite_catches_a_faulty_engine(fault, check):
    import conformance

    packet = engine_runner("packet")
    case = ZERO_LOAD_CASES[0] if check == "check_zero_load_is_exact" else CASES[0]
    with pytest.raises(AssertionError):
        getattr(conformance, check)(lambda built: fault(packet(built)), case)
