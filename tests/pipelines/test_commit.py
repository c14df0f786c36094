"""The commit protocol (``pipelines.commit``): the output lock, the run's own files, the commit
marker written atomically and last, and what a reader takes as a finished run.

Tests run as root, for whom ``chmod 0555`` does not stop a write: a read-only output is simulated
by an ``os.open`` that fails as a read-only mount does, and a full disk by a write that fails
with ``ENOSPC`` partway.
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import commit, storage
from pipelines.options import OptionError, RunError
from pipelines.rechunk import main
from tests.conftest import write_documents
from transforms.beam.write import RUN_ID_KEY

FOLDERS = ("chunks", "dead_letter", "documents")
PREFIXES = ("chunks/chunks", "dead_letter/dead_letter", "documents/documents")


def _ended_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _write_lock(output: Path, **fields) -> Path:
    info = {"run_id": "other", "host": socket.gethostname(), "pid": os.getpid(), "started": "t", **fields}
    output.mkdir(parents=True, exist_ok=True)
    (output / commit.LOCK_NAME).write_text(json.dumps(info))
    return output / commit.LOCK_NAME


def _shard(output: Path, name: str, run_id: str | None, rows: int = 2) -> Path:
    """A Parquet file ``output/name`` of ``rows`` rows whose footer names ``run_id``."""
    path = output / name
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("a", pa.int64())])
    if run_id is not None:
        schema = schema.with_metadata({RUN_ID_KEY: run_id.encode()})
    with pq.ParquetWriter(path, schema) as writer:
        writer.write_table(pa.table({"a": list(range(rows))}))
    return path


def _written(output: Path, run_id: str) -> None:
    for prefix in PREFIXES:
        _shard(output, f"{prefix}-00000-of-00001.parquet", run_id)


# -- the lock ---------------------------------------------------------------------------------------


def test_a_second_lock_on_the_same_output_is_refused(tmp_path):
    run_id = commit.take_lock(str(tmp_path), FOLDERS)
    held = json.loads((tmp_path / commit.LOCK_NAME).read_text())
    assert held["run_id"] == run_id and held["pid"] == os.getpid() and held["host"] == socket.gethostname()
    with pytest.raises(OptionError) as refused:
        commit.take_lock(str(tmp_path), FOLDERS)
    message = str(refused.value)
    assert "another run is writing there" in message and run_id in message
    assert f"delete {tmp_path}/{commit.LOCK_NAME}" in message and "\n" not in message
    assert json.loads((tmp_path / commit.LOCK_NAME).read_text())["run_id"] == run_id


def test_a_stale_lock_of_an_ended_process_on_this_host_is_taken_over(tmp_path):
    _write_lock(tmp_path, pid=_ended_pid())
    assert commit.refuse_held_lock(str(tmp_path)).stale()
    run_id = commit.take_lock(str(tmp_path), FOLDERS)
    assert json.loads((tmp_path / commit.LOCK_NAME).read_text())["run_id"] == run_id
    assert not (tmp_path / f"{commit.LOCK_NAME}.takeover").exists()


@pytest.mark.parametrize(
    "fields",
    [{"host": "another-host", "pid": 1}, {"pid": os.getpid()}, {"pid": "garbled"}],
    ids=["another-host", "running", "unreadable"],
)
def test_a_lock_that_may_be_live_is_never_taken_over(tmp_path, fields):
    _write_lock(tmp_path, **fields)
    with pytest.raises(OptionError, match="another run is writing there"):
        commit.refuse_held_lock(str(tmp_path))
    with pytest.raises(OptionError, match="another run is writing there"):
        commit.take_lock(str(tmp_path), FOLDERS)


def test_a_takeover_in_progress_is_refused(tmp_path):
    lock = _write_lock(tmp_path, pid=_ended_pid())
    Path(f"{lock}.takeover").write_text("{}")
    with pytest.raises(OptionError, match="another run is taking over the lock"):
        commit.take_lock(str(tmp_path), FOLDERS)
    assert json.loads(lock.read_text())["run_id"] == "other"


def test_a_lock_is_released_by_its_run_only(tmp_path):
    lock = _write_lock(tmp_path)
    commit.release_lock(str(tmp_path), "mine")
    assert lock.exists()
    commit.release_lock(str(tmp_path), "other")
    assert not lock.exists()


def test_an_unwritable_output_is_an_option_error(tmp_path, monkeypatch):
    """A read-only mount (EROFS on the lock's create)."""
    real_open = os.open

    def read_only(path, flags, *args):
        if str(path).endswith(commit.LOCK_NAME):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(OptionError, match=r"cannot write there .*Read-only file system"):
        commit.take_lock(str(tmp_path), FOLDERS)


@pytest.mark.parametrize("where", ["chunks", "dead_letter", "documents"])
def test_a_file_where_a_data_folder_belongs_is_an_option_error(tmp_path, where):
    (tmp_path / where).write_text("a file")
    with pytest.raises(OptionError, match=f"{where} is a file; the run writes a folder there"):
        commit.take_lock(str(tmp_path), FOLDERS)
    assert not (tmp_path / commit.LOCK_NAME).exists()


@pytest.mark.parametrize("name", ["report.json", "_SUCCESS"])
def test_a_folder_where_the_report_or_marker_belongs_is_an_option_error(tmp_path, name):
    (tmp_path / name).mkdir()
    with pytest.raises(OptionError, match=f"{name} is a folder"):
        commit.take_lock(str(tmp_path), FOLDERS)
    assert not (tmp_path / commit.LOCK_NAME).exists()


def test_a_data_folder_that_cannot_be_written_is_an_option_error(tmp_path, monkeypatch):
    """A read-only ``chunks/`` (the probe folder cannot be made in it)."""

    def refused(path):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    monkeypatch.setattr(commit, "_probe_folder", refused)
    with pytest.raises(OptionError, match=r"cannot write in chunks/ \(.*Permission denied"):
        commit.take_lock(str(tmp_path), FOLDERS)
    assert not (tmp_path / commit.LOCK_NAME).exists()


@pytest.mark.parametrize(
    "left, message",
    [
        (lambda out: _committed(out), "holds a finished run (_SUCCESS)"),
        (lambda out: _shard(out, "dead_letter/dead_letter-00000-of-00001.parquet", "x"), "dead_letter/ already holds"),
    ],
    ids=["committed", "writing"],
)
def test_a_lock_taken_after_another_run_wrote_is_refused(tmp_path, left, message):
    """Another run may write, commit and release its lock between this run's first look at the
    output and its lock: what it left is found under the lock, and this run refused."""
    left(tmp_path)
    with pytest.raises(OptionError, match=re.escape(message)):
        commit.take_lock(str(tmp_path), FOLDERS)
    assert not (tmp_path / commit.LOCK_NAME).exists()


# -- the run's own files ----------------------------------------------------------------------------


def test_the_files_of_the_run_are_listed_with_their_bytes_and_rows(tmp_path):
    run_id = commit.take_lock(str(tmp_path), FOLDERS)
    _written(tmp_path, run_id)
    _shard(tmp_path, "chunks/_hidden.parquet", None)
    files = commit.verify_written(str(tmp_path), run_id, PREFIXES)
    assert list(files) == sorted(f"{p}-00000-of-00001.parquet" for p in PREFIXES)
    chunks = tmp_path / "chunks" / "chunks-00000-of-00001.parquet"
    assert files["chunks/chunks-00000-of-00001.parquet"] == {"bytes": chunks.stat().st_size, "rows": 2}


@pytest.mark.parametrize(
    "disturb, message",
    [
        (lambda out, _: _shard(out, "chunks/chunks-00000-of-00002.parquet", "other"), "was not written by this run"),
        (lambda out, _: _shard(out, "chunks/beam-temp-x/part.parquet", None), "was not written by this run"),
        (lambda out, _: (out / "documents" / "notes.txt").write_text("x"), "was not written by this run"),
        (lambda out, _: (out / "documents" / "documents-00000-of-00001.parquet").unlink(), "documents/documents-*"),
        (
            lambda out, run_id: _shard(out, "chunks/kept-00001-of-00002.parquet", run_id),
            "kept-00000-of-00002.parquet is missing",
        ),
        (lambda out, _: _write_lock(out, run_id="another"), "is no longer this run's"),
        (lambda out, _: (out / commit.LOCK_NAME).unlink(), "is no longer this run's (it is gone)"),
    ],
    ids=["foreign-shard", "temporary-files", "stray-file", "lost-shard", "incomplete-set", "lock-taken", "lock-gone"],
)
def test_an_output_another_writer_disturbed_is_not_committed(tmp_path, disturb, message):
    run_id = commit.take_lock(str(tmp_path), FOLDERS)
    _written(tmp_path, run_id)
    disturb(tmp_path, run_id)
    with pytest.raises(RunError) as refused:
        commit.verify_written(str(tmp_path), run_id, PREFIXES)
    assert message in str(refused.value) and str(refused.value).endswith("nothing committed")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda out: _shard(out, "chunks/chunks-00000-of-00002.parquet", "other"), "was not written by this run"),
        (lambda out: _shard(out, "chunks/chunks-00000-of-00001.parquet", "other", rows=50), "was not written"),
        (lambda out: (out / "chunks" / "chunks-00000-of-00001.parquet").unlink(), "is gone"),
    ],
    ids=["added", "replaced", "removed"],
)
def test_files_changed_after_the_check_are_not_committed(tmp_path, change, message):
    """Between the check of the files and the commit (while the report is built), another writer
    changes them: nothing is committed."""
    run_id = commit.take_lock(str(tmp_path), FOLDERS)
    _written(tmp_path, run_id)
    files = commit.verify_written(str(tmp_path), run_id, PREFIXES)
    change(tmp_path)
    with pytest.raises(RunError, match=message):
        commit.commit(str(tmp_path), run_id, files, {"documents_read": 3})
    assert not (tmp_path / "report.json").exists() and not (tmp_path / "_SUCCESS").exists()


