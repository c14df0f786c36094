"""What a run reads is checked, not trusted: its input files and what it keeps from ``--previous``.

Beam-free. Three faults stop a run before anything is committed, each as an exception whose
message is one line starting with a fixed marker, which the launcher finds in the runner's error
(:func:`stopped_run_line`) and shows as it is:

- :class:`DamagedPreviousOutput`: a kept chunk is copied into the new output only when its
  ``chunk_id`` is the contract's id of its own ``document_id``, ``chunk_index`` and ``text``
  (recomputed here), its ``document_hash`` is a sha256 hex digest, and its document's kept rows
  are the manifest's ``chunk_count`` chunks ``0 .. n-1``; anything else is damage (a flipped byte,
  an edited file), and the run stops rather than copy it.
- :class:`InputChanged`: an input file is read twice (once for the duplicate-id count, once for
  the documents), each read from the same listing, which holds each file's
  :func:`parquet_fingerprint`; a file whose fingerprint differs when it is opened again, or that
  is gone, stops the run, so that duplicate detection and chunking see the same documents.
- :class:`InputUnreadable`: an input file that is not readable Parquet, or whose pages fail their
  checksums, stops the run (its rows cannot be told apart, so none can be dead-lettered alone).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from typing import BinaryIO

import pyarrow as pa

from transforms.documents import chunk_id, is_chunk_key

__all__ = [
    "DAMAGED_PREVIOUS",
    "INPUT_CHANGED",
    "INPUT_UNREADABLE",
    "DamagedPreviousOutput",
    "InputChanged",
    "InputUnreadable",
    "RunStopped",
    "add_index_set_digests",
    "digest_key",
    "index_set_digest",
    "kept_chunk_problem",
    "kept_count_problem",
    "parquet_fingerprint",
    "stopped_run_line",
]

#: The words that start a damaged previous output's message.
DAMAGED_PREVIOUS = "previous output damaged:"
#: The words that start the message of an input file that changed while the job ran.
INPUT_CHANGED = "input changed while the job ran:"
#: The words that start the message of an input file that cannot be read.
INPUT_UNREADABLE = "input file unreadable:"

_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


class RunStopped(RuntimeError):
    """A fault that stops the run, nothing committed. The message is one line: ``marker``, the
    file, the problem (whitespace collapsed, at most 300 characters) and ``advice``."""

    marker = ""
    advice = ""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{self.marker} {path}: {' '.join(problem.split())[:300]}; {self.advice}")


class DamagedPreviousOutput(RunStopped):
    """A file of ``--previous`` cannot be read whole (a page checksum, the footer, a compressed
    page) or holds chunk rows that fail :func:`kept_chunk_problem` or :func:`kept_count_problem`."""

    marker = DAMAGED_PREVIOUS
    advice = "nothing was committed: rerun without --previous to chunk every document again"


class InputChanged(RunStopped):
    """An input file's :func:`parquet_fingerprint` differs from the listing's, or the file is gone."""

    marker = INPUT_CHANGED
    advice = "nothing was committed: rerun once no input file is written while the job reads it"


class InputUnreadable(RunStopped):
    """An input file is not readable Parquet (its footer, a page checksum, a compressed page)."""

    marker = INPUT_UNREADABLE
    advice = "nothing was committed: repair or remove the file and rerun"


def stopped_run_line(text: str) -> str | None:
    """The one line of a :class:`RunStopped` found in ``text`` (a runner's error, which may wrap
    it in tracebacks and add words after it on the same line), or ``None`` when it holds none.
    The earliest marker wins; the line ends with its class's advice."""
    found = [(text.find(kind.marker), kind) for kind in (DamagedPreviousOutput, InputChanged, InputUnreadable)]
    found = [(start, kind) for start, kind in found if start >= 0]
    if not found:
        return None
    start, kind = min(found, key=lambda item: item[0])
    line = text[start:].splitlines()[0]
    end = line.find(kind.advice)
    return line if end < 0 else line[: end + len(kind.advice)]


#: The bytes that end a Parquet file (after the footer's length); an encrypted footer ends ``PARE``.
_PARQUET_MAGIC = b"PAR1"


