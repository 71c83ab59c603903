"""The TOML data cache reads every packaged file as tomllib does, from the cache as on a miss."""

import tomllib
from pathlib import Path

import pytest

import capsule
from capsule.ground import tomlcache

FILES = sorted(Path(capsule.__file__).parent.rglob("*.toml"))


def _cached(state_dir):
    return sorted((state_dir / "cache").glob("toml-*.marshal"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_packaged_file_reads_as_tomllib_reads_it(path, state_dir):
    data = path.read_bytes()
    want = tomllib.loads(data.decode("utf-8"))
    assert tomlcache.loads(data) == want          # parsed, and written to the cache
    assert len(_cached(state_dir)) == 1
    assert tomlcache.loads(data) == want          # read back from the cache


def test_a_damaged_or_unmarshalable_entry_is_parsed_again(state_dir):
    data = b'[a]\nb = [1, "two", 3.5, true]\n'
    assert tomlcache.loads(data) == {"a": {"b": [1, "two", 3.5, True]}}
    (entry,) = _cached(state_dir)
    entry.write_bytes(b"\x00garbage")
    assert tomlcache.loads(data) == {"a": {"b": [1, "two", 3.5, True]}}
    dated = b"when = 2026-12-01T08:00:00\n"          # marshal cannot hold a datetime: never cached
    assert tomlcache.loads(dated) == tomllib.loads(dated.decode())
    assert len(_cached(state_dir)) == 1


def test_bad_toml_raises_tomllibs_error_and_caches_nothing(state_dir):
    with pytest.raises(tomllib.TOMLDecodeError):
        tomlcache.loads(b"[a\n")
    with pytest.raises(UnicodeDecodeError):
        tomlcache.loads(b"a = '\xff'\n")
    assert _cached(state_dir) == []


def test_the_cache_keeps_the_newest_entries_only(state_dir):
    """Every edit of a project filter is new content: the cache holds at most MAX_ENTRIES, the newest."""
    import os

    for i in range(tomlcache.MAX_ENTRIES + 6):
        assert tomlcache.loads(f"n = {i}\n".encode()) == {"n": i}
        newest = max(_cached(state_dir), key=lambda p: p.stat().st_mtime_ns)
        os.utime(newest, ns=(i * 10 ** 9, i * 10 ** 9))        # distinct ages, whatever the clock's grain
    kept = _cached(state_dir)
    assert len(kept) == tomlcache.MAX_ENTRIES
    assert sorted(int(p.stat().st_mtime) for p in kept) == list(range(6, tomlcache.MAX_ENTRIES + 6))
