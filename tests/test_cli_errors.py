"""The command's one error path: bad input is a located line and status 2, anything
unexpected a line and status 1, and ``--debug`` adds the traceback to either."""

import pytest

import nunasim.cli.plan
from nunasim.cli.main import main


def _boom(name: str) -> None:
    raise RuntimeError(f"a bug while loading {name}")


@pytest.mark.parametrize("debug", [False, True])
def test_bad_input_is_a_located_line_with_the_traceback_only_under_debug(capsys, debug):
    status = main([*(["--debug"] if debug else []), "plan", "show", "no-such.xml"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.splitlines()[-1].startswith("nunasim: error: no-such.xml: neither a built-in")
    assert ("Traceback" in err) == debug


@pytest.mark.parametrize("debug", [False, True])
def test_an_unexpected_exception_is_an_internal_error_with_status_1(capsys, monkeypatch, debug):
    monkeypatch.setattr(nunasim.cli.plan, "load_plan", _boom)
    status = main([*(["--debug"] if debug else []), "plan", "show", "allgather:gpus=2"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.splitlines()[-1] == (
        "nunasim: internal error: RuntimeError: a bug while loading allgather:gpus=2 "
        "(rerun with --debug for the traceback)"
    )
    assert ("Traceback" in err) == debug


def test_a_usage_error_is_status_2_without_a_traceback(capsys):
    status = main(["simulate", "--gpus", "many"])
    err = capsys.readouterr().err
    assert status == 2 and "Invalid value for '--gpus'" in err and "Traceback" not in err
