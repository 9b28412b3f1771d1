"""A placement's CU choices in the two forms AMD's runtime takes them, and back.

- ``hipExtStreamCreateWithCUMask(stream, cuMaskSize, cuMask)``: an array of 32-bit words,
  bit ``i`` of word ``w`` enabling CU ``32 w + i``. A threadblock pinned to one CU runs on a
  stream created with its mask; ``cu_mask_words`` writes it, ``cus_of_words`` reads it.
- ``HSA_CU_MASK``: ``GPU_list:CU_list[;GPU_list:CU_list]*``, each list of ids and ``a-b``
  ranges (ROCm, "Setting the number of compute units"). It masks every queue of a process,
  so it takes the union of the CUs a collective's threadblocks use on each GPU;
  ``hsa_cu_mask`` writes it, ``parse_hsa_cu_mask`` reads it.

CU numbers are nunasim's (the preset's order: CU ``c`` on router ``cu_routers[c //
cus_per_router]``); a runtime maps them through its device's own CU numbering.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

WORD_BITS = 32
_ID_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
_HEX = re.compile(r"^0x[0-9A-Fa-f]+$")


def cu_mask_words(cus: Iterable[int], total_cus: int) -> list[int]:
    """The ``cuMask`` array enabling ``cus`` on a GPU of ``total_cus`` CUs (its
    ``cuMaskSize`` is the array's length)."""
    words = [0] * -(-total_cus // WORD_BITS)
    for cu in cus:
        if not 0 <= cu < total_cus:
            raise ValueError(f"CU {cu} does not exist (the GPU has {total_cus})")
        words[cu // WORD_BITS] |= 1 << (cu % WORD_BITS)
    return words


def cus_of_words(words: Iterable[int]) -> set[int]:
    """The CUs a ``cuMask`` array enables."""
    cus: set[int] = set()
    for w, word in enumerate(words):
        if not 0 <= word < 1 << WORD_BITS:
            raise ValueError(f"word {w} of a CU mask is not a 32-bit value: {word}")
        cus.update(w * WORD_BITS + i for i in range(WORD_BITS) if word >> i & 1)
    return cus


def id_list(ids: Iterable[int]) -> str:
    """``ids`` as an ``ID_list``: ascending, consecutive ids folded into ``a-b``."""
    ordered = sorted(set(ids))
    if not ordered:
        raise ValueError("an ID list needs at least one id")
    runs: list[str] = []
    start = previous = ordered[0]
    for value in [*ordered[1:], None]:
        if value is not None and value == previous + 1:
            previous = value
            continue
        runs.append(str(start) if start == previous else f"{start}-{previous}")
        if value is not None:
            start = previous = value
    return ",".join(runs)


def parse_id_list(text: str) -> set[int]:
    if not _ID_LIST.match(text):
        raise ValueError(f"not an ID list (ids and a-b ranges, comma-separated): {text!r}")
    ids: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if last < first:
            raise ValueError(f"range {part!r} runs backwards")
        ids.update(range(first, last + 1))
    return ids


def hsa_cu_mask(cus_per_gpu: Mapping[int, Iterable[int]]) -> str:
    """The ``HSA_CU_MASK`` value enabling each GPU's CUs; GPUs with the same CUs share one
    set. A GPU with none is left out, and so keeps all its CUs (it runs nothing here)."""
    by_cus: dict[str, list[int]] = {}
    for gpu, cus in sorted(cus_per_gpu.items()):
        cus = set(cus)
        if not cus:
            continue
        by_cus.setdefault(id_list(cus), []).append(gpu)
    return ";".join(f"{id_list(gpus)}:{cus}" for cus, gpus in by_cus.items())


def parse_hsa_cu_mask(text: str) -> dict[int, set[int]]:
    """Each listed GPU's enabled CUs. Unlike the driver, which stops at the first bad set
    and ignores the rest, a bad set or a GPU listed twice is an error here: the file was
    meant to say everything it says."""
    cus_per_gpu: dict[int, set[int]] = {}
    for cu_set in text.strip().split(";"):
        gpus, colon, cus = cu_set.strip().partition(":")
        if not colon:
            raise ValueError(f"a CU set is GPU_list:CU_list, not {cu_set!r}")
        if _HEX.match(cus):
            enabled = {i for i in range(len(cus) * 4) if int(cus, 16) >> i & 1}
        else:
            enabled = parse_id_list(cus)
        for gpu in parse_id_list(gpus):
            if gpu in cus_per_gpu:
                raise ValueError(f"GPU {gpu} is listed twice")
            cus_per_gpu[gpu] = enabled
    return cus_per_gpu
