"""The house rules of the time layer, checked on the source: every import-linter layer is
required, plots are guarded, and no module outside the registry picks an engine by
comparing its name."""

import ast
import tomllib
from pathlib import Path

import pytest

from nunasim.engine.base import ENGINES

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "nunasim"


def _contracts() -> list[dict]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["tool"]["importlinter"]["contracts"]


def test_every_layer_is_required():
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    optional = [layer for layer in layers["layers"] if "(" in layer]
    assert not optional, optional
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    packages |= {p.stem for p in SRC.glob("*.py") if p.stem not in ("__init__", "__main__", "jit")}
    named = {
        name.strip().removeprefix("nunasim.")
        for layer in layers["layers"]
        for name in layer.split("|")
    }
    # Every package and top-level module of the source is in a layer (``jit`` is a
    # helper every layer may use: it imports nothing of the package; ``__main__`` runs
    # the CLI).
    assert packages <= named, packages - named


def test_plotting_imports_no_model():
    guards = [c for c in _contracts() if c["type"] == "forbidden"]
    plotting = [c for c in guards if c["source_modules"] == ["nunasim.plotting"]]
    assert plotting and "nunasim.engine" in plotting[0]["forbidden_modules"]


def _compared_strings(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, ast.Constant) and isinstance(operand.value, str):
                    found.add(operand.value)
                if isinstance(operand, ast.Tuple | ast.List | ast.Set):
                    found |= {
                        e.value
                        for e in operand.elts
                        if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    }
    return found


def test_no_engine_is_chosen_by_its_name_outside_the_registry():
    names = set(ENGINES.names())
    offenders = {}
    for path in SRC.rglob("*.py"):
        if path == SRC / "engine" / "base.py":
            continue
        hits = _compared_strings(ast.parse(path.read_text())) & names
        if hits:
            offenders[str(path.relative_to(SRC))] = sorted(hits)
    assert not offenders, offenders


def test_the_paper_figures_run_the_paper_configurations_named_one_by_one():
    from nunasim.policies.configurations import CONFIGURATIONS, PAPER_CONFIGURATIONS

    assert len(PAPER_CONFIGURATIONS) == 8 and set(PAPER_CONFIGURATIONS) <= set(CONFIGURATIONS)
    for figure in ("fig9", "fig11"):
        text = (SRC / "experiments" / "figures" / f"{figure}.py").read_text()
        assert "PAPER_CONFIGURATIONS" in text and "list(CONFIGURATIONS)" not in text, figure


def test_a_registered_placement_policy_gives_two_configurations_and_no_paper_figure(
    monkeypatch,
):
    from nunasim.collectives.builtins import builtin_plan
    from nunasim.errors import ConfigError
    from nunasim.io.presets import load_preset
    from nunasim.policies import configurations
    from nunasim.scenario import Configuration, Scenario

    monkeypatch.setattr(
        configurations, "PLACEMENT_POLICIES", dict(configurations.PLACEMENT_POLICIES)
    )
    monkeypatch.setattr(configurations, "CONFIGURATIONS", dict(configurations.CONFIGURATIONS))
    configurations.register_placement("NUMA-NAP", "NUMA", "NAP")
    assert configurations.CONFIGURATIONS["NUMA-NAP+NAR"].pages == "NAP"
    assert "NUMA-NAP" not in configurations.PAPER_CONFIGURATIONS
    # A scenario takes it by name, as any configuration (the registry is read at each use).
    monkeypatch.setattr("nunasim.scenario.PLACEMENT_POLICIES", configurations.PLACEMENT_POLICIES)
    monkeypatch.setattr("nunasim.scenario.CONFIGURATIONS", configurations.CONFIGURATIONS)
    plan = builtin_plan("allgather:direct:gpus=4")
    result = Scenario(load_preset("nextgen-4die"), plan, "64KB", "NUMA-NAP+NAR").run()
    assert result.info.configuration == "NUMA-NAP+NAR" and result.completion_ps > 0
    assert Configuration.parse("NUMA-NAP").placement == "NUMA-NAP"
    for bad in (("NAP", "NAP", "NAP"), ("X+NAR", "UA", "UA"), ("X", "LIFO", "UA")):
        with pytest.raises(ConfigError):
            configurations.register_placement(*bad)
