"""CU masks in the forms HIP and the HSA runtime take: what is written parses back to the
placement's decisions, and the syntax is the one ROCm documents."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli_run import run
from nunasim.io.cu_masks import (
    cu_mask_words,
    cus_of_words,
    hsa_cu_mask,
    id_list,
    parse_hsa_cu_mask,
    parse_id_list,
)

CUS = 576


@given(st.sets(st.integers(0, CUS - 1)))
def test_hip_words_round_trip_and_set_one_bit_per_cu(cus):
    words = cu_mask_words(cus, CUS)
    assert len(words) == 18 and all(0 <= w < 1 << 32 for w in words)
    assert sum(bin(w).count("1") for w in words) == len(cus)
    assert cus_of_words(words) == cus


def test_hip_words_put_cu_32w_plus_i_at_bit_i_of_word_w():
    assert cu_mask_words([0, 33, 575], CUS)[:2] == [1, 2]
    assert cu_mask_words([575], CUS)[17] == 1 << 31
    with pytest.raises(ValueError, match="CU 576 does not exist"):
        cu_mask_words([576], CUS)


@given(st.dictionaries(st.integers(0, 63), st.sets(st.integers(0, CUS - 1), min_size=1)))
def test_hsa_cu_mask_round_trips(cus_per_gpu):
    if not cus_per_gpu:
        return
    assert parse_hsa_cu_mask(hsa_cu_mask(cus_per_gpu)) == cus_per_gpu


def test_hsa_syntax_is_rocms():
    assert id_list([7, 0, 2, 3, 4]) == "0,2-4,7"
    assert hsa_cu_mask({0: {0, 1, 2, 3}, 1: {0, 1, 2, 3}, 2: {8}}) == "0-1:0-3;2:8"
    # ROCm's own examples
    assert parse_hsa_cu_mask("0,2-4,7:0-15,32-47; 3-9:0x337F".replace("3-9", "8-9")) == {
        **{g: set(range(16)) | set(range(32, 48)) for g in (0, 2, 3, 4, 7)},
        **{g: {i for i in range(16) if 0x337F >> i & 1} for g in (8, 9)},
    }
    for bad in ("0:", "0-1", "1:3-1", "0:1;0:2", "a:1"):
        with pytest.raises(ValueError):
            parse_hsa_cu_mask(bad)
    assert parse_id_list("5") == {5}


def test_place_writes_masks_that_parse_back_to_its_threadblocks_cus(tmp_path, capsys):
    out = tmp_path / "p.json"
    code, _, err = run(
        capsys, "place", "allgather:direct:gpus=8:tbs=56", "--config", "NAP+NAR", "-o", out
    )
    assert code == 0, err
    doc = json.loads(out.read_text())
    per_gpu = {}
    for gpu in doc["gpus"]:
        cus = [tb["cu"] for tb in gpu["threadblocks"]]
        for tb in gpu["threadblocks"]:
            assert cus_of_words(tb["hip_cu_mask"]) == {tb["cu"]}
            assert len(tb["hip_cu_mask"]) == -(-doc["cus_per_gpu"] // 32)
        assert parse_id_list(gpu["cus"]) == set(cus)
        per_gpu[gpu["gpu"]] = set(cus)
    assert parse_hsa_cu_mask(doc["hsa_cu_mask"]) == per_gpu
    assert len(per_gpu) == 8 and all(len(c) > 1 for c in per_gpu.values())
