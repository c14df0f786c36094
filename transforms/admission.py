"""Admission: one input row into a :class:`Document`, or a :class:`DeadLetter` saying why it is not one.

Beam-free (``transforms.beam.AdmitDocuments`` calls :func:`row_to_document` on each row). The
checks run in this order; the first that fails decides the reason (stage ``read`` unless said):

=============================  ===============================================================
reason                         the row
=============================  ===============================================================
``invalid_document_id``        its id is not text nor an integer, bytes that are not UTF-8, or
                               text holding NUL (U+0000)
``missing_document_id``        its id is null, empty or whitespace only
``duplicate_document_id``      its id is on more than one row (every such row is rejected)
``invalid_content``            its content is not text (bytes that are not UTF-8, a number ...)
``null_content``               its content is null
``document_too_large``         its content is longer than ``max_document_chars`` code points
``unsupported_content_format`` (stage ``route``) its ``content_format`` is not text or not one
                               of ``CONTENT_FORMATS`` (null or blank means ``text``)
``invalid_metadata``           its metadata is not a JSON object (a string) nor a struct or map
                               value, is nested deeper than :data:`MAX_METADATA_DEPTH`, holds a
                               lone surrogate or an unreadable value, or is (with the extra
                               columns) more than :data:`MAX_METADATA_BYTES` of JSON
``empty_document``             its content is empty or whitespace only
=============================  ===============================================================

A document's metadata is its extra columns (every column but ``DOCUMENT_COLUMNS``, by name) as
plain JSON (:func:`json_safe`), then the ``metadata`` object's keys over them.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from typing import Any

from transforms.columns import ArrowText, Unreadable
from transforms.documents import (
    CONTENT_FORMATS,
    DOCUMENT_COLUMNS,
    DeadLetter,
    Document,
    canonical_content_format,
    dumps_metadata,
    escape_bytes,
)

__all__ = [
    "DEFAULT_CONTENT_FORMAT",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "as_text",
    "id_as_text",
    "json_safe",
    "metadata_object",
    "row_to_document",
]

#: A document's metadata (with extra columns) is copied into each of its chunks, so it is capped.
MAX_METADATA_BYTES = 64 * 1024
#: Deeper metadata is rejected (it would also break pickling between workers).
MAX_METADATA_DEPTH = 32
#: The format of a row whose ``content_format`` is null, empty or whitespace only.
DEFAULT_CONTENT_FORMAT = "text"

#: A detail quotes at most this many characters of a bad id or metadata string ...
_SHOWN_VALUE_CHARS = 80
#: ... this many of a bad ``content_format`` value ...
_SHOWN_FORMAT_CHARS = 40
#: ... and is cut to this many characters when it quotes an error about the metadata.
_METADATA_DETAIL_CHARS = 200


def as_text(value: Any) -> tuple[str | None, str | None]:
    """``(text, problem)``: a string, UTF-8 bytes decoded, or ``None``; else a problem to report.

    Returns:
        ``(value, None)`` for a string or ``None``, ``(decoded, None)`` for UTF-8 bytes, and
        ``(None, problem)`` otherwise (``problem`` completes "content is ...").
    """
    if value is None or isinstance(value, str):
        return value, None
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8"), None
        except UnicodeDecodeError as err:
            return None, f"bytes that are not UTF-8 (at byte {err.start})"
    if isinstance(value, Unreadable):
        return None, f"unreadable ({value.problem})"
    return None, f"a {type(value).__name__}, not a string"


def id_as_text(raw: Any) -> tuple[str | None, str | None]:
    """A row's id as text (integers written in decimal), or the problem with it.

    An id holding NUL is refused: the chunk id joins its parts with NUL, so such ids could make
    two different chunks share one chunk id.

    Returns:
        ``(text, problem)`` as :func:`as_text`; for text holding NUL, the text and a problem.
    """
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw), None
    text, problem = as_text(raw)
    if text is not None and "\x00" in text:
        return text, "a string holding NUL (U+0000)"
    return text, problem


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data: non-finite floats become ``None``; bytes become their UTF-8
    text, or ``"base64:..."`` when they are not UTF-8; timestamps, decimals and the like their text.

    Raises:
        ValueError: Nested deeper than :data:`MAX_METADATA_DEPTH`, a string with a lone surrogate
            (not encodable as UTF-8), or an unreadable value.
    """
    if depth > MAX_METADATA_DEPTH:
        raise ValueError(f"nested deeper than {MAX_METADATA_DEPTH} levels")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        value.encode("utf-8")  # UnicodeEncodeError (a ValueError) on a lone surrogate
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bytes, bytearray)):
        text, _ = as_text(value)
        return text if text is not None else "base64:" + base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Unreadable):
        raise ValueError(f"a value is unreadable ({value.problem})")
    if isinstance(value, Mapping):
        return {json_safe(str(k), depth + 1): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, depth + 1) for v in value]
    return str(value)  # timestamps, decimals, ...: their text