# -- the commit and its readers ---------------------------------------------------------------------


def _committed(output: Path) -> str:
    run_id = commit.take_lock(str(output), FOLDERS)
    _written(output, run_id)
    files = commit.verify_written(str(output), run_id, PREFIXES)
    commit.commit(str(output), run_id, files, {"documents_read": 3})
    commit.release_lock(str(output), run_id)
    return run_id


def test_a_committed_output_is_a_finished_run(tmp_path):
    run_id = _committed(tmp_path)
    marker = json.loads((tmp_path / "_SUCCESS").read_text())
    assert marker["run_id"] == run_id and set(marker["files"]) == {f"{p}-00000-of-00001.parquet" for p in PREFIXES}
    assert all(f["rows"] == 2 for f in marker["files"].values())
    import hashlib

    assert marker["report_sha256"] == hashlib.sha256((tmp_path / "report.json").read_bytes()).hexdigest()
    assert not (tmp_path / commit.LOCK_NAME).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "_SUCCESS",
        "chunks",
        "dead_letter",
        "documents",
        "report.json",
    ]
    assert commit.unfinished_reason(str(tmp_path)) is None
    (tmp_path / "chunks" / ".DS_Store").write_bytes(b"x")  # names starting with . or _ are no data
    assert commit.unfinished_reason(str(tmp_path)) is None


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda out: (out / "_SUCCESS").unlink(), "no _SUCCESS there"),
        (lambda out: (out / "_SUCCESS").write_text("{}"), "_SUCCESS is not a rechunk commit marker"),
        (lambda out: (out / "report.json").write_text("{}"), "report.json is not the one _SUCCESS names"),
        (lambda out: (out / "report.json").unlink(), "report.json is missing"),
        (
            lambda out: (out / "chunks" / "chunks-00000-of-00001.parquet").unlink(),
            "chunks/chunks-00000-of-00001.parquet is missing",
        ),
        (
            lambda out: _shard(out, "chunks/chunks-00000-of-00001.parquet", "x", rows=100),
            "chunks/chunks-00000-of-00001.parquet has",
        ),
        (lambda out: _shard(out, "deleted/deleted-00000-of-00001.parquet", "x"), "deleted/deleted-00000-of-00001"),
        (lambda out: _write_lock(out) and (out / "_SUCCESS").unlink(), "_rechunk.lock names run other"),
    ],
    ids=["no-marker", "not-a-marker", "report-changed", "report-gone", "file-gone", "file-changed", "extra", "lock"],
)
def test_an_output_that_differs_from_its_marker_is_not_finished(tmp_path, change, reason):
    _committed(tmp_path)
    change(tmp_path)
    assert reason in commit.unfinished_reason(str(tmp_path))


