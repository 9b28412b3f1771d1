"""Plans by name: a built-in (``allgather:direct:gpus=8``), an MSCCL XML file, or an
MSCCL++ JSON execution plan."""

from __future__ import annotations

from pathlib import Path

from nunasim.collectives.builtins import ALGORITHMS, builtin_plan, is_builtin_name
from nunasim.collectives.plan import Plan
from nunasim.errors import ConfigError


def load_plan(name_or_path: str | Path) -> Plan:
    """A plan: a built-in by name (``allgather:direct:gpus=8``, see ``builtin_plan``), an
    MSCCL XML file (``.xml``) or an MSCCL++ JSON execution plan (``.json``)."""
    name = str(name_or_path)
    if is_builtin_name(name):
        return builtin_plan(name)
    path = Path(name)
    if path.is_dir():
        raise ConfigError("is a folder, not a plan file", source=name)
    if not path.is_file():
        known = ", ".join(ALGORITHMS)
        raise ConfigError(
            f"neither a built-in plan (e.g. allgather:direct:gpus=8; known: {known}) nor a file",
            source=name,
        )
    # The importers are loaded only for a file of their format (a built-in needs neither).
    if path.suffix.lower() == ".xml":
        from nunasim.io.msccl import load_msccl_xml

        return load_msccl_xml(path)
    if path.suffix.lower() == ".json":
        from nunasim.io.mscclpp import load_mscclpp

        return load_mscclpp(path)
    raise ConfigError(
        "a plan file is MSCCL XML (.xml) or an MSCCL++ execution plan (.json)", source=name
    )
