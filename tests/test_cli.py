"""The command line: output, pictures, exit codes, and no half-written files."""

import json
import os
import subprocess
import sys

import matplotlib
import pytest
from matplotlib.colors import to_hex

from cli_run import run
from nunasim.hardware.tables import floorplan_tables
from nunasim.io.presets import load_preset
from nunasim.plotting.floorplan import draw_floorplan

matplotlib.use("Agg")


def test_preset_list(capsys):
    code, out, _ = run(capsys, "preset", "list")
    assert code == 0
    assert "nextgen-4die" in out and "nextgen-2die" in out and "monolithic" in out


def test_preset_show_prints_the_headline_figures(capsys):
    code, out, _ = run(capsys, "preset", "show", "nextgen-4die")
    assert code == 0
    for words in (
        "576 CUs",
        "16 HBM stacks",
        "144 I/O ports",
        "7.2 TB/s of ports",
        "bisection          10 TB/s",
        "CU -> port",
        "port -> stack",
        "500 ns",
    ):
        assert words in out, words


def test_preset_show_json(capsys):
    code, out, _ = run(capsys, "preset", "show", "monolithic", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["cus"] == 144 and data["ports"] == 36
    assert data["cu_to_port"]["worst"] == 10


def test_floorplan_draws_every_element(tmp_path, capsys):
    out = tmp_path / "f.png"
    code, _, _ = run(capsys, "floorplan", "nextgen-4die", "--nar", "12", "-o", str(out))
    assert code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 20_000


def test_floorplan_figure_content():
    socket = load_preset("nextgen-4die").socket
    figure = draw_floorplan(floorplan_tables(socket, 12), "t")
    patches = figure.axes[0].patches
    by_gid = {}
    for patch in patches:
        by_gid.setdefault(patch.get_gid(), []).append(patch)
    assert len(by_gid["die"]) == 4
    assert len(by_gid["stack"]) == 16
    assert len(by_gid["port"]) == 144
    assert len(by_gid["cu"]) == 576
    assert len({to_hex(p.get_facecolor()) for p in by_gid["port"]}) == 12
    # Stacks sit outside the long edges: above row 0 or below row 5.
    for patch in by_gid["stack"]:
        assert patch.get_y() + patch.get_height() < -0.5 or patch.get_y() > 5.5
    # Ports sit outside the two ends.
    for patch in by_gid["port"]:
        assert patch.get_x() + patch.get_width() <= -0.5 or patch.get_x() >= 23.5


def test_floorplan_without_nar_has_one_port_colour():
    socket = load_preset("nextgen-2die").socket
    figure = draw_floorplan(floorplan_tables(socket), "t")
    ports = [p for p in figure.axes[0].patches if p.get_gid() == "port"]
    assert len(ports) == 72
    assert len({to_hex(p.get_facecolor()) for p in ports}) == 1


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["preset", "show", "nope"], "no preset of that name"),
        (["floorplan", "nextgen-4die", "--nar", "5"], "NAR granularity 5 is not valid"),
        (["floorplan", "nextgen-4die", "--nar", "3"], "NAR granularity 3 is not valid"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, argv, words):
    out = tmp_path / "f.png"
    args = [*argv, "-o", str(out)] if argv[0] == "floorplan" else argv
    code, _, err = run(capsys, *args)
    assert code == 2
    assert words in err
    assert err.startswith("nunasim: error: ")
    assert list(tmp_path.iterdir()) == []


def test_failed_write_leaves_no_file(tmp_path, capsys):
    out = tmp_path / "f.txt"
    code, _, err = run(capsys, "floorplan", "nextgen-4die", "-o", str(out))
    assert code == 2 and ".png, .svg or .pdf" in err
    code, _, err = run(capsys, "floorplan", "nextgen-4die", "-o", str(tmp_path / "no" / "f.png"))
    assert code == 2 and "does not exist" in err
    assert list(tmp_path.iterdir()) == []


def test_bad_preset_file_exit_code(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsocket: {mesh: {width: 2, height: 2}}\n")
    code, _, err = run(capsys, "preset", "show", str(bad))
    assert code == 2
    assert f"{bad}: socket: missing required key 'dies'" in err


def test_console_script_runs():
    result = subprocess.run(
        [sys.executable, "-m", "nunasim.cli.main", "preset", "list"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "nextgen-4die" in result.stdout


@pytest.mark.parametrize(("command", "pages"), [("noc", "0"), ("simulate", None)])
def test_only_the_noc_command_asks_numpy_for_small_pages(command, pages):
    """`noc` sets NUMPY_MADVISE_HUGEPAGE=0 before numpy is imported (its first-touch page
    faults are the command's system time), other commands leave numpy's default."""
    probe = (
        "import os, click\n"
        "from nunasim.cli.main import Session, cli\n"
        f"cli.get_command(click.Context(cli, obj=Session(whole_process=True)), {command!r})\n"
        "print(os.environ.get('NUMPY_MADVISE_HUGEPAGE'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    assert done.stdout.strip() == str(pages)
