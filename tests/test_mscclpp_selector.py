"""The tuning table as an MSCCL++ plan selector's rules: a request of any size picks the
decision the tuning table picks, and what ``tune`` writes parses back to its decisions."""

import json

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli_run import run
from nunasim.errors import ConfigError
from nunasim.experiments.cache import shipped_folder
from nunasim.io.mscclpp_selector import select, selector_document

CHOICE = st.tuples(
    st.sampled_from(["UA", "NAP", "NAP+NAR", "NUMA+NAR"]),
    st.sampled_from([1, 4, 12]),
    st.integers(1, 1008),
)
RANGES = st.dictionaries(st.integers(1, 1 << 40), CHOICE, min_size=1, max_size=5)


def _table(choices: dict, gpus: int) -> dict:
    return {
        "preset": "nextgen-4die",
        "gpus": gpus,
        "collectives": {
            name: [
                {
                    "from_bytes": low,
                    "to_bytes": low,
                    "configuration": config,
                    "nar": config.endswith("+NAR"),
                    "nar_granularity": granularity,
                    "threadblocks": tbs,
                }
                for low, (config, granularity, tbs) in sorted(ranges.items())
            ]
            for name, ranges in choices.items()
        },
    }


@given(
    st.dictionaries(
        st.sampled_from(["allgather", "allreduce:ring", "alltoall"]), RANGES, min_size=1
    ),
    st.integers(0, 1 << 41),
    st.sampled_from([2, 8, 64]),
)
def test_a_request_picks_what_the_tuning_table_picks(choices, size, gpus):
    document = json.loads(json.dumps(selector_document(_table(choices, gpus))))
    for name, ranges in choices.items():
        collective = name.split(":")[0]
        starts = sorted(ranges)
        at = max([s for s in starts if s <= size], default=starts[0])
        config, granularity, tbs = ranges[at]
        rule = select(document, collective, size, gpus)
        assert rule is not None
        assert (rule["configuration"], rule["threadblocks_per_gpu"]) == (config, tbs)
        assert rule["nar_granularity"] == granularity
        assert (f"nar:{granularity}" in rule["tags"]) == config.endswith("+NAR")
        assert rule["algorithm"] == ("ring" if ":ring" in name else "direct")
        assert select(document, collective, size, gpus + 1) is None  # another pod size


def test_a_document_of_another_format_is_refused():
    with pytest.raises(ConfigError, match="nunasim-mscclpp-selector/1"):
        select({"format": "x", "rules": []}, "allgather", 1, 8)


def test_tune_writes_selector_rules_that_give_back_its_decisions(tmp_path, capsys):
    out = tmp_path / "tuning"
    code, stdout, err = run(
        capsys, "tune", "--gpus", "8", "--cache-dir", shipped_folder(), "--out", out
    )
    assert code == 0, err
    assert "mscclpp_selector.json" in stdout
    document = json.loads((out / "mscclpp_selector.json").read_text())
    best = pd.read_csv(out / "tuning.csv")
    for row in best.itertuples():
        rule = select(document, row.collective, int(row.size_bytes), 8)
        assert rule["configuration"] == row.configuration
        assert rule["nar_granularity"] == row.granularity
        assert rule["threadblocks_per_gpu"] == row.threadblocks
        assert rule["plan"] == f"{row.collective}_direct_simple"
