"""The bad-input corpus: every case is refused with a located error, exit status 2 and no
traceback, in a fresh process capped at 1 GiB of address space and 30 s of CPU (the
kernel stops it past either; CPU time, unlike the wall clock, does not grow on a busy
machine), and leaves no output file behind."""

import re
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "bad_inputs"
MEMORY_CAP = 1 << 30
CPU_CAP_S = 30
# Only a guard against a process that waits forever, never a measure of speed.
HANG_GUARD_S = 600


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_CAP_S, CPU_CAP_S))


# A long-running command's progress line in a log ("simulate: starting, still running,
# 10 s"): how many appear before a refusal depends on the machine's load, not the input.
PROGRESS_LINE = re.compile(r"^[a-z0-9]+: .*still running, [0-9]+ s$")


def messages(stderr: str) -> str:
    """``stderr`` without its progress lines."""
    return "".join(
        line for line in stderr.splitlines(keepends=True) if not PROGRESS_LINE.match(line.strip())
    )


def nunasim(*argv, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nunasim", *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        preexec_fn=_capped,
        timeout=HANG_GUARD_S,
    )


def _huge_file(folder: Path) -> Path:
    path = folder / "huge.yaml"
    path.write_text("description: " + "x" * (3 << 20) + "\n")
    return path


def _shipped_preset_with(folder: Path, name: str, old: str, new: str) -> Path:
    """The shipped nextgen-4die preset with ``old`` replaced by ``new``, as a file."""
    shipped = Path(__file__).parents[1] / "src" / "nunasim" / "hardware" / "presets"
    original = (shipped / "nextgen-4die.yaml").read_text()
    assert old in original
    path = folder / name
    path.write_text(original.replace(old, new))
    return path


def _huge_value(folder: Path) -> Path:
    return _shipped_preset_with(
        folder, "huge-value.yaml", "clock: 1.2GHz", "clock: " + "9" * 500_000 + "GHz"
    )


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


# (case, argv, what the message must say); every case runs in a folder holding a fig9.csv
# that must survive untouched.
OPTION_CASES = [
    ("fig9 no sizes", ["fig9", "--sizes", ""], "--sizes needs at least one value"),
    ("fig9 only commas", ["fig9", "--sizes", ","], "--sizes needs at least one value"),
    ("fig9 empty size", ["fig9", "--sizes", "1MB,,2MB"], "has an empty value"),
    ("fig9 no collectives", ["fig9", "--collectives", ""], "--collectives needs at least one"),
    ("fig9 no configurations", ["fig9", "--configs", ""], "--configs needs at least one"),
    ("fig9 no pods", ["fig9", "--gpus", ""], "--gpus needs at least one value"),
    ("fig9 table as text", ["fig9", "-o", "out.txt"], "written as .csv or .parquet"),
    ("fig9 unwritable table", ["fig9", "-o", "/proc/fig9.csv"], "cannot write into its folder"),
    ("stores as xlsx", ["simulate", "--stores", "s.xlsx"], "written as .csv or .parquet"),
    ("histogram in no folder", ["simulate", "--hist", "no/such/h.png"], "does not exist"),
    ("histogram unwritable", ["simulate", "--hist", "/proc/h.png"], "cannot write"),
    ("resources unwritable", ["simulate", "--resources", "/proc/r.csv"], "cannot write"),
    ("placement as text", ["place", "allgather", "-o", "p.txt"], "written as .json"),
    ("granularity UA cannot use", ["simulate", "--config", "UA", "--nar", "8"], "does not apply"),
    ("GEMM tile without a GEMM", ["simulate", "--gemm-tile", "g.yaml"], "drop --gemm-tile"),
    (
        "grouping UA does not use",
        ["place", "allgather:gpus=8", "--config", "UA", "--group-by", "all"],
        "drop --group-by",
    ),
    (
        "plan file with --tbs",
        [
            "simulate",
            "--plan",
            CORPUS.parent / "fixtures" / "plans" / "allreduce.json",
            "--tbs",
            "4",
        ],
        "drop --tbs",
    ),
    ("size of a terabyte", ["simulate", "--size", "1TB", "--tbs", "7"], "flow engine's limits"),
    (
        "a terabyte on the packet engine",
        ["simulate", "--size", "1TB", "--tbs", "7", "--engine", "packet"],
        "GB of arrays",
    ),
    ("budget of nothing", ["simulate", "--max-memory", "0"], "--max-memory must be positive"),
    ("budget in no unit", ["simulate", "--max-memory", "8 apples"], "--max-memory: '8 apples'"),
    ("run beyond the budget", ["simulate", "--max-memory", "300MB", "--size", "32MB"], "about 4"),
    ("budget below any run", ["simulate", "--max-memory", "1MB"], "give a budget of at least"),
    ("placement beyond the budget", ["place", "allgather:gpus=8", "--max-memory", "1MB"], "budget"),
    ("headline beyond the budget", ["headline", "--max-memory", "1MB", "--out", "new"], "budget"),
    ("fig9 beyond the budget", ["fig9", "--max-memory", "1MB", "-o", "f.csv"], "budget"),
    ("size of 1e30 bytes", ["simulate", "--size", "1e30", "--tbs", "7"], "flow engine's limits"),
    (
        "1e30 bytes on the packet engine",
        ["simulate", "--size", "1e30", "--tbs", "7", "--engine", "packet"],
        "more than the packet",
    ),
    # under this file's memory cap the flow engine's page tables alone do not fit
    ("64 GPUs at 1 GB", ["simulate", "--gpus", "64", "--size", "1GB"], "MB of page tables"),
    (
        "64 GPUs at 1 GB on the packet engine",
        ["simulate", "--gpus", "64", "--size", "1GB", "--engine", "packet"],
        "at most about",
    ),
    ("100,000 GPUs", ["simulate", "--gpus", "100000", "--tbs", "1"], "more than 256 GPUs"),
    ("100,000 threadblocks", ["simulate", "--tbs", "100000"], "threadblocks"),
    ("plan of 100,000 GPUs", ["plan", "show", "allgather:gpus=100000"], "more than 256"),
    (
        "direct plan of 100,000 GPUs",
        ["plan", "show", "allgather:direct:gpus=100000"],
        "more than 256",
    ),
    ("plan of a folder", ["simulate", "--plan", "."], ".: is a folder, not a plan file"),
    ("preset of a folder", ["simulate", "--preset", "."], ".: is a folder, not a preset file"),
    ("plan of no file", ["place", "no-such.xml"], "no-such.xml: neither a built-in plan"),
    ("headline size 0", ["headline", "--size", "0", "--out", "new"], "must be positive"),
    ("headline unwritable", ["headline", "--out", "/proc/out"], "cannot write"),
]