class _DiskFullAfter:
    """A file object whose writes fail with ENOSPC once ``room`` bytes are written."""

    def __init__(self, handle, room: int) -> None:
        self._handle, self._room = handle, room

    def write(self, data: bytes) -> int:
        if len(data) > self._room:
            self._handle.write(data[: self._room])
            self._room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._room -= len(data)
        return self._handle.write(data)

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


def _fill_disk(monkeypatch, name: str, room: int = 10) -> None:
    """Writes of ``_NAME.tmp-*`` fail once ``room`` bytes are written (the disk is full)."""
    import builtins

    def full_open(path, mode="r", *args, **kwargs):
        handle = builtins.open(path, mode, *args, **kwargs)  # noqa: SIM115 (closed by the caller)
        return _DiskFullAfter(handle, room) if os.path.basename(str(path)).startswith(f"_{name}.tmp") else handle

    monkeypatch.setattr(storage, "open", full_open, raising=False)


@pytest.mark.parametrize("name", ["report.json", "_SUCCESS"])
def test_a_full_disk_while_committing_leaves_no_report_and_no_marker(tmp_path, monkeypatch, name):
    run_id = commit.take_lock(str(tmp_path), FOLDERS)
    _written(tmp_path, run_id)
    files = commit.verify_written(str(tmp_path), run_id, PREFIXES)
    _fill_disk(monkeypatch, name)
    with pytest.raises(RunError, match=re.escape(f"cannot write {tmp_path}/{name} (No space left on device); nothing")):
        commit.commit(str(tmp_path), run_id, files, {"documents_read": 3})
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [commit.LOCK_NAME, "chunks", "dead_letter", "documents"], left
    assert commit.unfinished_reason(str(tmp_path)).startswith("no _SUCCESS there")