def metadata_object(value: Any) -> Mapping[str, Any] | None:
    """The object a ``metadata`` value of a struct column (a dict) or a map column (a list of
    ``(key, value)`` tuples: keys become their text, the last of equal keys wins) holds; ``None``
    for any other value."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, list) and all(isinstance(item, tuple) and len(item) == 2 for item in value):
        return {str(key): item for key, item in value}
    return None


class _Rejected(Exception):
    """One admission check failed: the row's dead-letter reason, detail and stage."""

    def __init__(self, reason: str, detail: str, stage: str = "read") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail
        self.stage = stage


def row_to_document(
    row: Mapping[str, Any], duplicates: Mapping[str, int], tokenizer: str, max_document_chars: int | None = None
) -> Document | DeadLetter:
    """The row as a :class:`Document`, or a :class:`DeadLetter` saying why it is not one.

    Args:
        row: Column name -> value, as the read gives it (``bytes`` for a string that is not
            UTF-8, :class:`~transforms.columns.Unreadable` for a value Python cannot hold, a
            :class:`~transforms.columns.ArrowText` for a ``content`` the read left in Arrow
            because it is longer than ``max_document_chars``: rejected, and its payload stays
            that Arrow value).
        duplicates: Ids on more than one row of the input -> their number of rows.
        tokenizer: The job's tokenizer identity (written in a dead-letter row).
        max_document_chars: Longer content (in code points) is rejected as
            ``document_too_large``; ``None`` for no limit.

    Returns:
        The document, or a dead-letter row (stage ``read``, or ``route`` for a format; reasons
        in the order of this module's table) whose payload is the row's content (bytes that
        are not UTF-8 escaped as :func:`~transforms.documents.escape_bytes` does).
    """
    doc_id, id_problem = id_as_text(row.get("id"))
    raw_content = row.get("content")
    content, content_problem = (raw_content, None) if isinstance(raw_content, ArrowText) else as_text(raw_content)
    try:
        _check_id(row.get("id"), doc_id, id_problem, duplicates)
        text = _checked_content(content, content_problem, max_document_chars)
        content_format = _content_format(row.get("content_format"))
        metadata = _metadata(row)
        if not text or text.isspace():  # (not text.strip(), without a copy of the document)
            raise _Rejected("empty_document", f"content is empty or whitespace only ({len(text)} characters)")
    except _Rejected as rejected:
        payload = _payload(raw_content, content)
        return DeadLetter(doc_id, rejected.stage, rejected.reason, rejected.detail, payload, tokenizer)
    assert doc_id is not None  # (_check_id refuses a null id)
    return Document(id=doc_id, content=text, content_format=content_format, metadata=metadata)


