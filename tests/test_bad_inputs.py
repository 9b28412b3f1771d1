"""The bad-input corpus: every case is refused with a located error, exit status 2 and no
traceback, in a fresh process capped at 1 GiB of address space and 10 s, and leaves no
output file behind."""

import resource
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "bad_inputs"
MEMORY_CAP = 1 << 30
TIME_CAP_S = 10


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def nunasim(*argv, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nunasim", *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        preexec_fn=_capped,
        timeout=TIME_CAP_S,
    )


def _huge_file(folder: Path) -> Path:
    path = folder / "huge.yaml"
    path.write_text("description: " + "x" * (3 << 20) + "\n")
    return path


def _huge_value(folder: Path) -> Path:
    path = folder / "huge-value.yaml"
    original = (
        Path(__file__).parents[1] / "src" / "nunasim" / "hardware" / "presets" / "nextgen-4die.yaml"
    ).read_text()
    path.write_text(original.replace("clock: 1.2GHz", "clock: " + "9" * 500_000 + "GHz"))
    return path


# (case, how to get the preset file, what the message must say)
PRESET_CASES = [
    ("alias bomb", lambda tmp: CORPUS / "alias-bomb.yaml", "expands to more than"),
    ("deep nesting", lambda tmp: CORPUS / "deep-nesting.yaml", "nested too deeply"),
    ("huge file", _huge_file, "more than a description needs"),
    ("huge value", _huge_value, "socket.noc.clock"),
]


@pytest.mark.parametrize(
    ("make", "words"), [c[1:] for c in PRESET_CASES], ids=[c[0] for c in PRESET_CASES]
)
@pytest.mark.parametrize("command", [["preset", "show"], ["simulate", "--json", "--preset"]])
def test_hostile_presets_are_refused(tmp_path, make, words, command):
    preset = make(tmp_path)
    before = set(tmp_path.iterdir())
    done = nunasim(*command, preset, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    message = done.stderr.strip()
    assert message.startswith(f"nunasim: error: {preset}"), message[:300]
    assert words in message
    assert len(message) < 3000  # a short prefix of the offending value, not all of it
    assert set(tmp_path.iterdir()) == before  # nothing written
