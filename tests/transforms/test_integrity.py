"""Nothing from ``--previous`` is copied on faith: kept chunk rows are checked against their own
ids, every page against its checksum, and damage stops the run (exit status 1, one line, nothing
committed) or leaves output equal to a fresh run's; never changed text under an old id."""

from __future__ import annotations

import json
import re
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.commit import MARKER_NAME
from pipelines.rechunk import main
from tests.conftest import REPO, read_output
from transforms.documents import ChunkKeys, chunk_id, document_hash
from transforms.integrity import (
    DAMAGED_PREVIOUS,
    add_index_set_digests,
    digest_key,
    index_set_digest,
    kept_chunk_problem,
    kept_count_problem,
)

SAMPLE = REPO / "sample" / "docs.parquet"


def _kept(texts: list[str]) -> pa.Table:
    keys = ChunkKeys("d")
    return pa.table(
        {
            "document_id": ["d"] * len(texts),
            "chunk_index": list(range(len(texts))),
            "text": texts,
            "chunk_id": [chunk_id("d", i, t) for i, t in enumerate(texts)],
            "document_hash": [document_hash("".join(texts))] * len(texts),
            "embedding_text": [f"# Title\n\n{t}" for t in texts],
            "chunk_key": [keys.next(f"# Title\n\n{t}") for t in texts],
        }
    )


def test_intact_kept_rows_pass():
    assert kept_chunk_problem(_kept(["One chunk.", "Two chunks."])) is None


def test_every_changed_character_of_a_kept_text_is_found():
    table = _kept(["Alpha beta.", "Gamma delta."])
    text = table.column("text").to_pylist()
    for row in range(2):
        for position in range(len(text[row])):
            changed = list(text)
            changed[row] = changed[row][:position] + chr(ord(changed[row][position]) ^ 1) + changed[row][position + 1 :]
            damaged = table.set_column(2, "text", pa.array(changed))
            assert kept_chunk_problem(damaged) == f"chunk {row} of document 'd': its chunk_id is not the id of its text"


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("chunk_index", [0, 2], "chunk 2 of document 'd': its chunk_id is not the id of its text"),
        ("document_id", ["d", "e"], "chunk 1 of document 'e': its chunk_id is not the id of its text"),
        ("document_hash", ["0" * 64, "z" * 64], "chunk 1 of document 'd': its document_hash is not a sha256 digest"),
        ("chunk_id", [None, "x"], "a chunk row of document 'd' has a null field"),
    ],
)
def test_a_changed_id_index_or_digest_is_found(column, value, problem):
    table = _kept(["One.", "Two."])
    field = table.schema.get_field_index(column)
    assert (
        kept_chunk_problem(table.set_column(field, column, pa.array(value, table.schema.field(column).type))) == problem
    )


def test_every_changed_character_of_a_kept_embedding_text_is_found():
    table = _kept(["Alpha beta.", "Gamma delta."])
    embedded = table.column("embedding_text").to_pylist()
    field = table.schema.get_field_index("embedding_text")
    for row in range(2):
        for position in range(len(embedded[row])):
            changed = list(embedded)
            changed[row] = changed[row][:position] + chr(ord(changed[row][position]) ^ 1) + changed[row][position + 1 :]
            damaged = table.set_column(field, "embedding_text", pa.array(changed))
            assert (
                kept_chunk_problem(damaged)
                == f"chunk {row} of document 'd': its chunk_key is not the key of its embedding_text"
            )


def test_kept_rows_of_a_repeated_text_pass_with_their_occurrence_keys():
    table = _kept(["Same.", "Other.", "Same.", "Same."])
    keys = table.column("chunk_key").to_pylist()
    assert len(set(keys)) == 4 and kept_chunk_problem(table) is None
    # a key that is no occurrence's key of its text
    swapped = table.set_column(table.schema.get_field_index("chunk_key"), "chunk_key", pa.array(keys[:3] + ["0" * 64]))
    assert kept_chunk_problem(swapped) == "chunk 3 of document 'd': its chunk_key is not the key of its embedding_text"


