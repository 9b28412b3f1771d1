"""Kill safety: a run interrupted at any moment (Ctrl-C's SIGINT, or SIGTERM) ends with the
shell's status for that signal, leaves an earlier output file byte for byte as it was or
replaces it with the complete new one, and leaves no temporary file behind."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# A run that writes two tables: long enough that a signal can land in its writing too.
RUN = [
    "simulate",
    "--size",
    "1MB",
    "--tbs",
    "7",
    "--config",
    "UA",
    "--json",
    "--stores",
    "stores.csv",
    "--resources",
    "resources.parquet",
]
OUTPUTS = ("stores.csv", "resources.parquet")
EARLIER = b"an earlier result\n"
# What an interrupted run may end with: the shell's 128 + signal when nunasim handled the
# signal, the negative signal number when it arrived before nunasim had started (Python's
# own handling), or 0 when the run finished first.
STATUSES = {signal.SIGINT: {130, -signal.SIGINT, 0}, signal.SIGTERM: {143, -signal.SIGTERM, 0}}


def _start(folder: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "nunasim", *RUN],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )


@pytest.fixture(scope="module")
def complete_outputs(tmp_path_factory) -> dict[str, bytes]:
    """The outputs of the run left to finish (runs are deterministic)."""
    folder = tmp_path_factory.mktemp("complete")
    run = _start(folder)
    _, err = run.communicate(timeout=300)
    assert run.returncode == 0, err
    return {name: (folder / name).read_bytes() for name in OUTPUTS}


def _interrupt(delay_s: float, signum: int, complete: dict[str, bytes]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="nunasim-kill-"))
    try:
        (folder / "stores.csv").write_bytes(EARLIER)  # an earlier result to keep or replace
        run = _start(folder)
        time.sleep(delay_s)
        run.send_signal(signum)
        _, err = run.communicate(timeout=300)
        assert run.returncode in STATUSES[signum], err
        assert b"Traceback" not in err or run.returncode < 0
        left = {p.name for p in folder.iterdir()}
        assert left <= set(OUTPUTS), f"left behind: {left - set(OUTPUTS)}"
        assert (folder / "stores.csv").read_bytes() in (EARLIER, complete["stores.csv"])
        if "resources.parquet" in left:
            assert (folder / "resources.parquet").read_bytes() == complete["resources.parquet"]
        if run.returncode == 0:
            assert {name: (folder / name).read_bytes() for name in OUTPUTS} == complete
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_SIGNALS = st.sampled_from([signal.SIGINT, signal.SIGTERM])
_SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.function_scoped_fixture]}


@settings(max_examples=3, **_SETTINGS)
@given(delay_s=st.floats(0.0, 4.0), signum=_SIGNALS)
def test_an_interrupted_run_leaves_whole_files_or_none(complete_outputs, delay_s, signum):
    _interrupt(delay_s, signum, complete_outputs)


@pytest.mark.slow
@settings(max_examples=25, **_SETTINGS)
@given(delay_s=st.floats(0.0, 12.0), signum=_SIGNALS)
def test_runs_interrupted_anywhere_leave_whole_files_or_none(complete_outputs, delay_s, signum):
    _interrupt(delay_s, signum, complete_outputs)
