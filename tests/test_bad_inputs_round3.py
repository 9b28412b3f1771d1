"""The bad-input corpus, third round: what a local Dask cluster listens on, and
numbers at their extremes. Each case runs as the corpus's do (``test_bad_inputs``): in a
fresh process capped at 1 GiB and 10 s, refused with exit status 2 and a located message,
nothing created."""

import gzip
import json
import os
import re
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from nunasim.engine.kernel.heap import TIME_LIMIT_PS
from nunasim.engine.kernel.rows import ROUTE_MAX
from nunasim.io import preset_ranges
from test_bad_inputs import _shipped_preset_with, nunasim

SRC = Path(__file__).parents[1] / "src"

# A sweep's executor on a local cluster of 2 workers, with a cheap row.
_SWEEP = textwrap.dedent(
    """
    import json
    from nunasim.experiments.executor import execute

    class Point:
        def __init__(self, n):
            self.n = n
        def describe(self):
            return str(self.n)

    def row(point, preset, progress):
        return {"n": point.n}

    if __name__ == "__main__":
        print(json.dumps(execute([Point(n) for n in range(4)], None, row, workers=2)))
    """
)


def _listening_while(command: list[str], cwd: Path, env: dict | None = None):
    """Run ``command``, reading every listening socket of its process tree from outside
    while it runs: (the finished process, its standard output and error, the sockets)."""
    import psutil

    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen: set[tuple[str, int]] = set()
    try:
        watched = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                family = [watched, *watched.children(recursive=True)]
            except psutil.Error:
                break
            for member in family:
                try:
                    for c in member.net_connections(kind="inet"):
                        if c.status == psutil.CONN_LISTEN:
                            seen.add((c.laddr.ip, c.laddr.port))
                except psutil.Error:
                    pass  # a worker that has just left
            time.sleep(0.02)
        out, err = process.communicate(timeout=600)
    finally:
        process.kill()
    return process, out, err, seen


def test_a_local_cluster_listens_on_loopback_only(tmp_path):
    script = tmp_path / "sweep.py"
    script.write_text(_SWEEP)
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    process, out, err, seen = _listening_while([sys.executable, str(script)], tmp_path, env)
    assert process.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == [{"n": n} for n in range(4)]
    # The scheduler, its dashboard, two nannies and two workers at the least.
    assert len(seen) >= 6, seen
    assert {ip for ip, _ in seen} <= {"127.0.0.1", "::1"}, seen


def test_reproduce_on_two_workers_listens_on_loopback_only(tmp_path):
    """A figure computed (no cache) on a local cluster of two workers: the scheduler, the
    dashboard and the workers all on loopback."""
    command = [sys.executable, "-m", "nunasim", "reproduce", "fig12", "--quick"]
    command += ["--workers", "2", "--no-cache", "--out", str(tmp_path / "out")]
    process, _, err, seen = _listening_while(command, tmp_path)
    assert process.returncode == 0, err
    assert len(seen) >= 4, seen  # the scheduler and its dashboard, a nanny and a worker
    assert {ip for ip, _ in seen} <= {"127.0.0.1", "::1"}, seen


def test_the_ranges_fit_the_engines():
    # A latency is a route entry's delay; one line, alone, within the engines' time.
    assert preset_ranges.MAX_DELAY_PS <= ROUTE_MAX
    assert preset_ranges.MAX_LINE_PS < TIME_LIMIT_PS
    assert preset_ranges.MIN_CLOCK_HZ * preset_ranges.MAX_DELAY_PS == 10**12


