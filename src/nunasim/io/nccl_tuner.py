"""A tuning table as the configuration file of NCCL's example tuner plugin
(``ext-tuner/example`` in NCCL's repository, which RCCL builds against the same tuner API):
``nccl_tuner.conf``, read from ``$NCCL_TUNER_CONFIG_FILE`` or the working folder.

One line per decision: ``collective_type,min_bytes,max_bytes,algorithm,protocol,channels,
nNodes,nRanks,numPipeOps,regBuff``. The plugin applies the first line whose collective,
inclusive byte range and topology match, setting that algorithm and protocol's cost to zero
and the channel count; ``#`` starts a comment. Three of its habits shape what is written:

- an unknown collective is read as ``allreduce`` and an unknown algorithm as ``ring``, so a
  decision NCCL cannot take (All-to-All, which NCCL runs as grouped sends and receives
  outside the tuner; nunasim's direct all-pairs algorithms, which NCCL does not have) is
  never written as a line it would misread: it is written commented out, with the reason;
- it reads lines of at most 255 characters (a longer one would be split and its tail read
  as a line), so every line is kept shorter;
- the ranges tile every size: the first starts at 0, each ends where the next starts, the
  last at the largest 64-bit size.

``channels`` is the decision's threadblocks per GPU: in nunasim's ring plans one
threadblock is one channel, as in NCCL. NCCL caps it at its own channel limit. ``nNodes``
is -1 (any: the pod is one scale-up domain, however many hosts hold it), ``nRanks`` the
pod's GPUs. The NAR granularity and the placement are decisions NCCL's tuner has no field
for; they stay in the tuning table and the placement file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nunasim.collectives.builtins import builtin_parts
from nunasim.collectives.plan import Protocol
from nunasim.errors import ConfigError
from nunasim.io.files import write_atomically
from nunasim.io.size_ranges import tiled

FIELDS = (
    "collective_type",
    "min_bytes",
    "max_bytes",
    "algorithm",
    "protocol",
    "channels",
    "nNodes",
    "nRanks",
    "numPipeOps",
    "regBuff",
)
# The plugin's names; it reads any other collective as allreduce, any other algorithm as ring.
COLLECTIVES = ("broadcast", "reduce", "allgather", "reducescatter", "allreduce")
ALGORITHMS = {"ring": "ring"}  # nunasim's algorithm -> NCCL's, where NCCL has it
PROTOCOLS = {Protocol.SIMPLE: "simple", Protocol.LL: "ll", Protocol.LL128: "ll128"}
MAX_LINE = 255  # the plugin reads a line into 256 bytes, its newline included
NOT_RUNNABLE = "#nunasim-not-runnable: "


@dataclass(frozen=True)
class TunerLine:
    """One decision as the plugin sees it; ``runnable`` False: written commented out."""

    collective: str
    min_bytes: int
    max_bytes: int
    algorithm: str
    protocol: str
    channels: int
    ranks: int
    runnable: bool = True

    def text(self) -> str:
        fields = (
            self.collective,
            self.min_bytes,
            self.max_bytes,
            self.algorithm,
            self.protocol,
            self.channels,
            -1,
            self.ranks,
            -1,
            -1,
        )
        line = ",".join(map(str, fields))
        return line if self.runnable else NOT_RUNNABLE + line


def why_not_runnable(name: str) -> str | None:
    """Why NCCL's tuner cannot take the plan ``name``'s decisions, or None if it can."""
    collective, algorithm, protocol = builtin_parts(name)
    if collective not in COLLECTIVES:
        return f"NCCL's tuner has no {collective} (NCCL runs it as grouped sends and receives)"
    if algorithm not in ALGORITHMS:
        return f"NCCL has no {algorithm} algorithm (known: {', '.join(ALGORITHMS)} here)"
    if protocol not in PROTOCOLS:
        return f"NCCL has no {protocol.value} protocol"
    return None


def tuner_lines(table: dict[str, Any]) -> list[TunerLine]:
    """The lines of ``table`` (``experiments.tune.thresholds``): each collective's ranges,
    widened to tile every size (``size_ranges.tiled``)."""
    lines: list[TunerLine] = []
    for name, ranges in table["collectives"].items():
        collective, algorithm, protocol = builtin_parts(name)
        runnable = why_not_runnable(name) is None
        for low, high, entry in tiled(ranges):
            lines.append(
                TunerLine(
                    collective,
                    low,
                    high,
                    ALGORITHMS.get(algorithm, algorithm),
                    PROTOCOLS.get(protocol, protocol.value.lower()),
                    int(entry["threadblocks"]),
                    int(table["gpus"]),
                    runnable,
                )
            )
    return lines


def tuner_text(table: dict[str, Any]) -> str:
    header = [
        f"# nunasim tune: {table['preset']}, {table['gpus']} GPUs; NCCL example tuner plugin",
        "# " + ",".join(FIELDS),
    ]
    reasons = sorted({r for n in table["collectives"] if (r := why_not_runnable(n)) is not None})
    header += [f"# not runnable on NCCL, so commented out: {r}" for r in reasons]
    text = "\n".join([*header, *(line.text() for line in tuner_lines(table))]) + "\n"
    too_long = [line for line in text.splitlines() if len(line) > MAX_LINE]
    if too_long:  # a name nunasim wrote itself; never expected, but the plugin would misread it
        raise ConfigError(f"a tuner line is longer than {MAX_LINE} characters: {too_long[0]!r}")
    return text


def write_tuner(path: Path, table: dict[str, Any]) -> Path:
    text = tuner_text(table)
    return write_atomically(path, lambda tmp: tmp.write_text(text, encoding="ascii"))


def read_tuner(text: str, source: str = "nccl_tuner.conf") -> list[TunerLine]:
    """The lines of a tuner file as the plugin reads them (8 to 10 fields), and the
    decisions nunasim wrote commented out; other comments and blank lines are skipped."""
    lines: list[TunerLine] = []
    for number, raw in enumerate(text.splitlines(), 1):
        runnable = not raw.startswith(NOT_RUNNABLE)
        body = raw if runnable else raw[len(NOT_RUNNABLE) :]
        if not body.strip() or body.startswith("#"):
            continue
        fields = [f.strip() for f in body.split(",")]
        where = f"{source}, line {number}"
        if not 8 <= len(fields) <= 10:
            raise ConfigError(f"has {len(fields)} fields, not 8 to 10", source=where)
        try:
            low, high, channels, ranks = (int(fields[i]) for i in (1, 2, 5, 7))
        except ValueError:
            raise ConfigError(
                "min_bytes, max_bytes, channels and nRanks are integers", source=where
            ) from None
        lines.append(
            TunerLine(fields[0], low, high, fields[3], fields[4], channels, ranks, runnable)
        )
    return lines
