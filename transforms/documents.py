"""Documents, chunks and dead-letter rows: the records the job moves, and their Parquet schemas.

Beam-free. Every record is an immutable dataclass; the Beam layer turns Parquet rows into
:class:`Document` and :class:`Chunk` / :class:`DeadLetter` back into rows with the Arrow schemas
below, which ``docs/contract.md`` documents column for column.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from transforms.columns import ArrowText

__all__ = [
    "CHUNK_SCHEMA",
    "CONTENT_FORMATS",
    "CONTENT_FORMAT_ALIASES",
    "DEAD_LETTER_SCHEMA",
    "DOCUMENT_COLUMNS",
    "FOLDER_FILES",
    "REASONS",
    "STAGES",
    "Chunk",
    "ChunkKeys",
    "DeadLetter",
    "Document",
    "canonical_content_format",
    "chunk_id",
    "chunk_key",
    "document_hash",
    "escape_bytes",
    "folder_files",
    "glob_sets",
    "is_chunk_key",
    "unescape_payload",
]

#: The Beam file pattern, relative to a folder, of the data files a folder holds: every file but
#: those whose name starts with ``.`` or ``_`` (hidden files and markers such as macOS's
#: ``.DS_Store``, Hadoop's ``.*.crc`` checksums and Spark's ``_SUCCESS``), which pyarrow's
#: datasets and Spark skip too. ``--input DIR/`` reads ``DIR/`` + this; ``--previous`` reads its
#: ``chunks/`` and ``documents/`` with it.
FOLDER_FILES = "[!._]*"


def glob_sets(pattern: str) -> list[tuple[int, int]]:
    """The ``[...]`` sets of characters in a Beam file pattern, as ``(start, end)`` slices, scanned
    as Beam's matching scans them (``FileSystem.translate_pattern``: a ``!`` and then a ``]`` right
    after the ``[`` belong to the set). A ``[`` that no ``]`` closes is a literal ``[``."""
    sets, i, n = [], 0, len(pattern)
    while (i := pattern.find("[", i)) >= 0:
        j = i + 1
        if j < n and pattern[j] == "!":
            j += 1
        if j < n and pattern[j] == "]":
            j += 1
        j = pattern.find("]", j)
        if j < 0:
            break  # this "[" and every later one are unclosed: literal
        sets.append((i, j + 1))
        i = j + 1
    return sets


def folder_files(folder: str) -> str:
    """The pattern of the data files in ``folder`` (``--input DIR/``): ``folder`` +
    :data:`FOLDER_FILES`, with each ``[`` that Beam reads literally in ``folder`` (no ``]`` closes
    it there: ``data[2024/``) written ``[[]``, so that the ``]`` of ``FOLDER_FILES`` cannot close
    it. Other glob characters in ``folder``, and its sets (:func:`glob_sets`), keep their meaning."""
    out, last = [], 0
    for start, end in glob_sets(folder):
        out += [folder[last:start], folder[start:end]]
        last = end
    # Only the tail can hold a "[": one between two sets would have been a set itself.
    return "".join(out) + folder[last:].replace("[", "[[]") + FOLDER_FILES


#: The input's own columns (every other column is carried into metadata).
DOCUMENT_COLUMNS = ("id", "content", "content_format", "metadata")

#: Content formats the job understands (``content_format`` column values).
CONTENT_FORMATS = frozenset({"text", "markdown", "html", "rst", "docling"})

#: Other names of the content formats: an input row's ``content_format`` or a route's
#: ``when.content_format`` is stripped, lower-cased and then looked up here (a format's own name
#: is its own alias). Chunks, the manifest and the dead letter carry the canonical name.
CONTENT_FORMAT_ALIASES: Mapping[str, str] = {
    **{name: name for name in sorted(CONTENT_FORMATS)},
    "txt": "text",
    "plain": "text",
    "plaintext": "text",
    "text/plain": "text",
    "md": "markdown",
    "mdown": "markdown",
    "mkd": "markdown",
    "mkdn": "markdown",
    "gfm": "markdown",
    "text/markdown": "markdown",
    "htm": "html",
    "xhtml": "html",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "rest": "rst",
    "restructuredtext": "rst",
    "text/x-rst": "rst",
    "docling_json": "docling",
    "doclingdocument": "docling",
}


def canonical_content_format(value: str) -> str | None:
    """The content format ``value`` names (stripped, any case, a name or an alias in
    :data:`CONTENT_FORMAT_ALIASES`), or ``None`` when it names none."""
    return CONTENT_FORMAT_ALIASES.get(value.strip().lower())


#: Stages at which a record can be rejected (``stage`` column values).
STAGES = ("read", "route", "chunk", "validate")

#: Stable reason codes for the dead letter, with one line on what each means.
REASONS: Mapping[str, str] = {
    "missing_document_id": "the row's id is null, empty or whitespace only",
    "invalid_document_id": "the row's id is neither a string, an integer nor UTF-8 bytes, or holds NUL",
    "null_content": "the row's content is null",
    "invalid_content": "the row's content is neither a string nor UTF-8 bytes",
    "empty_document": "no text after parsing: empty, whitespace only, or a DoclingDocument with no items",
    "invalid_metadata": "the metadata is not a JSON object, nests too deep, or is too large",
    "duplicate_document_id": "more than one row has this id; all of them are rejected",
    "unsupported_content_format": "the content format is unknown, or the routed chunker does not accept it",
    "no_route": "no route matched and the configuration has no default chunker",
    "invalid_docling_json": "content_format is docling but the content is not a valid DoclingDocument",
    "unreadable_html": "the HTML parser stopped before the end of the page (e.g. nested deeper than 2047 elements)",
    "chunker_error": "the chunker raised an unexpected error on this document",
    "model_error": "a model-backed chunker's model failed (after its retries, without fallback) or answered something invalid",
    "token_budget_exceeded": "the chunk's embedding_text has more tokens than max_tokens",
    "empty_chunk": "the chunk's text is empty or whitespace only",
    "offset_mismatch": "content[start_offset:end_offset] is not the chunk's text",
    "tokenizer_mismatch": "the chunk was counted with another tokenizer than the job's",
    "document_too_large": "the document is longer than the configured maximum",
    "embedding_text_mismatch": "a structure chunk's embedding_text is not its heading prefix plus its text",
    "overlap_exceeded": "a structure chunk overlaps the previous one by more than max_overlap_tokens",
    "incomplete_coverage": "the chunks of a structure chunker leave non-whitespace text of the source out",
    "exceeds_store_limit": "the configured vector store cannot hold the chunk (a Milvus column over its size limit, a NUL character in PostgreSQL)",
}


def document_hash(content: str) -> str:
    """Return the sha256 hex digest of ``content`` encoded as UTF-8 (64 lowercase hex digits).

    A long content is encoded a megabyte of code points at a time (the same bytes, never a
    second copy of the whole document).
    """
    step = 1 << 20
    if len(content) <= step:
        return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    digest = hashlib.sha256()
    for start in range(0, len(content), step):
        digest.update(content[start : start + step].encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def chunk_id(document_id: str, chunk_index: int, text: str) -> str:
    """Return the contract's chunk id.

    ``sha256(document_id + "\\x00" + str(chunk_index) + "\\x00" + text)`` over UTF-8, as 64
    lowercase hex digits. It depends on nothing but its arguments, so it is the same on every
    run, runner and worker.
    """
    key = f"{document_id}\x00{chunk_index}\x00{text}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def chunk_key(document_id: str, embedding_text: str, occurrence: int = 0) -> str:
    """Return the contract's edit-stable chunk key.

    ``sha256(document_id + "\\x00" + embedding_text + "\\x00" + str(occurrence))`` over UTF-8, as
    64 lowercase hex digits, where ``occurrence`` is the number of earlier chunks of the same
    document with the same ``embedding_text`` (0 for all but repeats). Unlike :func:`chunk_id` it
    does not depend on the chunk's position: a chunk whose embedded text is unchanged keeps its
    key when an edit elsewhere in the document moves it, so a vector store keyed on it embeds
    only chunks whose embedded text changed.
    """
    key = f"{document_id}\x00{embedding_text}\x00{occurrence}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def is_chunk_key(key: str, document_id: str, embedding_text: str, chunk_index: int) -> bool:
    """Whether ``key`` is :func:`chunk_key` of ``document_id`` and ``embedding_text`` for some
    occurrence up to ``chunk_index`` (a chunk has at most ``chunk_index`` chunks before it).

    Costs one sha256 over ``embedding_text`` and, for a repeated text, a few bytes more per
    occurrence tried (the digest of the common prefix is copied, not recomputed).
    """
    prefix = hashlib.sha256(f"{document_id}\x00{embedding_text}\x00".encode("utf-8", "surrogatepass"))
    for occurrence in range(max(chunk_index, 0) + 1):
        state = prefix.copy()
        state.update(str(occurrence).encode("ascii"))
        if state.hexdigest() == key:
            return True
    return False


class ChunkKeys:
    """The :func:`chunk_key` of each chunk of one document, given in chunk order.

    Holds one small integer per distinct embedded text seen (the first 64 bits of its digest),
    to number repeats; two texts that share those bits only number each other's occurrences,
    which keeps every key unique and the same on every run.

    Args:
        document_id: The document's id.
    """

    def __init__(self, document_id: str) -> None:
        self._prefix = f"{document_id}\x00"
        self._seen: dict[int, int] = {}

    def next(self, embedding_text: str) -> str:
        """The key of the document's next chunk, whose embedded text is ``embedding_text``."""
        state = hashlib.sha256(f"{self._prefix}{embedding_text}\x00".encode("utf-8", "surrogatepass"))
        tag = int.from_bytes(state.digest()[:8], "big")
        occurrence = self._seen.get(tag, 0)
        self._seen[tag] = occurrence + 1
        state.update(str(occurrence).encode("ascii"))
        return state.hexdigest()


@dataclass(frozen=True)
class Document:
    """One parsed document, as read from a row of the input Parquet.

    Attributes:
        id: The document's stable id, unique in the corpus.
        content: The parsed document: text, Markdown, HTML, reST, or DoclingDocument JSON.
        content_format: One of :data:`CONTENT_FORMATS` (``text`` when the input had none).
        metadata: The document's metadata (a JSON object), carried into every chunk.
        previous_run: With ``--previous``, ``new`` for a document the previous manifest does not
            list (counted as ``documents_new`` once it is chunked); else empty.
        previous: With ``--previous``, the previous manifest's row for this id as
            ``(unchanged_key, chunk_count)`` packed in 20 bytes (``transforms.incremental``'s
            ``pack_entry``), joined to the document by its id before it is read; ``None`` when
            the manifest lists none.
    """

    id: str
    content: str
    content_format: str = "text"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    previous_run: str = ""
    previous: bytes | None = None

    @property
    def document_hash(self) -> str:
        """sha256 hex of :attr:`content`."""
        return document_hash(self.content)


@dataclass(frozen=True)
class Chunk:
    """One chunk of a document, in the shape of a row of ``chunks/*.parquet``.

    ``token_count`` is the number of tokens of ``embedding_text`` under ``tokenizer``; the
    validation step recounts it and overwrites whatever the chunker put there. ``start_offset``
    and ``end_offset`` are code-point offsets into the source ``content`` such that
    ``content[start_offset:end_offset] == text``, or both ``None`` when ``text`` is not a verbatim
    slice.
    """

    chunk_id: str
    document_id: str
    chunk_index: int
    text: str
    embedding_text: str
    token_count: int
    tokenizer: str
    start_offset: int | None
    end_offset: int | None
    headings: tuple[str, ...]
    page_no: int | None
    content_format: str
    chunker: str
    chunker_config_hash: str
    document_hash: str
    metadata: Mapping[str, Any]
    chunk_key: str

    def with_token_count(self, token_count: int) -> Chunk:
        """Return a copy with ``token_count`` replaced.

        The copy is made field for field without ``dataclasses.replace`` (which calls
        ``__init__`` again, a frozen dataclass's slowest part): validation does this once per chunk.
        """
        new = object.__new__(type(self))
        fields = new.__dict__
        fields.update(self.__dict__)
        fields["token_count"] = token_count
        return new

    def to_row(self) -> dict[str, Any]:
        """Return the Parquet row (``metadata`` as a JSON string with sorted keys)."""
        return {
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "chunk_index": self.chunk_index,
            "text": self.text,
            "embedding_text": self.embedding_text,
            "token_count": self.token_count,
            "tokenizer": self.tokenizer,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "headings": list(self.headings),
            "page_no": self.page_no,
            "content_format": self.content_format,
            "chunker": self.chunker,
            "chunker_config_hash": self.chunker_config_hash,
            "document_hash": self.document_hash,
            "metadata": dumps_metadata(self.metadata),
            "chunk_key": self.chunk_key,
        }


@dataclass(frozen=True)
class DeadLetter:
    """One rejected document or chunk, in the shape of a row of ``dead_letter/*.parquet``.

    ``payload`` is the rejected chunk's text or the document's whole content: nothing is lost (a
    content too large to be made a Python string is a :class:`~transforms.columns.ArrowText`,
    written from its Arrow buffer).
    ``reason`` is a key of :data:`REASONS`; ``detail`` is one human sentence with the figures.
    """

    document_id: str | None
    stage: str
    reason: str
    detail: str
    payload: str | ArrowText | None
    tokenizer: str
    chunk_id: str | None = None
    chunker: str | None = None

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"reason must be one of {sorted(REASONS)}, got {self.reason!r}")
        if self.stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, got {self.stage!r}")

    def to_row(self) -> dict[str, Any]:
        """Return the Parquet row."""
        return {
            "document_id": self.document_id,
            "chunk_id": self.chunk_id,
            "stage": self.stage,
            "reason": self.reason,
            "detail": self.detail,
            "payload": self.payload,
            "chunker": self.chunker,
            "tokenizer": self.tokenizer,
        }


_ESCAPE = re.compile(rb"\\(\\|x[0-9a-f]{2})")


def escape_bytes(raw: bytes) -> str:
    """Bytes that are not UTF-8 as a readable string that :func:`unescape_payload` turns back into them.

    The valid UTF-8 runs stay as they are; each byte that is not part of one becomes ``\\xNN``
    (Python's ``backslashreplace``), and each backslash already in ``raw`` is doubled first, so
    that an escape in the output is never confused with the text ``\\xff``. This is the
    dead-letter ``payload`` of a document whose ``content`` is bytes that are not UTF-8
    (reason ``invalid_content``).
    """
    return raw.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


def unescape_payload(payload: str) -> bytes:
    """The exact bytes behind an :func:`escape_bytes` string: ``\\\\`` is one backslash, ``\\xNN`` byte NN."""
    return _ESCAPE.sub(
        lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1)[1:], 16)]),
        payload.encode("utf-8", "surrogatepass"),
    )