# (case, (what in the shipped preset, what instead), the element and what the message says)
RANGE_CASES = [
    ("clock of 1e-30 GHz", ("clock: 1.2GHz", "clock: 1e-30GHz"), "socket.noc.clock: 1e-21 Hz"),
    ("clock of 1e30 GHz", ("clock: 1.2GHz", "clock: 1e30GHz"), "socket.noc.clock: 1e+27 THz"),
    (
        "huge hop count",
        ("cycles_per_hop: 10 ", "cycles_per_hop: 100000000000000000000000 "),
        "socket.noc.cycles_per_hop: 100,000,000,000,000,000,000,000 cycles",
    ),
    (
        "huge die crossing",
        ("die_crossing_cycles: 0 ", "die_crossing_cycles: 2000000 "),
        "socket.noc.die_crossing_cycles: 10 + 2,000,000 cycles at 1.2 GHz is more than the 1 ms",
    ),
    (
        "tiny bisection",
        ("bisection_bandwidth: 10TB/s", "bisection_bandwidth: 1e-30B/s"),
        "socket.noc.bisection_bandwidth: 1e-30 B/s is outside",
    ),
    (
        "tiny HBM bandwidth",
        ("bandwidth: 2.5TB/s", "bandwidth: 1e-30B/s"),
        "socket.hbm.bandwidth: 1e-30 B/s is outside the 256 B/s to 256 TB/s",
    ),
    (
        "HBM of a line in no time",
        ("bandwidth: 2.5TB/s", "bandwidth: 1e30TB/s"),
        "socket.hbm.bandwidth",
    ),
    (
        "tiny port bandwidth",
        ("port_bandwidth: 50GB/s", "port_bandwidth: 1B/s"),
        "pod.port_bandwidth",
    ),
    ("huge HBM latency", ("latency: 150ns", "latency: 1e30ns"), "socket.hbm.latency: 1e+24 ms"),
    (
        "huge L1 latency",
        ("l1_latency: 120ns", "l1_latency: 2ms"),
        "socket.compute.l1_latency: 2 ms",
    ),
    ("huge plane latency", ("plane_latency: 500ns", "plane_latency: 1e30ns"), "pod.plane_latency"),
    ("huge page", ("page: 4KiB", "page: 1TB"), "socket.memory.page: must be 1 B to 1GiB"),
    ("huge line", ("line: 256B", "line: 1GB"), "socket.memory.line: must be 1 B to 1MiB"),
]


@pytest.mark.parametrize(
    ("change", "words"), [c[1:] for c in RANGE_CASES], ids=[c[0] for c in RANGE_CASES]
)
@pytest.mark.parametrize("command", [["preset", "show"], ["simulate", "--json", "--preset"]])
def test_numbers_beyond_their_range_are_refused_with_their_element(
    tmp_path, change, words, command
):
    preset = _shipped_preset_with(tmp_path, "extreme.yaml", *change)
    before = set(tmp_path.iterdir())
    done = nunasim(*command, preset, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"nunasim: error: {preset}: "), done.stderr[:300]
    assert words in done.stderr, done.stderr
    assert set(tmp_path.iterdir()) == before