@pytest.mark.parametrize(
    ("argv", "words"), [c[1:] for c in OPTION_CASES], ids=[c[0] for c in OPTION_CASES]
)
def test_bad_options_are_refused_before_anything_runs(tmp_path, argv, words):
    kept = tmp_path / "fig9.csv"
    kept.write_text("an earlier result\n")
    done = nunasim(*argv, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert messages(done.stderr).startswith("nunasim: error: ") and words in done.stderr, (
        done.stderr
    )
    assert [p.name for p in tmp_path.iterdir()] == ["fig9.csv"]  # nothing created
    assert kept.read_text() == "an earlier result\n"  # nothing damaged


@pytest.mark.parametrize("command", [["simulate"], ["place", "allgather"], ["noc"]])
def test_a_negative_seed_is_a_usage_error(tmp_path, command):
    done = nunasim(*command, "--seed", "-1", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "Invalid value for '--seed'" in done.stderr


def test_a_run_beyond_the_engines_time_range_is_refused_before_it_runs(tmp_path):
    preset = _shipped_preset_with(
        tmp_path, "slow-ports.yaml", "port_bandwidth: 50GB/s", "port_bandwidth: 1kB/s"
    )
    # An explicit budget: the default one is half the address space left under the test's
    # 1 GiB cap, which depends on what the imports have mapped (docs/limits.md).
    done = nunasim(
        "simulate", "--preset", preset, "--tbs", "7", "--max-memory", "400MB", cwd=tmp_path
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "of simulated time, more than the packet engine's" in done.stderr


def test_the_budget_comes_from_the_environment_when_not_given(tmp_path, monkeypatch):
    monkeypatch.setenv("NUNASIM_MAX_MEMORY", "1MB")
    done = nunasim("simulate", "--tbs", "7", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "($NUNASIM_MAX_MEMORY)" in done.stderr
    monkeypatch.setenv("NUNASIM_MAX_MEMORY", "lots")
    done = nunasim("simulate", "--tbs", "7", cwd=tmp_path)
    assert done.returncode == 2
    assert messages(done.stderr).startswith("nunasim: error: $NUNASIM_MAX_MEMORY")


def _deep_json(folder: Path) -> Path:
    path = folder / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


def _huge_number_json(folder: Path) -> Path:
    path = folder / "huge-number.json"
    path.write_text('{"name": "x", "gpus": [{"id": 1' + "0" * 100_000 + "}]}")
    return path


def _non_finite_json(folder: Path) -> Path:
    path = folder / "non-finite.json"
    path.write_text('{"name": "x", "gpus": [{"id": 1e999}]}')
    return path


def _huge_buffer(folder: Path) -> Path:
    text = (CORPUS / "wrong-result.xml").read_text()
    path = folder / "huge-buffer.xml"
    path.write_text(text.replace('o_chunks="2"', 'o_chunks="100000000000"'))
    return path


def _large_file(folder: Path) -> Path:
    path = folder / "large.xml"
    with path.open("wb") as handle:
        handle.truncate(65 << 20)  # sparse: no disk used
    return path


def _corpus(name: str) -> Callable[[Path], Path]:
    return lambda tmp: CORPUS / name


# (case, how to get the plan file, what the message must say after the file's name)
PLAN_FILE_CASES = [
    ("billion laughs", _corpus("billion-laughs.xml"), "refused unsafe XML"),
    ("external entity", _corpus("external-entity.xml"), "refused unsafe XML"),
    ("truncated XML", _corpus("truncated.xml"), "not well-formed XML"),
    ("binary file", _corpus("binary.xml"), "is not UTF-8 text"),
    ("UTF-16 file", _corpus("utf16.xml"), "is not UTF-8 text"),
    ("truncated JSON", _corpus("truncated.json"), "not valid JSON"),
    ("empty JSON", _corpus("empty.json"), "not valid JSON"),
    ("deeply nested JSON", _deep_json, "nested too deeply"),
    ("huge JSON number", _huge_number_json, "a number of 100,001 digits"),
    ("non-finite JSON number", _non_finite_json, "is not finite"),
    ("file of 65 MiB", _large_file, "is larger than 64 MiB"),
    ("buffer of 1e11 chunks", _huge_buffer, "gpu 0: attribute o_chunks=100,000,000,000 is more"),
    ("chunk offset out of range", _corpus("chunk-offset-out-of-range.xml"), "reaches past"),
    ("dependency cycle", _corpus("dependency-cycle.xml"), "deadlock"),
    ("wrong result", _corpus("wrong-result.xml"), "must hold"),
]

# Each command that reads a plan, with an output it must not create.
PLAN_COMMANDS = {
    "simulate": lambda plan: ["simulate", "--plan", plan, "--stores", "stores.csv"],
    "place": lambda plan: ["place", plan, "-o", "placement.json"],
    "check": lambda plan: ["plan", "check", plan],
}


# A file that does not parse fails alike in every command (one loader): ``simulate`` runs
# them all, the other commands only in the slow suite. A plan that parses but is wrong goes
# through each command's own path to the checker, so each command runs it.
MALFORMED = {"chunk offset out of range", "dependency cycle", "wrong result"}
_SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    ("make", "words", "command"),
    [
        pytest.param(
            *case[1:],
            command,
            id=f"{case[0]}-{command}",
            marks=() if command == "simulate" or case[0] in MALFORMED else _SLOW,
        )
        for case in PLAN_FILE_CASES
        for command in PLAN_COMMANDS
    ],
)
def test_hostile_and_malformed_plans_are_refused(tmp_path, make, words, command):
    plan = make(tmp_path)
    before = {p.name: p.stat().st_size for p in tmp_path.iterdir()}
    done = nunasim(*PLAN_COMMANDS[command](plan), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    message = done.stderr.strip()
    assert message.startswith(f"nunasim: error: {plan}: "), message[:300]
    assert words in message
    assert len(message) < 3000
    assert {p.name: p.stat().st_size for p in tmp_path.iterdir()} == before


# (case, what to change in the shipped preset, the element and what the message says)
PRESET_LIMIT_CASES = [
    (
        "10000 x 10000 mesh",
        ("mesh: {width: 24, height: 6}", "mesh: {width: 10000, height: 10000}"),
        "socket.mesh: 100,000,000 routers, more than",
    ),
    (
        "huge port count",
        ("{router: [0, 0], count: 12}", "{router: [0, 0], count: 100000000}"),
        "socket.ports[0].count: 100,000,000 I/O ports",
    ),
    (
        "huge CU count",
        ("cus_per_router: 4", "cus_per_router: 1000000"),
        "socket.compute.cus_per_router: 144,000,000 CUs",
    ),
    (
        "huge request window",
        ("outstanding_requests: 700", "outstanding_requests: 10000000000"),
        "socket.compute.outstanding_requests: must be at most",
    ),
    ("pod of 100,000", ("sockets: 8", "sockets: 100000"), "pod.sockets: must be at most 256"),
    ("latin-1 file", None, "is not UTF-8 text"),
]


@pytest.mark.parametrize(
    ("change", "words"),
    [c[1:] for c in PRESET_LIMIT_CASES],
    ids=[c[0] for c in PRESET_LIMIT_CASES],
)
def test_presets_beyond_the_limits_are_refused_with_their_element(tmp_path, change, words):
    if change is None:
        preset = CORPUS / "latin1.yaml"
    else:
        preset = _shipped_preset_with(tmp_path, "absurd.yaml", *change)
    before = set(tmp_path.iterdir())
    done = nunasim("simulate", "--preset", preset, "--hist", "h.png", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"nunasim: error: {preset}: "), done.stderr[:300]
    assert words in done.stderr
    assert set(tmp_path.iterdir()) == before
