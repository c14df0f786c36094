"""A row group cut into ranges of rows (``transforms.beam.read``): the ranges of a large row group
read together give exactly the rows of a whole read, in order, none twice and none lost, with the
same values (renamed columns, bytes for invalid UTF-8, long texts kept in Arrow), the listing's
fingerprint checked, and no more than one range's Arrow data held."""

from __future__ import annotations

import math
import random
import weakref

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.io.filesystems import FileSystems

from transforms.beam import read
from transforms.beam.read import MAX_ROW_RANGES, _ReadRowGroupsDoFn, _RowGroupRangesDoFn, range_bytes, row_ranges
from transforms.columns import ArrowText
from transforms.integrity import InputChanged, InputUnreadable, parquet_fingerprint


def _ranges(path) -> list[tuple]:
    return list(_RowGroupRangesDoFn().process(FileSystems.match([str(path)])[0].metadata_list[0]))


def _fingerprint(path) -> str:
    with open(path, "rb") as f:
        return parquet_fingerprint(f)


def _read(ranges, columns=None, rename=None, text_limits=None) -> list[dict]:
    dofn = _ReadRowGroupsDoFn(columns, rename or {}, text_limits)
    return [row for r in ranges for row in dofn.process(r)]


def _words(rng: random.Random, n: int) -> str:
    return " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(1, 9))) for _ in range(n))


def _invalid_utf8(items: list[bytes | None]) -> pa.Array:
    data = [b or b"" for b in items]
    offsets = np.cumsum([0] + [len(b) for b in data]).astype(np.int32)
    validity = pa.array([b is not None for b in items]).buffers()[1]
    return pa.Array.from_buffers(
        pa.string(), len(items), [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data))]
    )


@pytest.fixture
def one_row_group(tmp_path):
    """One row group of 101 rows, about 900 KB uncompressed (over the 256 KiB target of a file
    under 4 MB): a null, an invalid UTF-8 value and a long text among them, and a pandas index."""
    rng = random.Random(7)
    texts: list[bytes | None] = [_words(rng, rng.randint(200, 2_000)).encode() for _ in range(101)]
    texts[0], texts[50], texts[100] = None, b"bad \xff", ("long " * 6_000).encode()
    table = pa.table(
        {
            "doc_id": [f"d{i:03d}" for i in range(101)],
            "text": _invalid_utf8(texts),
            "n": list(range(101)),
            "__index_level_0__": list(range(1000, 1101)),
        }
    )
    path = tmp_path / "one.parquet"
    pq.write_table(table, path, row_group_size=len(table), compression="none")
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    return path


def test_row_ranges_cut_rows_into_equal_ranges_the_last_partial():
    assert row_ranges(10, 3) == [(0, 4), (4, 8), (8, 10)]
    assert row_ranges(10, 1) == [(0, 10)]
    assert row_ranges(3, 10) == [(0, 1), (1, 2), (2, 3)]  # never an empty range
    assert row_ranges(9, 3) == [(0, 3), (3, 6), (6, 9)]
    assert row_ranges(0, 4) == []
    assert row_ranges(5, 0) == [(0, 5)]


def test_a_large_row_group_is_listed_as_ranges_of_its_rows(one_row_group):
    path, listed = str(one_row_group), _fingerprint(one_row_group)
    ranges = _ranges(one_row_group)
    size = one_row_group.stat().st_size
    pieces = -(-pq.ParquetFile(path).metadata.row_group(0).total_byte_size // range_bytes(size))
    assert range_bytes(size) == 2**20 // 4 and len(ranges) == pieces >= 3
    assert ranges == [(path, 0, 1, listed, first, stop) for first, stop in row_ranges(101, pieces)]


def test_a_row_group_is_cut_into_at_most_max_row_ranges(tmp_path, monkeypatch):
    """A row group of 40 rows of 300,000 bytes (12 MB, 13.9 times its file's 866,000-byte target)
    is cut into 14 ranges, or into ``MAX_ROW_RANGES`` when that is fewer; every row read once."""
    path = tmp_path / "wide.parquet"
    rows = [{"id": f"{i:02d}", "content": f"{i:02d}" + "x" * 299_998} for i in range(40)]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=40, compression="none", use_dictionary=False)
    assert range_bytes(path.stat().st_size) == 1000 * math.isqrt(path.stat().st_size) // 4 == 866_000
    assert MAX_ROW_RANGES == 32 and [r[4:] for r in _ranges(path)] == row_ranges(40, 14)
    monkeypatch.setattr(read, "MAX_ROW_RANGES", 4)
    ranges = _ranges(path)
    assert [r[4:] for r in ranges] == [(0, 10), (10, 20), (20, 30), (30, 40)]
    assert _read(ranges) == rows