def test_kept_rows_without_chunk_keys_are_refused():
    assert kept_chunk_problem(_kept(["One."]).drop_columns(["chunk_key"])) == (
        "chunks/ has no chunk_key column (written by an earlier rechunk version)"
    )


def test_outputs_carry_page_checksums(tmp_path):
    out = tmp_path / "out"
    assert main(["--input", str(SAMPLE), "--output", str(out)]) == 0
    for path in sorted(out.glob("chunks/*.parquet")):
        with pq.ParquetFile(path, page_checksum_verification=True) as parquet:
            parquet.read()  # verified
        _flip(path, _first_data_page_byte(path))
        with pytest.raises(OSError, match="CRC checksum verification failed"):
            pq.ParquetFile(path, page_checksum_verification=True).read()
        break


def _first_data_page_byte(path) -> int:
    """A byte inside the compressed data of the largest column chunk of the first row group."""
    group = pq.ParquetFile(path).metadata.row_group(0)
    column = max((group.column(i) for i in range(group.num_columns)), key=lambda c: c.total_compressed_size)
    return column.data_page_offset + column.total_compressed_size // 2


def _flip(path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x20
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def previous(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("previous")
    assert main(["--input", str(SAMPLE), "--output", str(tmp / "previous")]) == 0
    assert main(["--input", str(SAMPLE), "--output", str(tmp / "fresh")]) == 0
    return tmp


def _rows(directory, sub):
    return sorted(json.dumps(r, sort_keys=True) for r in read_output(directory, sub))


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["chunks", "documents"])
@pytest.mark.parametrize("fraction", [0.02, 0.2, 0.4, 0.6, 0.8, 0.97])
def test_a_flipped_byte_in_a_previous_output_is_never_copied(previous, tmp_path, capsys, folder, fraction):
    damaged = tmp_path / "previous"
    shutil.copytree(previous / "previous", damaged)
    files = sorted((damaged / folder).glob("*.parquet"))
    path = max(files, key=lambda p: p.stat().st_size)
    _flip(path, int(path.stat().st_size * fraction))  # same size: _SUCCESS still lists it
    out = tmp_path / "out"
    capsys.readouterr()
    status = main(["--input", str(SAMPLE), "--output", str(out), "--previous", str(damaged)])
    err = capsys.readouterr().err
    if status == 0:  # the damage was seen and the documents chunked afresh, or the byte mattered to nothing kept
        for sub in ("chunks", "documents", "dead_letter"):
            assert _rows(out, sub) == _rows(previous / "fresh", sub), sub
    else:
        assert status in (1, 2), err
        assert len(err.splitlines()) == 1 and err.startswith("rechunk: error: "), err
        assert not (out / MARKER_NAME).exists()
        if status == 1:
            assert DAMAGED_PREVIOUS in err


@pytest.mark.slow
def test_a_kept_chunk_whose_text_changed_under_its_id_stops_the_run(previous, tmp_path, capsys):
    """A previous chunk file rewritten whole (valid checksums) with one text changed: exit 1, one line."""
    damaged = tmp_path / "previous"
    shutil.copytree(previous / "previous", damaged)
    path = sorted((damaged / "chunks").glob("*.parquet"))[0]
    table = pq.read_table(path)
    texts = table.column("text").to_pylist()
    texts[0] = texts[0].replace("e", "E", 1)
    table = table.set_column(table.schema.get_field_index("text"), "text", pa.array(texts))
    pq.write_table(table, path, write_page_checksum=True)
    from tests.conftest import recommit

    recommit(damaged)
    status = main(["--input", str(SAMPLE), "--output", str(tmp_path / "out"), "--previous", str(damaged)])
    err = capsys.readouterr().err
    assert status == 1 and len(err.splitlines()) == 1
    assert err.startswith(f"rechunk: error: {DAMAGED_PREVIOUS} chunks/: chunk 0 of document ")
    assert not (tmp_path / "out" / MARKER_NAME).exists()


def test_a_kept_documents_rows_must_be_its_chunks_each_once():
    assert kept_count_problem("d", 3, 3, index_set_digest([2, 0, 1])) is None
    assert kept_count_problem("d", 3, 2, index_set_digest([0, 1])) == (
        "document 'd': 2 chunk rows in chunks/, its manifest row says 3"
    )
    assert kept_count_problem("d", 3, 3, index_set_digest([0, 0, 2])) == (
        "document 'd': its chunk rows are not chunks 0 to 2, each once"
    )
    assert kept_count_problem("d", 2, 2, index_set_digest([0, 2])) is not None
    assert kept_count_problem("d", 0, 0, index_set_digest([])) is None


def test_index_set_digests_add_up_across_parts_in_any_order():
    whole = index_set_digest(range(10))
    parts = [index_set_digest([7, 1, 3]), index_set_digest([0, 9]), index_set_digest([2, 4, 5, 6, 8])]
    total = 0
    for part in reversed(parts):
        total = add_index_set_digests(total, part)
    assert total == whole
    assert index_set_digest([0, 1, 1, 2]) != index_set_digest([0, 1, 2, 2])


def test_a_kept_row_of_another_documents_hash_is_found():
    table = _kept(["One.", "Two."])
    own = {"d": digest_key(document_hash("One.Two."))}
    assert kept_chunk_problem(table, own) is None
    assert kept_chunk_problem(table, {"d": digest_key("f" * 64)}) == (
        "chunk 0 of document 'd': its document_hash is not its document's"
    )


def _edit_chunks(damaged, edit) -> None:
    """Rewrite the previous run's largest chunk file with ``edit`` applied to its rows (valid
    checksums, same row count), and its commit marker to match: only the deeper checks can see it."""
    from tests.conftest import recommit

    path = max(sorted((damaged / "chunks").glob("*.parquet")), key=lambda p: p.stat().st_size)
    table = pq.read_table(path)
    rows = edit(table.to_pylist())
    assert len(rows) == table.num_rows
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path, write_page_checksum=True)
    recommit(damaged)


