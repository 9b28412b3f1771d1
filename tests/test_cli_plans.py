"""``nunasim plan`` and ``nunasim place`` from the command line."""

import json
from pathlib import Path

import pytest

from cli_run import run

FIXTURES = Path(__file__).parent / "fixtures" / "plans"
CONFIGS = ["UA", "UA+NAR", "NUMA", "NUMA+NAR", "NAP", "NAP+NAR", "NAP*", "NAP*+NAR"]


@pytest.mark.parametrize("path", sorted(FIXTURES.iterdir()), ids=lambda p: p.name)
def test_plan_check_proves_every_fixture(capsys, path):
    if path.suffix not in (".xml", ".json"):
        pytest.skip("not a plan")
    code, out, _ = run(capsys, "plan", "check", str(path))
    assert code == 0
    assert out.startswith("proved: ")


def test_plan_check_rejects_a_corrupted_file(tmp_path, capsys):
    text = (FIXTURES / "custom_allreduce.xml").read_text()
    broken = tmp_path / "broken.xml"
    # Read chunk 6 where chunk 7 is meant: a swapped chunk.
    swapped = text.replace('type="s" srcbuf="i" srcoff="7"', 'type="s" srcbuf="i" srcoff="6"', 1)
    broken.write_text(swapped)
    code, _, err = run(capsys, "plan", "check", str(broken))
    assert code == 2
    assert "has {input 6 of gpu 0} too many" in err  # the swapped chunk
    assert "last written by gpu" in err


def test_plan_show(capsys):
    code, out, _ = run(capsys, "plan", "show", "allgather:direct:gpus=8", "--size", "1MB")
    assert code == 0
    assert "8 GPUs" in out and "7 per GPU" in out
    assert "sent per GPU      875000 B (7 chunks)" in out
    code, out, _ = run(capsys, "plan", "show", str(FIXTURES / "r48ll.xml"), "--json")
    data = json.loads(out)
    assert data["ngpus"] == 8 and len(data["gpus"]) == 8
    assert data["gpus"][0]["threadblocks"] == 32


def test_plan_errors(capsys):
    code, _, err = run(capsys, "plan", "check", "nosuchplan.xml")
    assert code == 2 and "neither a built-in plan" in err
    code, _, err = run(capsys, "plan", "show", "allgather:direct")
    assert code == 2 and "give the number of GPUs" in err


def test_place_every_configuration(capsys):
    """The 8-GPU 1 MB All-Gather placed under every configuration."""

    def placed(config, *extra):
        code, out, _ = run(
            capsys,
            "place",
            "allgather:direct:gpus=8",
            "--size",
            "1MB",
            "--preset",
            "nextgen-4die",
            "--config",
            config,
            "--json",
            *extra,
        )
        assert code == 0
        return json.loads(out)

    stats = {config: placed(config) for config in CONFIGS}
    total = {c: s["avg_cu_port_hops"] + s["avg_port_stack_hops"] for c, s in stats.items()}
    assert min(total, key=total.get) == "NAP+NAR"
    # NAR itself, at a fixed granularity (auto may choose to route without it)
    for base in ("UA", "NUMA", "NAP", "NAP*"):
        with_nar = placed(f"{base}+NAR", "--nar", "12")
        assert with_nar["avg_port_stack_hops"] < stats[base]["avg_port_stack_hops"]


def test_place_writes_json_and_picture(tmp_path, capsys):
    out_json, out_png = tmp_path / "p.json", tmp_path / "p.png"
    code, out, _ = run(
        capsys,
        "place",
        "allreduce:direct:gpus=4",
        "--config",
        "NAP+NAR",
        "--nar",
        "12",
        "-o",
        str(out_json),
        "--png",
        str(out_png),
    )
    assert code == 0 and "CU -> port" in out
    doc = json.loads(out_json.read_text())
    assert doc["format"] == "nunasim-placement/1"
    assert doc["routing"] == "NAR" and doc["granularity"] == 12
    assert len(doc["gpus"]) == 4
    tb = doc["gpus"][0]["threadblocks"][0]
    assert int(tb["cu_mask"], 16) == 1 << tb["cu"]
    pages = sum(run_["pages"] for run_ in doc["gpus"][0]["pages"])
    assert pages > 0
    assert out_png.read_bytes()[:4] == b"\x89PNG"


def test_place_bad_input(tmp_path, capsys):
    code, _, err = run(capsys, "place", "allgather:direct:gpus=8", "--nar", "7")
    assert code == 2 and "not valid" in err
    code, _, err = run(capsys, "place", "allgather:direct:gpus=8", "--nar", "many")
    assert code == 2 and "'auto'" in err
    code, _, err = run(capsys, "place", "allgather:direct:gpus=8", "--size", "0B")
    assert code == 2
    assert list(tmp_path.iterdir()) == []
