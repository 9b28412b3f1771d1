"""A tuning table as the input of an MSCCL++ plan selector.

MSCCL++ picks a registered execution plan per collective call with a selector, a Python
function of the registered plans and a request (``collective``, ``msg_bytes``,
``world_size``, ``nranks_per_node``, ``hints``) that returns a plan handle or a plan id
(its DSL integration guide, "Selector Interface"); each plan carries a name, tags and its
message-size constraints (``min_msg_size``, ``max_msg_size``). ``mscclpp_selector.json``
(format ``nunasim-mscclpp-selector/1``) holds the decisions that selector needs: per
collective and pod size, inclusive size ranges tiling every size, each naming the plan
(nunasim's built-in algorithm and protocol, the threadblocks per GPU) and the placement
and routing it is to run with, as tags a registered plan can carry.

``select`` is the rule a selector applies to the document; a selector for MSCCL++ calls
it with the request's fields and returns the registered plan whose name (or tags) match.
nunasim does not write MSCCL++ execution plans: the named plans are compiled with
MSCCL++'s DSL (its direct all-pairs presets are the paper's algorithms).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nunasim.collectives.builtins import builtin_parts
from nunasim.errors import ConfigError
from nunasim.io.files import write_atomically
from nunasim.io.size_ranges import tiled

FORMAT = "nunasim-mscclpp-selector/1"


def _tags(entry: dict[str, Any]) -> list[str]:
    tags = [f"nunasim:{entry['configuration']}", f"threadblocks:{entry['threadblocks']}"]
    if entry["nar"]:
        tags.append(f"nar:{entry['nar_granularity']}")
    return tags


def selector_document(table: dict[str, Any]) -> dict[str, Any]:
    """The selector's input for ``table`` (``experiments.tune.thresholds``)."""
    rules = []
    for name, ranges in table["collectives"].items():
        collective, algorithm, protocol = builtin_parts(name)
        for low, high, entry in tiled(ranges):
            rules.append(
                {
                    "collective": collective,
                    "world_size": int(table["gpus"]),
                    "min_msg_size": low,
                    "max_msg_size": high,
                    "plan": f"{collective}_{algorithm}_{protocol.value.lower()}",
                    "algorithm": algorithm,
                    "protocol": protocol.value,
                    "threadblocks_per_gpu": int(entry["threadblocks"]),
                    "configuration": str(entry["configuration"]),
                    "nar_granularity": int(entry["nar_granularity"]),
                    "tags": _tags(entry),
                }
            )
    return {"format": FORMAT, "preset": table["preset"], "rules": rules}


def write_selector(path: Path, table: dict[str, Any]) -> Path:
    text = json.dumps(selector_document(table), indent=1) + "\n"
    return write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def select(
    document: dict[str, Any], collective: str, msg_bytes: int, world_size: int
) -> dict[str, Any] | None:
    """The rule for a request, as a selector applies the document: the first rule of the
    collective and world size whose inclusive range holds the message size; None when
    the document has none (the selector falls back to MSCCL++'s own choice)."""
    if document.get("format") != FORMAT:
        raise ConfigError(f"is not a {FORMAT} document", source="selector")
    for rule in document["rules"]:
        if (
            rule["collective"] == collective
            and rule["world_size"] == world_size
            and rule["min_msg_size"] <= msg_bytes <= rule["max_msg_size"]
        ):
            return rule
    return None