def _moved_row(rows):
    """The last chunk of one document replaced by a copy of another document's first chunk."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["document_id"]] = counts.get(row["document_id"], 0) + 1
    many = [d for d, n in counts.items() if n > 1]
    short, other = many[0], next(d for d in counts if d != many[0])
    last = max(i for i, r in enumerate(rows) if r["document_id"] == short)
    rows[last] = dict(next(r for r in rows if r["document_id"] == other))
    return rows


def _repeated_row(rows):
    """A document's second chunk replaced by a copy of its first (each row's id still its own)."""
    first = next(
        i
        for i, r in enumerate(rows)
        if r["chunk_index"] == 0 and any(s["document_id"] == r["document_id"] and s["chunk_index"] == 1 for s in rows)
    )
    second = next(
        i for i, r in enumerate(rows) if r["document_id"] == rows[first]["document_id"] and r["chunk_index"] == 1
    )
    rows[second] = dict(rows[first])
    return rows


def _other_hash(rows):
    rows[0]["document_hash"] = "f" * 64  # a well-formed digest, of no document
    return rows


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (_moved_row, r"document '[^']+': \d+ chunk rows in chunks/, its manifest row says \d+"),
        (_repeated_row, r"document '[^']+': its chunk rows are not chunks 0 to \d+, each once"),
        (_other_hash, r"chunk \d+ of document '[^']+': its document_hash is not its document's"),
    ],
)
def test_kept_rows_that_are_not_the_documents_chunks_stop_the_run(previous, tmp_path, capsys, edit, problem):
    damaged = tmp_path / "previous"
    shutil.copytree(previous / "previous", damaged)
    _edit_chunks(damaged, edit)
    capsys.readouterr()
    status = main(["--input", str(SAMPLE), "--output", str(tmp_path / "out"), "--previous", str(damaged)])
    err = capsys.readouterr().err
    assert status == 1 and len(err.splitlines()) == 1, err
    assert re.match(f"rechunk: error: {DAMAGED_PREVIOUS} chunks/: {problem}; nothing was committed", err), err
    assert not (tmp_path / "out" / MARKER_NAME).exists()