_METADATA_ENCODER = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False
)


def dumps_metadata(metadata: Mapping[str, Any]) -> str:
    """Serialize metadata as compact JSON with sorted keys, so equal metadata gives equal bytes."""
    if type(metadata) is dict and not metadata:
        return "{}"
    return _METADATA_ENCODER.encode(metadata)


# Arrow schemas of the outputs, as the contract types them (``string``, not ``large_string``).
# The writers keep record batches small enough that no batch nears 2 GiB of string data.
CHUNK_SCHEMA = pa.schema(
    [
        ("chunk_id", pa.string()),
        ("document_id", pa.string()),
        ("chunk_index", pa.int32()),
        ("text", pa.string()),
        ("embedding_text", pa.string()),
        ("token_count", pa.int32()),
        ("tokenizer", pa.string()),
        ("start_offset", pa.int64()),
        ("end_offset", pa.int64()),
        ("headings", pa.list_(pa.string())),
        ("page_no", pa.int32()),
        ("content_format", pa.string()),
        ("chunker", pa.string()),
        ("chunker_config_hash", pa.string()),
        ("document_hash", pa.string()),
        ("metadata", pa.string()),
        ("chunk_key", pa.string()),
    ]
)

DEAD_LETTER_SCHEMA = pa.schema(
    [
        ("document_id", pa.string()),
        ("chunk_id", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("payload", pa.string()),
        ("chunker", pa.string()),
        ("tokenizer", pa.string()),
    ]
)