# -- whole runs ------------------------------------------------------------------------------------


@pytest.fixture()
def docs(tmp_path):
    return write_documents(
        tmp_path / "in" / "docs.parquet",
        [{"id": "a", "content": "Hello world.\n\nSecond paragraph.", "content_format": "text", "metadata": None}],
    )


def _one_line(capsys, code: int) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rechunk: error: "), err
    return err[0]


def test_a_run_into_an_output_another_run_holds_is_refused(tmp_path, docs, capsys):
    out = tmp_path / "out"
    _write_lock(out)
    assert main(["--input", str(docs), "--output", str(out)]) == 2
    assert f"{out}/{commit.LOCK_NAME}: run other, pid {os.getpid()}" in _one_line(capsys, 2)
    assert not (out / "chunks").exists()


def test_a_rerun_into_a_killed_runs_output_is_refused_with_a_hint(tmp_path, docs, capsys):
    """A killed run left its lock and chunks/beam-temp-*/: the rerun is refused, saying so."""
    out = tmp_path / "out"
    _write_lock(out, pid=_ended_pid())
    leftover = out / "chunks" / "beam-temp-chunks-0123" / "0a1b.chunks.parquet"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"PAR1 partial")
    assert main(["--input", str(docs), "--output", str(out)]) == 2
    line = _one_line(capsys, 2)
    assert "chunks/ already holds files" in line and "a run that ended without committing left them" in line


