"""A cache folder is not trusted: only regular files of an entry's size, format and schema
are read, a bad one is skipped with a warning naming it and is never served, and ``cache
clear`` deletes only what it can prove is its own."""

import json
import math
import os
from pathlib import Path

import pytest

from cache_rows import ROW
from cli_run import run
from nunasim.experiments.cache import CacheWarning, ResultCache
from nunasim.experiments.cache_entries import (
    MAX_ENTRY_BYTES,
    BadEntry,
    check_row,
    is_entry_name,
    read_entry,
)

KEY = "ab" * 32


def _write(folder: Path, row: dict, key: str = KEY) -> Path:
    path = folder / f"{key}.json"
    path.write_text(json.dumps({"format": 1, "point": "", "row": row}))
    return path


def test_a_whole_entry_reads_back(tmp_path):
    row = read_entry(_write(tmp_path, ROW))
    assert row["completion_ps"] == ROW["completion_ps"] and math.isnan(row["store_p99_ns"])


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("completion_ps", -1, "not a positive integer"),
        ("completion_ps", 0, "not a positive integer"),
        ("completion_ps", "3000000", "not a positive integer"),
        ("completion_ps", float("nan"), "NaN"),
        ("completion_ps", 3e6, "not a positive integer"),
        ("completion_ps", True, "not a positive integer"),
        ("events", -5, "not an integer >= 0"),
        ("store_mean_ns", -1.0, "not a number >= 0"),
        ("store_max_ns", float("inf"), "not finite"),
        ("wall_s", "fast", "not a number >= 0"),
        ("configuration", "", "not a name"),
        ("engine", 3, "not a name"),
        ("gpus", [8], "not a scalar"),
        ("lower_bound_ps", 4_000_000, "lower bound is after its completion"),
    ],
)
def test_a_row_out_of_its_schema_is_refused(column, value, reason):
    with pytest.raises(BadEntry, match=reason):
        check_row({**ROW, column: value})


def test_a_row_without_a_column_this_code_reads_is_refused():
    with pytest.raises(BadEntry, match="completion_ps"):
        check_row({k: v for k, v in ROW.items() if k != "completion_ps"})


def test_a_bad_row_is_skipped_with_a_warning_and_never_served(tmp_path):
    path = _write(tmp_path, {**ROW, "completion_ps": -1})
    cache = ResultCache(tmp_path, shipped=False)
    with pytest.warns(CacheWarning, match=f"{path}: skipped, column 'completion_ps'"):
        assert cache.get(KEY) is None


def test_a_link_to_a_device_is_not_read(tmp_path):
    (tmp_path / f"{KEY}.json").symlink_to("/dev/zero")
    with pytest.warns(CacheWarning, match="not a regular file"):
        assert ResultCache(tmp_path, shipped=False).get(KEY) is None


def test_a_link_to_a_whole_entry_is_not_read_either(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    target = _write(tmp_path / "elsewhere", ROW, key="cd" * 32)
    (tmp_path / f"{KEY}.json").symlink_to(target)
    with pytest.warns(CacheWarning, match="not a regular file"):
        assert ResultCache(tmp_path, shipped=False).get(KEY) is None


def test_a_fifo_does_not_hang_a_lookup_or_info(tmp_path, capsys):
    os.mkfifo(tmp_path / f"{KEY}.json")
    with pytest.warns(CacheWarning, match="not a regular file"):
        assert ResultCache(tmp_path, shipped=False).get(KEY) is None
    code, out, err = run(capsys, "cache", "info", "--cache-dir", tmp_path)
    assert code == 0 and "points: 1" in out and "not a regular file" in err


def test_an_oversized_entry_is_not_read(tmp_path):
    path = tmp_path / f"{KEY}.json"
    path.write_text(" " * (MAX_ENTRY_BYTES + 1))
    with pytest.warns(CacheWarning, match="more than an entry's"):
        assert ResultCache(tmp_path, shipped=False).get(KEY) is None


def test_only_key_named_files_are_entries():
    assert is_entry_name(Path(f"{KEY}.json"))
    for name in ("package.json", f"{KEY}.txt", f"{KEY[:-1]}.json", f"{KEY.upper()}.json"):
        assert not is_entry_name(Path(name)), name


def test_clear_deletes_only_its_own_entries(tmp_path, capsys):
    mine = _write(tmp_path, ROW)
    leftover = tmp_path / f".{KEY}.json.x1y2.json"  # a killed write's temporary file
    leftover.write_text("half")
    others = {
        "package.json": '{"name": "a web project"}',
        "notes.json": "[]",
        f"{'ef' * 32}.json": '{"a": "json file named like an entry, not one"}',
        ".hidden.json": "{}",
    }
    for name, text in others.items():
        (tmp_path / name).write_text(text)
    code, out, err = run(capsys, "cache", "clear", "--cache-dir", tmp_path)
    assert code == 0 and "deleted 1 points" in out and "not one" in err
    assert not mine.exists() and not leftover.exists()
    assert {p.name for p in tmp_path.iterdir()} == set(others)
    assert (tmp_path / "package.json").read_text() == others["package.json"]


def test_the_command_line_prints_a_skipped_entry_as_one_line(tmp_path, capsys):
    _write(tmp_path, {**ROW, "completion_ps": "soon"})
    code, _, err = run(capsys, "cache", "info", "--cache-dir", tmp_path)
    assert code == 0
    assert f"nunasim: warning: {tmp_path / (KEY + '.json')}: skipped" in err
    assert "CacheWarning" not in err