def _payload(raw_content: Any, content: str | ArrowText | None) -> str | ArrowText | None:
    """A rejected row's payload: its content as text (an :class:`ArrowText` as it is), so that
    nothing of the row is lost."""
    if content is not None:
        return content
    if isinstance(raw_content, (bytes, bytearray)):
        return escape_bytes(bytes(raw_content))  # readable, and unescape_payload gives the bytes back
    return None if raw_content is None else str(raw_content)


def _check_id(raw_id: Any, doc_id: str | None, problem: str | None, duplicates: Mapping[str, int]) -> None:
    if problem:
        raise _Rejected("invalid_document_id", f"id is {problem}: {str(raw_id)[:_SHOWN_VALUE_CHARS]}")
    if not doc_id or not doc_id.strip():
        raise _Rejected("missing_document_id", "the row's id is null, empty or whitespace only")
    if doc_id in duplicates:
        raise _Rejected("duplicate_document_id", f"{duplicates[doc_id]} rows have id {doc_id!r}")


def _checked_content(content: str | ArrowText | None, problem: str | None, max_document_chars: int | None) -> str:
    if problem:
        raise _Rejected("invalid_content", f"content is {problem}")
    if content is None:
        raise _Rejected("null_content", "content is null")
    if max_document_chars is not None and len(content) > max_document_chars:
        raise _Rejected(
            "document_too_large",
            f"content is {len(content)} characters > max {max_document_chars} (--max-document-chars)",
        )
    if isinstance(content, ArrowText):  # (the read's limit is the job's: within it only when called apart)
        return str(content)
    return content


def _content_format(raw: Any) -> str:
    """The row's format, canonical (an alias or any case of a name is its format; :data:`DEFAULT_CONTENT_FORMAT`
    when blank)."""
    text, problem = as_text(raw)
    content_format = None if problem else canonical_content_format((text or "").strip() or DEFAULT_CONTENT_FORMAT)
    if content_format is None:
        raise _Rejected(
            "unsupported_content_format",
            f"content_format {str(raw)[:_SHOWN_FORMAT_CHARS]!r} is not one of {sorted(CONTENT_FORMATS)} "
            "(nor an alias of one)",
            "route",
        )
    return content_format


def _metadata(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row's extra columns, then its ``metadata`` object over them, as plain JSON data."""
    try:
        metadata = _extra_columns(row)
        metadata.update(_metadata_column(row.get("metadata")))
        metadata_bytes = len(dumps_metadata(metadata).encode("utf-8"))
    except (ValueError, RecursionError) as err:
        raise _Rejected("invalid_metadata", " ".join(str(err).split())[:_METADATA_DETAIL_CHARS]) from None
    if metadata_bytes > MAX_METADATA_BYTES:
        raise _Rejected(
            "invalid_metadata",
            f"metadata and extra columns are {metadata_bytes} bytes of JSON > max {MAX_METADATA_BYTES} "
            "(they are copied into every chunk)",
        )
    return metadata


def _extra_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    """Every column but the contract's, by name, as plain JSON data.

    Raises:
        ValueError: A column's value is not JSON-safe (see :func:`json_safe`); names the column.
    """
    columns = {}
    for key, value in sorted(row.items()):
        if key not in DOCUMENT_COLUMNS:
            try:
                columns[key] = json_safe(value)
            except (ValueError, RecursionError) as err:
                raise ValueError(f"column {key!r}: {err}") from None
    return columns


def _metadata_column(value: Any) -> Mapping[str, Any]:
    """The ``metadata`` column's object (a struct or map value, or a JSON object's text) as plain JSON.

    Raises:
        ValueError: It is neither, not JSON, not an object, or not JSON-safe.
    """
    structured = metadata_object(value)
    if structured is not None:
        return json_safe(structured)
    text, problem = as_text(value)
    if problem:
        raise ValueError(f"the metadata column is {problem}")
    if not text:  # null or empty: no object
        return {}
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"metadata is not JSON: {text[:_SHOWN_VALUE_CHARS]!r}") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"metadata is not a JSON object: {text[:_SHOWN_VALUE_CHARS]!r}")
    return json_safe(parsed)
