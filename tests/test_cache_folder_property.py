"""A cache folder of anything: whatever mix of whole entries, forged and truncated
rows, links, special files and foreign files it holds, ``cache info``, a lookup of every
key and ``cache clear`` neither crash, hang, delete a file that is not theirs, nor serve a
row that is not whole."""

import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cache_rows import ROW
from cli_run import run
from nunasim.experiments.cache import ResultCache

# What a folder entry can be; each is made under a key-like name or a foreign one.
KINDS = (
    "whole",
    "forged completion",
    "forged string",
    "truncated",
    "link to a device",
    "link to an entry",
    "fifo",
    "folder",
    "oversized",
    "not json",
)
FOREIGN = ("package.json", "notes.txt", "data.json", ".hidden.json")


def _entry_text(row: dict) -> str:
    return json.dumps({"format": 1, "point": "", "row": row})


def _make(folder: Path, name: str, kind: str, elsewhere: Path) -> None:
    path = folder / name
    if kind == "whole":
        path.write_text(_entry_text(ROW))
    elif kind == "forged completion":
        path.write_text(_entry_text({**ROW, "completion_ps": -1}))
    elif kind == "forged string":
        path.write_text(_entry_text({**ROW, "completion_ps": "3000000"}))
    elif kind == "truncated":
        path.write_text(_entry_text(ROW)[:40])
    elif kind == "link to a device":
        path.symlink_to("/dev/zero")
    elif kind == "link to an entry":
        target = elsewhere / f"target-{name}"
        target.write_text(_entry_text(ROW))
        path.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "oversized":
        path.write_text(" " * (1 << 17))
    else:
        path.write_text("this is not JSON")


class _Hung(Exception):
    pass


def _alarm(*_):
    raise _Hung


entries = st.lists(st.tuples(st.integers(0, 2**31), st.sampled_from(KINDS)), min_size=1, max_size=8)
foreign = st.lists(st.tuples(st.sampled_from(FOREIGN), st.sampled_from(KINDS)), max_size=3)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries, foreign)
def test_no_folder_makes_the_cache_crash_hang_delete_or_serve_a_forgery(capsys, made, others):
    base = Path(tempfile.mkdtemp())
    folder, elsewhere = base / "cache", base / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    kinds: dict[str, str] = {}
    for number, kind in made:
        key = f"{number:064x}"
        if f"{key}.json" not in kinds:
            _make(folder, f"{key}.json", kind, elsewhere)
            kinds[f"{key}.json"] = kind
    for name, kind in others:
        if name not in kinds and not (folder / name).exists():
            _make(folder, name, kind, elsewhere)
            kinds[name] = f"foreign {kind}"
    before = {p.name for p in folder.iterdir()}
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)  # a hang fails the test instead of stopping the suite
    try:
        code, _, err = run(capsys, "cache", "info", "--cache-dir", folder)
        assert code == 0, err
        assert "Traceback" not in err and "internal error" not in err
        cache = ResultCache(folder, shipped=False)
        for name, kind in kinds.items():
            if kind.startswith("foreign"):
                continue
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row = cache.get(name.removesuffix(".json"))
            if kind == "whole":
                assert row is not None and row["completion_ps"] == ROW["completion_ps"]
            else:
                assert row is None, kind  # only a whole regular entry is ever served
        code, _, err = run(capsys, "cache", "clear", "--cache-dir", folder)
        assert code == 0, err
        assert "internal error" not in err
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    left = {p.name for p in folder.iterdir()}
    deleted = before - left
    # clear deletes whole entries and its own forged or broken entry files, never a
    # foreign file, a link's target, a folder or a special file
    for name in deleted:
        assert kinds[name] in (
            "whole",
            "forged completion",
            "forged string",
            "truncated",
            "oversized",
            "not json",
        ), (name, kinds[name])
    for name, kind in kinds.items():
        if kind.startswith("foreign") or kind in ("folder", "fifo"):
            assert name in left, (name, kind)
    assert all(p.exists() for p in elsewhere.iterdir())
    assert "whole" not in {kinds[n] for n in left}
    shutil.rmtree(base)
