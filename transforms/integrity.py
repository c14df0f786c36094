"""What a run takes from ``--previous`` is checked, not trusted: the rule for kept chunk rows.

Beam-free. A kept chunk is copied into the new output only when its ``chunk_id`` is the contract's
id of its own ``document_id``, ``chunk_index`` and ``text`` (recomputed here), and its
``document_hash`` is a sha256 hex digest; a row that fails either is damage (a flipped byte, an
edited file), and the run stops rather than copy it: :class:`DamagedPreviousOutput`.
"""

from __future__ import annotations

import re

import pyarrow as pa

from transforms.documents import chunk_id

__all__ = ["DAMAGED_PREVIOUS", "DamagedPreviousOutput", "kept_chunk_problem"]

#: The words that start a damaged previous output's message; the launcher finds them in the
#: runner's error, whatever it wraps them in, and shows that one line.
DAMAGED_PREVIOUS = "previous output damaged:"

_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


class DamagedPreviousOutput(RuntimeError):
    """A file of ``--previous`` cannot be read whole (a page checksum, the footer, a compressed
    page) or holds a chunk row that fails :func:`kept_chunk_problem`. The message is one line that
    starts with :data:`DAMAGED_PREVIOUS`."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(
            f"{DAMAGED_PREVIOUS} {path}: {' '.join(problem.split())[:300]}; "
            "nothing was committed: rerun without --previous to chunk every document again"
        )


def kept_chunk_problem(table: pa.Table) -> str | None:
    """The first problem of a table of kept chunk rows (``CHUNK_SCHEMA`` columns), or ``None``.

    Checks each row: ``chunk_id == sha256(document_id + "\\x00" + str(chunk_index) + "\\x00" +
    text)`` (:func:`transforms.documents.chunk_id`) and ``document_hash`` 64 lowercase hex digits.
    Costs one sha256 over each kept chunk's text (measured in ``benchmarks/incremental.py``).
    """
    columns = [
        table.column(name).to_pylist() for name in ("document_id", "chunk_index", "text", "chunk_id", "document_hash")
    ]
    for document_id, index, text, given, digest in zip(*columns):
        if None in (document_id, index, text, given, digest):
            return f"a chunk row of document {document_id!r} has a null field"
        if chunk_id(document_id, index, text) != given:
            return f"chunk {index} of document {document_id!r}: its chunk_id is not the id of its text"
        if not _HEX_DIGEST.fullmatch(digest):
            return f"chunk {index} of document {document_id!r}: its document_hash is not a sha256 digest"
    return None