@pytest.mark.slow
def test_a_rerun_after_a_run_killed_before_writing_takes_its_lock_and_commits(tmp_path, docs):
    out = tmp_path / "out"
    _write_lock(out, pid=_ended_pid())
    assert main(["--input", str(docs), "--output", str(out)]) == 0
    assert commit.unfinished_reason(str(out)) is None and not (out / commit.LOCK_NAME).exists()


def test_an_unwritable_output_is_one_line_and_exit_2(tmp_path, docs, capsys):
    """A file where chunks/ belongs: one line before the pipeline starts, not a traceback."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "chunks").write_text("a file")
    assert main(["--input", str(docs), "--output", str(out)]) == 2
    assert f"--output {out}: chunks is a file; the run writes a folder there" in _one_line(capsys, 2)
    assert not (out / commit.LOCK_NAME).exists()


def test_a_read_only_output_is_one_line_and_exit_2(tmp_path, docs, capsys, monkeypatch):
    """A read-only mount (simulated: root writes through chmod 0555): EROFS on the lock's create
    is one line before the pipeline starts, not a traceback at the first write."""
    out = tmp_path / "out"
    out.mkdir()
    real_open = os.open

    def read_only(path, flags, *args):
        if str(path).startswith(str(out)) and flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    assert main(["--input", str(docs), "--output", str(out)]) == 2
    assert f"--output {out}: cannot write there ([Errno 30] Read-only file system" in _one_line(capsys, 2)
    assert list(out.iterdir()) == []


@pytest.mark.slow
def test_a_run_whose_files_another_writer_disturbed_is_not_committed(tmp_path, docs, capsys, monkeypatch):
    """Another writer's shard lands in chunks/ before the commit: exit 1, one line, no report.json,
    no _SUCCESS, and the lock released."""
    import pipelines.rechunk as rechunk

    build_report = rechunk.build_report

    def disturbed(*args, **kwargs):  # another run's shard, of the same chunks
        chunks = tmp_path / "out" / "chunks"
        table = pq.read_table(chunks / "chunks-00000-of-00001.parquet")
        pq.write_table(
            table.replace_schema_metadata({RUN_ID_KEY: b"another-run"}), chunks / "chunks-00000-of-00002.parquet"
        )
        return build_report(*args, **kwargs)

    monkeypatch.setattr(rechunk, "build_report", disturbed)
    out = tmp_path / "out"
    assert main(["--input", str(docs), "--output", str(out)]) == 1
    line = _one_line(capsys, 1)
    assert "chunks-00000-of-00002.parquet was not written by this run" in line and "nothing committed" in line
    assert not (out / "report.json").exists() and not (out / "_SUCCESS").exists()
    assert not (out / commit.LOCK_NAME).exists()


@pytest.mark.slow
def test_a_full_disk_at_the_end_of_a_run_commits_nothing(tmp_path, docs, capsys, monkeypatch):
    out = tmp_path / "out"
    _fill_disk(monkeypatch, "report.json")
    assert main(["--input", str(docs), "--output", str(out)]) == 1
    assert "report.json (No space left on device); nothing committed" in _one_line(capsys, 1)
    assert sorted(p.name for p in out.iterdir()) == ["chunks", "dead_letter", "documents"]


@pytest.mark.slow
def test_previous_and_check_refuse_an_uncommitted_output(tmp_path, docs, capsys):
    from pipelines.check import main as check

    previous = tmp_path / "previous"
    assert main(["--input", str(docs), "--output", str(previous)]) == 0
    assert check(["--input", str(docs), "--output", str(previous)]) == 0
    (previous / "_SUCCESS").unlink()
    capsys.readouterr()
    assert main(["--input", str(docs), "--output", str(tmp_path / "next"), "--previous", str(previous)]) == 2
    assert f"--previous {previous}: not a finished run: no _SUCCESS there" in _one_line(capsys, 2)
    assert check(["--input", str(docs), "--output", str(previous)]) == 1
    assert "PROBLEM not a finished run: no _SUCCESS there" in capsys.readouterr().out
