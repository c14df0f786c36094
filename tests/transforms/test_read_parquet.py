"""The job's Parquet read (``transforms.beam.ReadParquetRows``): every row once, from any number of
files and row groups, on every running mode, and no Arrow data held while the rows are processed."""

from __future__ import annotations

import math
import weakref

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.beam import ReadDocumentIds, ReadDocuments, ReadParquetRows
from transforms.beam.read import _ReadRowGroupsDoFn, _RowGroupRangesDoFn, range_bytes
from transforms.integrity import parquet_fingerprint


def _invalid_utf8_strings(items: list[bytes]) -> pa.Array:
    offsets = np.cumsum([0] + [len(b) for b in items]).astype(np.int32)
    return pa.Array.from_buffers(
        pa.string(), len(items), [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(items))]
    )


@pytest.fixture
def files(tmp_path):
    """Parquet files of 20 rows in 7 row groups, of 3 rows in one, of one empty row group and of
    no row group, and a file of 0 bytes."""
    folder = tmp_path / "in"
    folder.mkdir()
    many = [{"doc_id": f"m{i:02d}", "text": f"text {i}", "n": i} for i in range(20)]
    pq.write_table(pa.Table.from_pylist(many), folder / "a.parquet", row_group_size=3)
    one = pa.table(
        {"doc_id": ["o1", "o2", "o3"], "text": _invalid_utf8_strings([b"x", b"bad \xff", b"z"]), "n": [1, 2, 3]}
    )
    pq.write_table(one, folder / "b.parquet")
    with pq.ParquetWriter(folder / "c.parquet", one.schema):
        pass  # no row group at all
    pq.write_table(one.slice(0, 0), folder / "e.parquet")  # one row group of no rows
    assert pq.ParquetFile(folder / "e.parquet").metadata.num_row_groups == 1
    (folder / "d.parquet").write_bytes(b"")
    expected = many + [
        {"doc_id": "o1", "text": "x", "n": 1},
        {"doc_id": "o2", "text": b"bad \xff", "n": 2},
        {"doc_id": "o3", "text": "z", "n": 3},
    ]
    return folder, expected


def _ranges(path):
    return list(_RowGroupRangesDoFn().process(FileSystems.match([str(path)])[0].metadata_list[0]))


def _fingerprint(path):
    with open(path, "rb") as f:
        return parquet_fingerprint(f)


def test_row_groups_are_cut_into_byte_ranges_of_a_quarter_of_beams_split(files, tmp_path):
    folder, _ = files
    a = folder / "a.parquet"
    assert _ranges(a) == [(str(a), 0, 7, _fingerprint(a))]  # under 256 KiB: one range
    assert _ranges(folder / "c.parquet") == [] and _ranges(folder / "d.parquet") == []
    # 12 row groups of 300,000 bytes: Beam's split size for 3.6 MB is 1000 * sqrt(size) bytes
    # (1.9 MB); a range holds the row groups that start in one quarter of it (474,000 bytes).
    path = tmp_path / "big.parquet"
    rows = [{"id": f"{i:02d}", "content": f"{i:02d}" + "x" * 299_998} for i in range(12)]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=2, compression="none", use_dictionary=False)
    target = max(2**20, 1000 * math.isqrt(path.stat().st_size)) // 4
    assert range_bytes(path.stat().st_size) == target
    # Row groups of 2 rows, 600,000 bytes: each over the target, so each cut into its rows.
    assert _ranges(path) == [(str(path), i // 2, i // 2 + 1, _fingerprint(path), i % 2, i % 2 + 1) for i in range(12)]
    # Row groups of one row (300,000 bytes, not cut): as many as start in one quarter of the split.
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=1, compression="none", use_dictionary=False)
    starts = [pq.ParquetFile(path).metadata.row_group(i).column(0).data_page_offset for i in range(12)]
    expected, start = [], 0
    for i in range(1, 13):
        if i == 12 or starts[i] // target != starts[start] // target:
            expected.append((str(path), start, i, _fingerprint(path)))
            start = i
    assert _ranges(path) == expected and 6 <= len(expected) < 12
    read = [row for r in _ranges(path) for row in _ReadRowGroupsDoFn(None, {}).process(r)]
    assert read == rows


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["in_memory", "multi_processing"])
def test_every_row_of_every_row_group_once_in_each_running_mode(files, mode):
    folder, expected = files
    options = PipelineOptions(runner="DirectRunner", direct_running_mode=mode, direct_num_workers=2)
    with BeamTestPipeline(options=options) as p:
        rows = p | ReadDocuments(str(folder / "*.parquet"), column_map={"id": "doc_id", "content": "text"})
        ids = p | ReadDocumentIds(str(folder / "*.parquet"), column_map={"id": "doc_id"})
        renamed = [{"id": r["doc_id"], "content": r["text"], "n": r["n"]} for r in expected]
        assert_that(rows, equal_to(renamed), label="rows")
        assert_that(ids, equal_to([{"id": r["doc_id"]} for r in expected]), label="ids")


def test_rows_within_a_range_come_in_file_order(files):
    folder, expected = files
    path = str(folder / "a.parquet")
    listed = _fingerprint(path)
    assert list(_ReadRowGroupsDoFn(None, {}).process((path, 0, 7, listed))) == expected[:20]
    assert list(_ReadRowGroupsDoFn(None, {}).process((path, 2, 4, listed))) == expected[6:12]


def test_a_pattern_that_matches_nothing_fails_when_the_pipeline_is_built(tmp_path):
    p = BeamTestPipeline(options=PipelineOptions(runner="DirectRunner"))
    pattern = str(tmp_path / "none" / "*.parquet")
    with pytest.raises(IOError, match="No files found based on the file pattern"):
        _ = p | ReadParquetRows(pattern)


def test_no_arrow_data_is_held_when_the_first_row_is_yielded(tmp_path, monkeypatch):
    """No row group's table is held while its rows are processed downstream (as Beam's
    ReadFromParquetBatched holds it): for one huge document, its Python string alone, not its
    Arrow data too."""
    path = tmp_path / "big.parquet"
    content = "word " * 1_000_000  # 5 MB
    pq.write_table(pa.table({"id": ["big", "small"], "content": [content, "x"]}), path)
    held = []
    read_row_group = pq.ParquetFile.read_row_group

    def spy(self, *args, **kwargs):
        table = read_row_group(self, *args, **kwargs)
        held.append(weakref.ref(table))
        held.append(weakref.ref(table.column("content").chunk(0).buffers()[2]))
        return table

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    before = pa.total_allocated_bytes()
    rows = _ReadRowGroupsDoFn(None, {}).process((str(path), 0, 1, _fingerprint(path)))
    first = next(rows)
    assert first == {"id": "big", "content": content}
    assert len(held) == 2 and [ref() for ref in held] == [None, None]
    assert pa.total_allocated_bytes() - before < len(content) // 10  # nothing of the row group in Arrow's pool
    second = next(rows)
    assert second == {"id": "small", "content": "x"}
    # The first row's values are no longer referenced by the reader once the next row is taken.
    assert rows.gi_frame is not None and all(
        v is None for values in rows.gi_frame.f_locals["columns"].values() for v in values[:1]
    )