def parquet_fingerprint(f: BinaryIO) -> str:
    """``"SIZE:DIGEST"`` of a Parquet file open for reading (seekable): its size in bytes and the
    sha256 of its footer (the Thrift ``FileMetaData``, its 4-byte length and ``PAR1``), read from
    the file's end. The footer holds every row group's and column chunk's offset, sizes, row count
    and statistics, so a file rewritten with other rows has another fingerprint; a rewrite that
    keeps the size and every byte of the footer (same layout, same page sizes, same statistics) is
    not told apart. Reads the footer once (its length: up to a few MB for thousands of row groups).

    Raises:
        ValueError: The file does not end as a Parquet file (too short, no ``PAR1``, a footer
            length past its start).
        OSError: The file cannot be read.
    """
    size = f.seek(0, os.SEEK_END)
    if size < 12:
        raise ValueError(f"not a Parquet file: {size} bytes")
    f.seek(size - 8)
    tail = f.read(8)
    if len(tail) != 8 or tail[4:] != _PARQUET_MAGIC:
        raise ValueError("not a Parquet file: it does not end with PAR1")
    length = int.from_bytes(tail[:4], "little")
    if length > size - 12:
        raise ValueError(f"not a Parquet file: a footer of {length} bytes in a file of {size}")
    f.seek(size - 8 - length)
    footer = f.read(length)
    if len(footer) != length:
        raise ValueError(f"not a Parquet file: its footer ends after {len(footer)} of {length} bytes")
    return f"{size}:{hashlib.sha256(footer + tail).hexdigest()}"


def digest_key(document_hash: str) -> int:
    """The first 64 bits of a sha256 hex digest, as an integer: what a worker holds per kept
    document to match its chunk rows' ``document_hash`` against the document's (about 36 bytes
    of Python integer against 113 for the 64-character string)."""
    return int(document_hash[:16], 16)


def kept_chunk_problem(table: pa.Table, document_hashes: Mapping[str, int] | None = None) -> str | None:
    """The first problem of a table of kept chunk rows (``CHUNK_SCHEMA`` columns), or ``None``.

    Checks each row: ``chunk_id == sha256(document_id + "\\x00" + str(chunk_index) + "\\x00" +
    text)`` (:func:`transforms.documents.chunk_id`), ``chunk_key`` the key of its
    ``embedding_text`` (:func:`transforms.documents.is_chunk_key`), ``document_hash`` 64 lowercase hex digits,
    and, when ``document_hashes`` (document id -> :func:`digest_key` of the document's hash, as
    this run computed it from the content) is given, the row's ``document_hash`` is its
    document's. Costs one sha256 over each kept chunk's text and one over its embedded text
    (measured in ``benchmarks/incremental.py``).
    """
    if "chunk_key" not in table.column_names:
        return "chunks/ has no chunk_key column (written by an earlier rechunk version)"
    names = ("document_id", "chunk_index", "text", "chunk_id", "document_hash", "embedding_text", "chunk_key")
    columns = [table.column(name).to_pylist() for name in names]
    for document_id, index, text, given, digest, embedding_text, key in zip(*columns):
        if None in (document_id, index, text, given, digest, embedding_text, key):
            return f"a chunk row of document {document_id!r} has a null field"
        if chunk_id(document_id, index, text) != given:
            return f"chunk {index} of document {document_id!r}: its chunk_id is not the id of its text"
        if not is_chunk_key(key, document_id, embedding_text, index):
            return f"chunk {index} of document {document_id!r}: its chunk_key is not the key of its embedding_text"
        if not _HEX_DIGEST.fullmatch(digest):
            return f"chunk {index} of document {document_id!r}: its document_hash is not a sha256 digest"
        if document_hashes is not None and document_hashes.get(document_id) != digest_key(digest):
            return f"chunk {index} of document {document_id!r}: its document_hash is not its document's"
    return None


_MASK64 = (1 << 64) - 1


def _mix64(value: int) -> int:
    """SplitMix64's output function (Steele, Lea and Flood, "Fast splittable pseudorandom number
    generators", OOPSLA 2014): a 64-bit integer to a well-spread one."""
    value = (value + 0x9E3779B97F4A7C15) & _MASK64
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK64
    return value ^ (value >> 31)


def index_set_digest(indexes: Iterable[int]) -> int:
    """A digest of a multiset of chunk indexes that adds up across parts: the sum of each index's
    :func:`_mix64`, modulo 2**64. Two parts' digests add (modulo 2**64) to the whole's, so the
    rows of one document counted in several files and row groups combine in any order; a row
    missing, repeated or with another index changes the sum (but for a 2**-64 chance)."""
    total = 0
    for index in indexes:
        total += _mix64(index)
    return total & _MASK64


def add_index_set_digests(first: int, second: int) -> int:
    """The digest of two parts together (:func:`index_set_digest`)."""
    return (first + second) & _MASK64


def kept_count_problem(document_id: str, chunk_count: int, rows: int, digest: int) -> str | None:
    """The problem of a kept document's chunk rows taken together, or ``None``: they must be
    ``chunk_count`` rows (its manifest row's count) with the indexes ``0 .. chunk_count - 1``, each
    once (``digest``: :func:`index_set_digest` of the rows' indexes)."""
    if rows != chunk_count:
        return f"document {document_id!r}: {rows} chunk rows in chunks/, its manifest row says {chunk_count}"
    if digest != index_set_digest(range(chunk_count)):
        return f"document {document_id!r}: its chunk rows are not chunks 0 to {chunk_count - 1}, each once"
    return None