@pytest.mark.parametrize("pieces", [1, 2, 3, 7, 10, 100, 101])
def test_ranges_of_one_row_group_read_as_the_whole_row_group(one_row_group, pieces):
    """Every row once, in file order, whatever the cut (the last range partial but for 101)."""
    path, listed = str(one_row_group), _fingerprint(one_row_group)
    whole = _read([(path, 0, 1, listed)])
    assert len(whole) == 101 and whole[50]["text"] == b"bad \xff" and whole[0]["text"] is None
    assert whole[7]["__index_level_0__"] == 1007  # the index column is read as any other
    ranges = [(path, 0, 1, listed, first, stop) for first, stop in row_ranges(101, pieces)]
    assert _read(ranges) == whole
    # Columns chosen and renamed as a whole read does.
    assert _read(ranges, ["doc_id"], {"doc_id": "id"}) == [{"id": row["doc_id"]} for row in whole]
    renamed = _read(ranges, None, {"text": "content", "doc_id": "id"})
    assert [r["content"] for r in renamed] == [r["text"] for r in whole]


def test_a_long_text_stays_arrow_in_a_range_as_in_a_whole_read(one_row_group):
    path, listed = str(one_row_group), _fingerprint(one_row_group)
    limits = {"content": 25_000}  # (the other texts are under 20,000 characters)
    last = _read([(path, 0, 1, listed, 90, 101)], None, {"text": "content"}, limits)
    assert [r["n"] for r in last] == list(range(90, 101))
    assert isinstance(last[-1]["content"], ArrowText) and str(last[-1]["content"]) == "long " * 6_000
    assert all(isinstance(r["content"], str) for r in last[:-1])


def test_empty_files_and_row_groups_give_no_ranges_of_rows(tmp_path):
    schema = pa.schema([("id", pa.string()), ("content", pa.string())])
    empty = tmp_path / "empty.parquet"
    pq.write_table(schema.empty_table(), empty)  # one row group of no rows
    assert _ranges(empty) == [(str(empty), 0, 1, _fingerprint(empty))] and _read(_ranges(empty)) == []
    none = tmp_path / "none.parquet"
    with pq.ParquetWriter(none, schema):
        pass  # no row group
    assert _ranges(none) == []


def test_a_range_checks_the_listing_fingerprint(one_row_group):
    (listed,) = _ranges(one_row_group)[-1:]
    table = pq.read_table(one_row_group)
    pq.write_table(table.slice(0, 100), one_row_group, compression="none")
    with pytest.raises(InputChanged, match="bytes when listed"):
        _read([listed])


def test_a_range_holds_one_range_of_arrow_data_and_none_when_its_first_row_goes_on(one_row_group, monkeypatch):
    """The rows before the range are decoded a range at a time and dropped, the read stops at the
    range's end, and no batch is referenced once the range's first row is yielded."""
    path, listed = str(one_row_group), _fingerprint(one_row_group)
    seen: list[tuple[int, weakref.ref]] = []
    iter_batches = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        for batch in iter_batches(self, *args, **kwargs):
            seen.append((batch.num_rows, weakref.ref(batch)))
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", None)  # a range never reads its whole row group
    rows = _ReadRowGroupsDoFn(None, {}).process((path, 0, 1, listed, 60, 80))
    first = next(rows)
    assert first["n"] == 60
    assert [n for n, _ in seen] == [20, 20, 20, 20]  # up to the range's end, a range's rows at a time
    assert all(ref() is None for _, ref in seen)
    assert [r["n"] for r in rows] == list(range(61, 80))


def _footer_lists_one_row_more(path, rows: int) -> None:
    """Rewrite the footer's row counts (the file's, the row group's, the column chunks' values)
    from ``rows`` to ``rows + 1``: Thrift compact i64 fields (header 0x16) whose zigzag varints
    have the same length, so the footer keeps its size and the pages are untouched."""
    import struct

    def field(n: int) -> bytes:
        return bytes([0x16, (2 * n) & 0x7F | 0x80, (2 * n) >> 7])

    data = bytearray(path.read_bytes())
    size = struct.unpack("<I", data[-8:-4])[0]
    footer = bytes(data[-8 - size : -8])
    assert footer.count(field(rows)) >= 2
    data[-8 - size : -8] = footer.replace(field(rows), field(rows + 1))
    path.write_bytes(bytes(data))
    assert pq.ParquetFile(path).metadata.row_group(0).num_rows == rows + 1


def test_a_range_past_the_rows_its_pages_hold_is_unreadable_not_short(one_row_group):
    _footer_lists_one_row_more(one_row_group, 101)
    ranges = _ranges(one_row_group)
    assert len(ranges) > 1 and ranges[-1][-1] == 102
    with pytest.raises(InputUnreadable, match="holds 101 rows, its footer lists at least 102"):
        _read(ranges)


def test_a_whole_row_group_of_fewer_rows_than_its_footer_lists_is_unreadable(tmp_path):
    path = tmp_path / "small.parquet"
    table = pa.table({"id": [f"d{i}" for i in range(70)], "content": ["x y"] * 70})
    pq.write_table(table, path, use_dictionary=False, compression="none")
    _footer_lists_one_row_more(path, 70)
    (listed,) = _ranges(path)
    assert listed[1:3] == (0, 1) and len(listed) == 4  # read whole, not in ranges of rows
    with pytest.raises(InputUnreadable, match="holds 70 rows, its footer lists 71"):
        _read([listed])
