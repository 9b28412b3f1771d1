"""``nunasim tune``: the fastest choice per collective and size, and its threshold table."""

import json

import pandas as pd
import yaml

from cli_run import run
from nunasim.experiments.sweep import sweep
from nunasim.experiments.tune import candidates, thresholds
from nunasim.io.presets import load_preset
from nunasim.policies.place import auto_granularities


def _best(choices: list[tuple[int, str, int, int]]) -> pd.DataFrame:
    rows = [
        {
            "collective": "allgather",
            "size_bytes": size,
            "configuration": config,
            "granularity": domains,
            "threadblocks": tbs,
            "completion_ps": 1000,
            "speedup_vs_ua": 1.5,
        }
        for size, config, domains, tbs in choices
    ]
    return pd.DataFrame(rows)


def test_equal_choices_at_consecutive_sizes_merge_into_one_range():
    best = _best(
        [
            (10**7, "UA+NAR", 2, 112),
            (10**5, "NAP+NAR", 4, 28),
            (10**6, "NAP+NAR", 4, 28),
            (10**8, "NAP+NAR", 4, 28),
        ]
    )
    ranges = thresholds(best, "p", 8)["collectives"]["allgather"]
    assert [(r["from_bytes"], r["to_bytes"]) for r in ranges] == [
        (10**5, 10**6),
        (10**7, 10**7),
        (10**8, 10**8),
    ]
    assert [r["configuration"] for r in ranges] == ["NAP+NAR", "UA+NAR", "NAP+NAR"]
    assert ranges[0]["nar"] and ranges[0]["speedup_vs_ua"] == [1.5, 1.5]


def test_explicit_counts_try_every_granularity_of_the_socket():
    preset = load_preset("nextgen-4die")
    tried = candidates(preset, ["UA", "NAP+NAR"], [7])
    domains = auto_granularities(preset.socket)
    assert [c.name for c in tried] == ["UA"] + ["NAP+NAR"] * len(domains)
    assert [c.granularity for c in tried[1:]] == list(domains)


def test_tune_picks_the_fastest_run_and_writes_the_same_table_twice(tmp_path, capsys):
    argv = ["tune", "--gpus", "4", "--collectives", "allgather", "--sizes", "100kB,200kB"]
    argv += ["--configs", "UA,NAP+NAR", "--tbs", "3,6", "--workers", "1"]
    argv += ["--cache-dir", tmp_path / "cache", "--out", tmp_path / "out"]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "allgather" in out
    as_yaml = yaml.safe_load((tmp_path / "out" / "tuning.yaml").read_text())
    assert as_yaml == json.loads((tmp_path / "out" / "tuning.json").read_text())
    assert (tmp_path / "out" / "tuning.png").stat().st_size > 0
    # Differential: the choice is the fastest of the same grid swept directly.
    preset = load_preset("nextgen-4die")
    grid = {
        "collective": "allgather",
        "gpus": 4,
        "size": ["100kB", "200kB"],
        "configuration": candidates(preset, ["UA", "NAP+NAR"], [3, 6]),
        "threadblocks": [3, 6],
    }
    fastest = sweep(grid, preset).groupby("size_bytes")["completion_ps"].min()
    chosen = pd.read_csv(tmp_path / "out" / "tuning.csv").set_index("size_bytes")
    assert chosen["completion_ps"].to_dict() == fastest.to_dict()
    covered = [
        size
        for r in as_yaml["collectives"]["allgather"]
        for size in (r["from_bytes"], r["to_bytes"])
    ]
    assert min(covered) == 100_000 and max(covered) == 200_000


def test_tune_refuses_bad_counts_and_configurations(tmp_path, capsys):
    base = ["tune", "--gpus", "4", "--out", tmp_path / "o", "--cache-dir", tmp_path / "c"]
    code, _, err = run(capsys, *base, "--tbs", "3,x")
    assert code == 2 and "--tbs takes 'auto' or whole numbers" in err
    code, _, err = run(capsys, *base, "--configs", "UA,NAP+NUMA")
    assert code == 2 and "unknown configuration 'NAP+NUMA'" in err
    assert not (tmp_path / "o").exists()
