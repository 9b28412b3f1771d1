"""Fuzzing the command line: every command, run with random garbage for its options and
files, ends with exit status 0 or 2 and a one-line message, never an internal error
(status 1) or a traceback.

The commands run in-process (``nunasim.cli.main``), under a memory budget no run fits, so
that a combination that would simulate is refused at admission instead of running.
"""

import contextlib
import io
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nunasim.cli.main import main

FIXTURES = Path(__file__).parent / "fixtures" / "plans"
BUDGET = ["--max-memory", "60MB"]  # below any run's fixed memory: every run is refused

# Values that are wrong for most options, and some that are right for some.
GARBAGE = [
    "",
    " ",
    "0",
    "-1",
    "1.5",
    "1e30",
    "nan",
    "inf",
    "-inf",
    "abc",
    "1TB",
    "1b",
    "100000",
    "99999999999999999999999",
    "auto",
    ",",
    "1MB,,2MB",
    "\x7f",
    "é",
    "-",
    ".",
    "no/such/file.xml",
    "binary.xml",
    "empty.json",
    "empty.yaml",
    "folder",
    "/proc/x.png",
    "out.txt",
    "out.csv",
    "out.json",
    "out.png",
    "UA",
    "NAP+NAR",
    "allgather",
    "allgather:gpus=2:tbs=1",
    "allreduce:ring:gpus=3",
    "alltoall:gpus=0",
    "4kB",
    "64kB",
    "2",
    "8",
    "nextgen-4die",
    "monolithic",
    str(FIXTURES / "ap-1pass.xml"),
    str(FIXTURES / "allreduce_packet.json"),
]

# Each command's words, its positional argument (if any) and its options with a value
# (flags are drawn separately).
COMMANDS = {
    "preset show": (True, [], ["--json"]),
    "plan show": (True, ["--size"], ["--json", "--per-gpu"]),
    "plan check": (True, [], []),
    "place": (
        True,
        ["--size", "--preset", "--config", "--nar", "--seed", "--group-by", "--layout", "-o"],
        ["--json"],
    ),
    "simulate": (
        False,
        [
            "--preset",
            "--collective",
            "--algorithm",
            "--size",
            "--gpus",
            "--config",
            "--nar",
            "--tbs",
            "--layout",
            "--plan",
            "--seed",
            "--gemm-tiles",
            "--gemm-tile",
            "--stores",
            "--resources",
        ],
        ["--json"],
    ),
    "headline": (False, ["--preset", "--plan", "--size", "--out"], []),
    "floorplan": (True, ["-o", "--nar"], []),
    "fig9": (False, ["--preset", "--collectives", "--sizes", "--gpus", "--configs", "-o"], []),
}
BUDGETED = {"place", "simulate", "headline", "fig9"}


@st.composite
def command_lines(draw) -> list[str]:
    name = draw(st.sampled_from(sorted(COMMANDS)))
    positional, options, flags = COMMANDS[name]
    argv = name.split()
    if name in BUDGETED:
        argv += BUDGET
    if positional:
        argv.append(draw(st.sampled_from(GARBAGE)))
    for option in (
        draw(st.lists(st.sampled_from(options), max_size=4, unique=True)) if options else ()
    ):
        argv += [option, draw(st.sampled_from(GARBAGE))]
    if flags:
        argv += draw(st.lists(st.sampled_from(flags), max_size=len(flags), unique=True))
    return argv


@pytest.fixture(scope="module")
def playground(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "binary.xml").write_bytes(b"\x7fELF\x00\xff\xfe")
    (folder / "empty.json").write_text("")
    (folder / "empty.yaml").write_text("")
    (folder / "folder").mkdir()
    return folder


def _run(argv: list[str], folder: Path) -> tuple[int, str]:
    """Run the command in a fresh copy of ``folder``'s files: its status and its stderr."""
    err = io.StringIO()
    here = os.getcwd()
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        for item in folder.iterdir():
            if item.is_file():
                (Path(scratch) / item.name).write_bytes(item.read_bytes())
        (Path(scratch) / "folder").mkdir()
        os.chdir(scratch)
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                status = main(argv)
        finally:
            os.chdir(here)
    return status, err.getvalue()


_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


def _refused_cleanly(argv: list[str], folder: Path) -> None:
    status, err = _run(argv, folder)
    assert status in (0, 2), f"{argv}: status {status}: {err}"
    assert "Traceback" not in err, argv
    if status == 2:
        assert err.strip(), argv


@settings(max_examples=60, **_SETTINGS)
@given(argv=command_lines())
def test_garbage_on_the_command_line_is_a_located_error(playground, argv):
    _refused_cleanly(argv, playground)


@pytest.mark.slow
@settings(max_examples=1000, **_SETTINGS)
@given(argv=command_lines())
def test_much_garbage_on_the_command_line_is_a_located_error(playground, argv):
    _refused_cleanly(argv, playground)
