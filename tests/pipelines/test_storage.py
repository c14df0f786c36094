"""``pipelines.storage``: files created only where none exists, and written whole or not at all."""

from __future__ import annotations

import errno
import os

import pytest

from pipelines import storage


def test_an_exclusive_create_never_replaces_a_file(tmp_path):
    path = str(tmp_path / "lock")
    assert storage.create_exclusive(path, b"first")
    assert not storage.create_exclusive(path, b"second")
    assert storage.read_bytes(path) == b"first"
    assert storage.read_bytes(str(tmp_path / "none")) is None
    assert storage.read_bytes(str(tmp_path / "lock" / "under-a-file")) is None


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    path = tmp_path / "report.json"
    path.write_bytes(b"old")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device"):
        storage.write_atomic(str(path), b"new")
    assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    monkeypatch.undo()
    storage.write_atomic(str(path), b"new")
    assert path.read_bytes() == b"new" and sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_files_are_listed_at_any_depth_relative_to_the_output(tmp_path):
    (tmp_path / "chunks" / "sub").mkdir(parents=True)
    (tmp_path / "chunks" / "a.parquet").write_bytes(b"12")
    (tmp_path / "chunks" / "sub" / "b").write_bytes(b"123")
    assert sorted(storage.list_files(str(tmp_path), "chunks")) == [("chunks/a.parquet", 2), ("chunks/sub/b", 3)]
    assert storage.list_files(str(tmp_path), "deleted") == []