def test_the_extremes_of_the_ranges_are_accepted(tmp_path):
    preset = _shipped_preset_with(tmp_path, "edge.yaml", "clock: 1.2GHz", "clock: 1THz")
    text = preset.read_text().replace("plane_latency: 500ns", "plane_latency: 1ms")
    preset.write_text(text.replace("port_bandwidth: 50GB/s", "port_bandwidth: 256B/s"))
    done = nunasim("preset", "show", preset, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_flow_run_beyond_the_engines_time_range_is_refused_before_it_runs(tmp_path):
    preset = _shipped_preset_with(
        tmp_path, "slow-ports.yaml", "port_bandwidth: 50GB/s", "port_bandwidth: 1kB/s"
    )
    done = nunasim(
        "simulate",
        "--engine",
        "flow",
        "--preset",
        preset,
        "--size",
        "1MB",
        "--tbs",
        "7",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "of simulated time, more than the flow engine's 1100 ms" in done.stderr


def _zeros_gzip(folder: Path) -> Path:
    path = folder / "zeros.json.gz"
    inflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    with path.open("wb") as handle:
        handle.write(inflate.compress(b'{"nodes": ['))
        block = b" " * (1 << 20)
        for _ in range(100):  # 100 MiB inflated, about 100 kB on disk
            handle.write(inflate.compress(block))
        handle.write(inflate.compress(b"]}") + inflate.flush())
    return path


def _deep_trace(folder: Path) -> Path:
    path = folder / "deep.json"
    path.write_text('{"nodes": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    return path


def _large_trace(folder: Path) -> Path:
    path = folder / "large.et"
    with path.open("wb") as handle:
        handle.truncate(65 << 20)  # sparse: no disk used
    return path


def _fifo_trace(folder: Path) -> Path:
    path = folder / "fifo.json"
    os.mkfifo(path)
    return path


def _nan_trace(folder: Path) -> Path:
    path = folder / "nan.json"
    path.write_text('{"nodes": [{"name": "record_param_comms", "id": NaN}]}')
    return path


def _two_gzip_members(folder: Path) -> Path:
    # Two members that each inflate within the limit, together beyond it.
    path = folder / "members.json.gz"
    half = gzip.compress(b" " * (40 << 20), 9)
    path.write_bytes(gzip.compress(b'{"nodes": [', 9) + half + half + gzip.compress(b"]}"))
    return path


# (case, how to make the trace, what the message says after the file's name)
TRACE_CASES = [
    ("gzip of zeros", _zeros_gzip, "inflates to more than 64 MiB"),
    ("gzip members together", _two_gzip_members, "inflates to more than 64 MiB"),
    ("deeply nested JSON", _deep_trace, "not valid JSON: nested too deeply"),
    ("file of 65 MiB", _large_trace, "is larger than 64 MiB"),
    ("FIFO", _fifo_trace, "is not a regular file"),
    ("NaN", _nan_trace, "not valid JSON: NaN"),
]


@pytest.mark.parametrize(
    ("make", "words"), [c[1:] for c in TRACE_CASES], ids=[c[0] for c in TRACE_CASES]
)
def test_hostile_traces_are_refused(tmp_path, make, words):
    trace = make(tmp_path)
    before = set(tmp_path.iterdir())
    done = nunasim("trace", "sizes", trace, "--plot", "cdf.png", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"nunasim: error: {trace}: {words}"), done.stderr[:300]
    assert set(tmp_path.iterdir()) == before


# A name that would crash a UTF-8 stream (a lone surrogate), and would otherwise recolour
# the terminal and forge an error line of its own.
_HOSTILE_NAME = "bad\ud800\x1b[31m\u202e\nnunasim: error: forged"
_ESCAPED_NAME = r"bad\ud800\x1b[31m\u202e\nnunasim: error: forged"


def _assert_printed_escaped(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, done.stderr
    assert _ESCAPED_NAME in done.stdout
    assert "\x1b" not in done.stdout + done.stderr and "\u202e" not in done.stdout
    lines = (done.stdout + done.stderr).splitlines()
    assert not any(line.startswith("nunasim: error: forged") for line in lines)


def test_a_hostile_preset_name_is_printed_escaped(tmp_path):
    escaped = json.dumps(_HOSTILE_NAME)  # a YAML double-quoted string takes JSON's escapes
    preset = _shipped_preset_with(tmp_path, "named.yaml", "name: nextgen-4die", f"name: {escaped}")
    _assert_printed_escaped(nunasim("preset", "show", preset, cwd=tmp_path))
    done = nunasim("floorplan", preset, "-o", "floorplan.png", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "floorplan.png").stat().st_size > 0


@pytest.mark.parametrize("kind", ["json", "xml"])
def test_a_hostile_plan_name_is_printed_escaped(tmp_path, kind):
    fixtures = Path(__file__).parent / "fixtures" / "plans"
    if kind == "json":
        document = json.loads((fixtures / "allreduce.json").read_text())
        document["name"] = _HOSTILE_NAME
        plan = tmp_path / "named.json"
        plan.write_text(json.dumps(document))
    else:
        # XML holds neither a lone surrogate nor an escape character: a newline forges.
        plan = tmp_path / "named.xml"
        text = (fixtures / "custom_allreduce.xml").read_text()
        plan.write_text(
            re.sub(r' name="[^"]*"', ' name="x&#10;nunasim: error: forged"', text, count=1)
        )
    done = nunasim("plan", "show", plan, cwd=tmp_path)
    if kind == "json":
        _assert_printed_escaped(done)
    else:
        assert r"x\nnunasim: error: forged" in done.stdout + done.stderr, done.stderr
        assert "\nnunasim: error: forged" not in done.stdout + done.stderr


@pytest.fixture(scope="module")
def small():
    import nunasim as ns

    return ns.load_preset("nextgen-4die"), ns.builtin_plan("allgather", gpus=2, tbs=1)


# (case, the Scenario's keyword arguments over a good run, what the message says)
API_CASES = [
    ("seed -1", {"seed": -1}, "invalid value for seed: -1 is not in the range x>=0"),
    ("seed 1.5", {"seed": 1.5}, "invalid value for seed: 1.5 is not a valid integer"),
    ("seed 'a'", {"seed": "a"}, "invalid value for seed: 'a' is not a valid integer"),
    ("seed True", {"seed": True}, "invalid value for seed: True is not a valid integer"),
    ("configuration 123", {"configuration": 123}, "a configuration is a Configuration or a"),
    ("plan None", {"plan": None}, "plan is a Plan (builtin_plan or load_plan gives one)"),
    ("preset by name", {"pod": "nextgen-4die"}, "pod is a Preset or a Pod (load_preset"),
    ("unknown dtype", {"dtype": "int7"}, "unknown data type 'int7' (known: fp32"),
    ("GEMM tiles 1.5", {"gemm_tiles": 1.5}, "invalid value for gemm_tiles: 1.5 is not a"),
    ("granularity 2.5", {"granularity": 2.5}, "invalid value for granularity: 2.5 is not"),
]


@pytest.mark.parametrize(
    ("change", "words"), [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES]
)
def test_the_python_api_checks_its_arguments(small, change, words):
    import nunasim as ns

    preset, plan = small
    arguments = {"pod": preset, "plan": plan, "size": "64kB", "configuration": "NAP+NAR"}
    with pytest.raises(ns.ConfigError) as raised:
        ns.Scenario(**{**arguments, **change})
    assert str(raised.value).startswith(words), str(raised.value)


def test_the_api_and_the_command_line_say_the_same_of_a_seed(tmp_path, small):
    import nunasim as ns

    done = nunasim("simulate", "--seed", "-1", cwd=tmp_path)
    assert "-1 is not in the range x>=0" in done.stderr
    with pytest.raises(ns.ConfigError, match="-1 is not in the range x>=0"):
        ns.Scenario(*small, "64kB", seed=-1)


def test_a_negative_deadline_is_refused_not_taken_for_none(small):
    import nunasim as ns

    prepared = ns.Scenario(*small, "64kB").prepare()
    with pytest.raises(ns.ConfigError, match="a deadline must not be negative; got -1 ps"):
        prepared.run(deadline_ps=-1)
    with pytest.raises(
        ns.ConfigError, match=re.escape("a deadline is picoseconds or None, not 1.5")
    ):
        prepared.run(deadline_ps=1.5)
    assert prepared.run(deadline_ps=np.int64(0)) is None  # nothing completes at 0 ps


def test_numpy_integers_are_whole_numbers_to_the_api(small):
    import nunasim as ns

    preset, plan = small
    built = ns.builtin_plan("allgather", gpus=np.int64(2), tbs=np.int32(1))
    assert built.ngpus == 2 and type(built.ngpus) is int
    a = ns.Scenario(preset, plan, np.int64(65536), "NAP+NAR", np.int64(1), seed=np.int64(3))
    b = ns.Scenario(preset, plan, 65536, "NAP+NAR", 1, seed=3)
    assert a.run().completion_ps == b.run().completion_ps


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"gpus": 8.5}, "gpus=8.5 is not a whole number"),
        ({"tbs": "7"}, "tbs='7' is not a whole number"),
        ({"gpus": True}, "gpus=True is not a whole number"),
    ],
)
def test_a_built_in_plans_keywords_are_whole_numbers(overrides, words):
    import nunasim as ns

    with pytest.raises(ns.ConfigError, match=re.escape(words)):
        ns.builtin_plan("allgather", **{"gpus": 8, **overrides})


