"""The project's own promises: the README's commands and what CI runs."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_quick_start_has_exactly_two_commands():
    commands = _quick_start_commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)
    assert commands[0].startswith("pip install . && nunasim ")
    assert commands[1].startswith('pip install ".[test]" && ')


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _quick_start_commands()[1] in ci


# --- the source's own rules ---------------------------------------------------------------

SRC = ROOT / "src" / "nunasim"
# Powers of ten that convert units (ps to ns, ms or s, bytes to GB, ...): outside
# ``units.py`` a conversion goes through its helpers, so every one is written once.
_CONVERSION_FACTORS = {10**3, 10**6, 10**9, 10**12}
_INVERSE_FACTORS = {1e-3, 1e-6, 1e-9, 1e-12}
# (module, line's text stripped) of a literal above that is no unit conversion, each with
# its reason. Empty: none is needed today.
_NOT_CONVERSIONS: dict[tuple[str, str], str] = {}
MAX_KERNEL_PARAMETERS = 12
MAX_MODULE_LINES = 600


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(SRC.parent).as_posix()


def _number(node: ast.AST) -> int | float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _conversions(tree: ast.AST) -> list[ast.Constant]:
    """Literals that look like unit conversions: a float power of ten of a unit prefix
    (``1e9``) or an int one from a million up (``1_000_000_000``) anywhere, and ``1000`` or
    an inverse power (``1e-12``) as a factor or divisor (elsewhere, ``1000`` is a count and
    ``1e-9`` a tolerance)."""
    found = []
    for node in ast.walk(tree):
        value = _number(node)
        if value is not None and (
            (isinstance(value, float) and value in _CONVERSION_FACTORS)
            or (isinstance(value, int) and value in _CONVERSION_FACTORS and value > 10**3)
        ):
            found.append(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Div | ast.FloorDiv):
            for side in (node.left, node.right):
                operand = _number(side)
                if operand is not None and (operand == 10**3 or operand in _INVERSE_FACTORS):
                    found.append(side)
    return found


def test_unit_conversions_go_through_units():
    bare = []
    for path in _modules():
        if path == SRC / "units.py":
            continue
        text = path.read_text()
        lines = text.splitlines()
        for node in _conversions(ast.parse(text)):
            line = lines[node.lineno - 1].strip()
            if (_name(path), line) not in _NOT_CONVERSIONS:
                bare.append(f"{_name(path)}:{node.lineno}: {line}")
    bare = sorted(set(bare))
    assert not bare, "bare unit conversions (use nunasim.units):\n" + "\n".join(bare)


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == "jit") or (
        isinstance(target, ast.Attribute) and target.attr == "jit"
    )


def test_no_compiled_kernel_takes_more_than_a_dozen_parameters():
    # Bundle arrays by meaning into NamedTuples instead (see nunasim.mapping.line_counts).
    wide = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if not any(_is_jit(d) for d in node.decorator_list):
                continue
            a = node.args
            count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
            count += (a.vararg is not None) + (a.kwarg is not None)
            if count > MAX_KERNEL_PARAMETERS:
                wide.append(f"{_name(path)}:{node.lineno}: {node.name} takes {count}")
    assert not wide, "compiled kernels with too many parameters:\n" + "\n".join(wide)


def test_no_module_is_600_lines_or_more():
    long = [
        f"{_name(path)}: {count} lines"
        for path in _modules()
        if (count := len(path.read_text().splitlines())) >= MAX_MODULE_LINES
    ]
    assert not long, "modules to split:\n" + "\n".join(long)
