"""One view of the input: the duplicate-id count and the chunking read the same files from one
listing, each file's fingerprint checked when it is opened again; a file rewritten, removed or
damaged while the job runs stops it (exit status 1, one line, nothing committed)."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.io.filesystems import FileSystems

from pipelines.commit import MARKER_NAME
from pipelines.rechunk import main
from transforms.beam import read
from transforms.beam.read import _ReadRowGroupsDoFn, _RowGroupRangesDoFn
from transforms.integrity import (
    DAMAGED_PREVIOUS,
    INPUT_CHANGED,
    INPUT_UNREADABLE,
    InputChanged,
    InputUnreadable,
    parquet_fingerprint,
    stopped_run_line,
)


def _write(path, ids, **kwargs):
    rows = {
        "id": ids,
        "content": [f"# {i}\n\nThe text of {i}.\n" for i in ids],
        "content_format": ["markdown"] * len(ids),
    }
    pq.write_table(pa.table(rows), path, **kwargs)


def _fingerprint(path):
    with open(path, "rb") as f:
        return parquet_fingerprint(f)


def _ranges(path):
    return list(_RowGroupRangesDoFn().process(FileSystems.match([str(path)])[0].metadata_list[0]))


def test_the_fingerprint_is_the_files_and_changes_with_its_rows(tmp_path):
    path = tmp_path / "a.parquet"
    _write(path, ["a1", "a2"])
    listed = _fingerprint(path)
    size, _, digest = listed.partition(":")
    assert int(size) == path.stat().st_size and len(digest) == 64
    _write(path, ["a1", "a2"])
    assert _fingerprint(path) == listed  # the same rows written again: the same bytes
    _write(path, ["a1", "a3"])  # one id changed, same length
    assert path.stat().st_size == int(size) and _fingerprint(path) != listed


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "not a Parquet file: 0 bytes"),
        (b"id,content\nd,text\n", "it does not end with PAR1"),
        (b"PAR1" + b"\x00" * 8 + b"\xff\xff\x00\x00PAR1", "a footer of 65535 bytes in a file of 20"),
    ],
)
def test_a_file_that_does_not_end_as_parquet_has_no_fingerprint(tmp_path, data, problem):
    path = tmp_path / "x.parquet"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=problem):
        _fingerprint(path)


def test_a_file_rewritten_after_the_listing_stops_its_read(tmp_path):
    path = tmp_path / "a.parquet"
    _write(path, ["a1", "a2"])
    (listed,) = _ranges(path)
    _write(path, ["a1", "a3"])  # same size, other rows
    with pytest.raises(InputChanged, match=f"^{INPUT_CHANGED} .*a.parquet: rewritten after the job listed it"):
        list(_ReadRowGroupsDoFn(None, {}).process(listed))
    _write(path, ["a1", "a2", "a3"])
    with pytest.raises(InputChanged, match=r"\d+ bytes when listed, \d+ bytes when read again"):
        list(_ReadRowGroupsDoFn(None, {}).process(listed))


def test_a_file_removed_after_the_listing_stops_its_read(tmp_path):
    path = tmp_path / "a.parquet"
    _write(path, ["a1"])
    (listed,) = _ranges(path)
    path.unlink()
    with pytest.raises(InputChanged, match=r"a\.parquet: removed after the job listed it"):
        list(_ReadRowGroupsDoFn(None, {}).process(listed))


def test_a_listed_file_that_is_not_parquet_is_unreadable(tmp_path):
    path = tmp_path / "a.parquet"
    path.write_text("id,content\nd,some text\n")
    with pytest.raises(InputUnreadable, match=f"^{INPUT_UNREADABLE} .*a.parquet: not a readable Parquet file"):
        _ranges(path)


def _damage_first_page(path) -> None:
    """Flip a byte inside the compressed data of the first row group's largest column chunk."""
    group = pq.ParquetFile(path).metadata.row_group(0)
    column = max((group.column(i) for i in range(group.num_columns)), key=lambda c: c.total_compressed_size)
    data = bytearray(path.read_bytes())
    data[column.data_page_offset + column.total_compressed_size // 2] ^= 0x20
    path.write_bytes(bytes(data))


def test_a_page_that_fails_its_checksum_is_unreadable(tmp_path):
    path = tmp_path / "a.parquet"
    _write(path, [f"a{i}" for i in range(50)], write_page_checksum=True, compression="none", use_dictionary=False)
    _damage_first_page(path)
    (listed,) = _ranges(path)  # the footer is intact: listed
    with pytest.raises(InputUnreadable, match=r"a\.parquet: row group 0 cannot be read .*CRC"):
        list(_ReadRowGroupsDoFn(None, {}).process(listed))


def test_the_stopped_runs_line_is_found_in_a_runners_error():
    error = InputChanged("/in/b.parquet", "removed after the job listed it")
    wrapped = (
        f"Traceback (most recent call last):\n  ...\nRuntimeError: {error} [while running 'Read input/Read ids']\n"
    )
    assert stopped_run_line(wrapped) == str(error)
    assert str(error).startswith(f"{INPUT_CHANGED} /in/b.parquet: removed after the job listed it; nothing was")
    assert stopped_run_line("ValueError: something else") is None
    both = f"{InputUnreadable('/in/a.parquet', 'x')}\n{DAMAGED_PREVIOUS} chunks/: y"
    assert stopped_run_line(both) == str(InputUnreadable("/in/a.parquet", "x"))


@pytest.mark.slow
def test_an_input_file_rewritten_between_the_two_reads_stops_the_run(tmp_path, monkeypatch, capsys):
    """The duplicate-id count and the chunking each read every file once; the file is rewritten,
    its ids now repeating another file's, as soon as the first of the two reads is done with it.
    Whichever read comes second sees it changed: nothing is chunked twice under one id."""
    folder = tmp_path / "in"
    folder.mkdir()
    a, b = folder / "a.parquet", folder / "b.parquet"
    _write(a, ["a1", "a2", "a3"])
    _write(b, ["b1", "b2"])
    original = read._ReadRowGroupsDoFn.process
    rewritten = []

    def process(self, row_groups):
        yield from original(self, row_groups)
        if row_groups[0] == str(b) and not rewritten:
            rewritten.append(self._columns)
            shutil.copyfile(a, b)  # b now holds a's ids

    monkeypatch.setattr(read._ReadRowGroupsDoFn, "process", process)
    out = tmp_path / "out"
    status = main(["--input", f"{folder}/", "--output", str(out)])
    err = capsys.readouterr().err
    assert rewritten, "the file was never read"
    assert status == 1 and len(err.splitlines()) == 1, err
    assert err.startswith(f"rechunk: error: {INPUT_CHANGED} {b}: "), err
    assert err.rstrip().endswith("nothing was committed: rerun once no input file is written while the job reads it")
    assert not (out / MARKER_NAME).exists() and not (out / "report.json").exists()


@pytest.mark.slow
def test_a_damaged_input_page_stops_the_run(tmp_path, capsys):
    path = tmp_path / "in.parquet"
    _write(path, [f"d{i}" for i in range(50)], write_page_checksum=True, compression="none", use_dictionary=False)
    _damage_first_page(path)
    out = tmp_path / "out"
    status = main(["--input", str(path), "--output", str(out)])
    err = capsys.readouterr().err
    assert status == 1 and len(err.splitlines()) == 1, err
    assert err.startswith(f"rechunk: error: {INPUT_UNREADABLE} {path}: row group 0 cannot be read"), err
    assert not (out / MARKER_NAME).exists()