@pytest.mark.parametrize("value", ["١", "0_1", "+1", " 2"])
def test_a_built_in_plans_numbers_are_ascii_digits(tmp_path, value):
    done = nunasim("plan", "show", f"allgather:gpus={value}", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is not a whole number" in done.stderr, done.stderr


def _plan_with(folder: Path, old: str, new: str) -> Path:
    """The fixture ring All-Reduce with the first ``old`` replaced by ``new``."""
    text = (Path(__file__).parent / "fixtures" / "plans" / "custom_allreduce.xml").read_text()
    assert old in text
    path = folder / "edited.xml"
    path.write_text(text.replace(old, new, 1))
    return path


# (case, what to change in the fixture plan, what the message says after the file's name)
MSCCL_CASES = [
    ("Arabic-Indic digit", ('cnt="1"', 'cnt="١"'), "attribute cnt='١' is not a whole number"),
    ("digits with an underscore", ('cnt="1"', 'cnt="0_1"'), "attribute cnt='0_1' is not a"),
    ("negative channel", ('chan="0"', 'chan="-3"'), "attribute chan=-3 must be at least 0"),
    ("a DTD", ("<algo ", "<!DOCTYPE algo>\n<algo "), "refused unsafe XML (DTDForbidden"),
]


@pytest.mark.parametrize(
    ("change", "words"), [c[1:] for c in MSCCL_CASES], ids=[c[0] for c in MSCCL_CASES]
)
def test_msccl_numbers_are_read_as_the_executor_reads_them(tmp_path, change, words):
    plan = _plan_with(tmp_path, *change)
    before = set(tmp_path.iterdir())
    done = nunasim("plan", "check", plan, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"nunasim: error: {plan}: ") and words in done.stderr, done.stderr
    assert set(tmp_path.iterdir()) == before


def test_a_granularity_listed_twice_is_refused(tmp_path):
    preset = _shipped_preset_with(
        tmp_path,
        "twice.yaml",
        "port_hash: xor-fold",
        "port_hash: xor-fold\n  nar: {granularities: [1, 2, 2]}",
    )
    done = nunasim("preset", "show", preset, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{preset}: socket.nar.granularities[2]: 2 is already nar.granularities[1]" in (
        done.stderr
    )


@pytest.mark.parametrize(
    ("sizes", "words"),
    [("100kB,100kB", "--sizes gives '100kB' twice"), ("1MB,1000kB", "the same value")],
)
def test_fig9_refuses_a_size_given_twice(tmp_path, sizes, words):
    done = nunasim("fig9", "--sizes", sizes, "-o", "f.csv", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("nunasim: error: ") and words in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_full_standard_output_is_an_error_not_a_bug(tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "nunasim", "preset", "show", "nextgen-4die"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "nunasim: error: cannot write standard output: No space left on device\n"
    )


def test_a_closed_standard_output_is_refused(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "nunasim", "preset", "show", "nextgen-4die"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 2, done.stderr
    assert "standard output is closed" in done.stderr


_BIG_MSCCL = """<algo name="big" proto="Simple" nchannels="1" nchunksperloop="1048576" ngpus="2"
 coll="allgather" inplace="0">
{gpus}
</algo>
"""
_BIG_GPU = """  <gpu id="{g}" i_chunks="524288" o_chunks="1048576" s_chunks="0">
    <tb id="0" send="{p}" recv="{p}" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{mine}" cnt="524288"
       depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{theirs}" cnt="524288"
       depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>"""


def _big_msccl(folder: Path) -> Path:
    """An 1 kB MSCCL file whose proof would track 4 million chunks (21 s and 1.2 GB)."""
    gpus = "\n".join(
        _BIG_GPU.format(g=g, p=1 - g, mine=524288 * g, theirs=524288 * (1 - g)) for g in (0, 1)
    )
    path = folder / "big.xml"
    path.write_text(_BIG_MSCCL.format(gpus=gpus))
    assert path.stat().st_size < 1200
    return path


# (case, argv, what the message says): limits that pass one at a time, together
TOGETHER_CASES = [
    (
        "plan show of 256 GPUs x 65,536 chunks",
        lambda tmp: ["plan", "show", "allgather:direct:gpus=256:tbs=256:chunks=65536"],
        "would build about 8,590,065,664 steps",
    ),
    (
        "plan check of 256 GPUs x 64 chunks",
        lambda tmp: ["plan", "check", "alltoall:direct:gpus=256:tbs=255:chunks=64"],
        "(at most 1,048,576 steps): at most chunks=7 here",
    ),
    (
        "a 1 kB MSCCL file of a million chunks",
        lambda tmp: ["plan", "check", _big_msccl(tmp)],
        "proving it would track 4,194,304 chunks",
    ),
]


@pytest.mark.parametrize(
    ("argv", "words"), [c[1:] for c in TOGETHER_CASES], ids=[c[0] for c in TOGETHER_CASES]
)
def test_limits_hold_together_for_plans(tmp_path, argv, words):
    args = argv(tmp_path)
    before = set(tmp_path.iterdir())
    done = nunasim(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"nunasim: error: {args[2]}: ") and words in done.stderr
    assert set(tmp_path.iterdir()) == before
