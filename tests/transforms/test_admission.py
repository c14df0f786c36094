"""Admission rules called directly (``transforms.admission``): each row's exact document or dead-letter row."""

from __future__ import annotations

import pytest

from transforms.admission import (
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    as_text,
    id_as_text,
    json_safe,
    metadata_object,
    row_to_document,
)
from transforms.columns import Unreadable
from transforms.documents import DeadLetter, Document

FORMATS = "['docling', 'html', 'markdown', 'rst', 'text']"


def _dead(document_id, reason, detail, payload, stage="read"):
    return DeadLetter(document_id, stage, reason, detail, payload, "tok")


@pytest.mark.parametrize(
    "row, expected",
    [
        (
            {"id": ["a"], "content": "x"},
            _dead(None, "invalid_document_id", "id is a list, not a string: ['a']", "x"),
        ),
        (
            {"id": b"\xff", "content": "x"},
            _dead(None, "invalid_document_id", "id is bytes that are not UTF-8 (at byte 0): b'\\xff'", "x"),
        ),
        (
            {"id": "a\x00b", "content": "x"},
            _dead("a\x00b", "invalid_document_id", "id is a string holding NUL (U+0000): a\x00b", "x"),
        ),
        (
            {"id": True, "content": "x"},  # a bool is not an integer id
            _dead(None, "invalid_document_id", "id is a bool, not a string: True", "x"),
        ),
        (
            {"id": None, "content": "x"},
            _dead(None, "missing_document_id", "the row's id is null, empty or whitespace only", "x"),
        ),
        (
            {"id": " \t", "content": "x"},
            _dead(" \t", "missing_document_id", "the row's id is null, empty or whitespace only", "x"),
        ),
        ({"id": "dup", "content": "x"}, _dead("dup", "duplicate_document_id", "3 rows have id 'dup'", "x")),
        (
            {"id": "d", "content": b"ab\xff"},
            _dead("d", "invalid_content", "content is bytes that are not UTF-8 (at byte 2)", "ab\\xff"),
        ),
        ({"id": "d", "content": 5}, _dead("d", "invalid_content", "content is a int, not a string", "5")),
        (
            {"id": "d", "content": Unreadable("OverflowError: too big")},
            _dead(
                "d",
                "invalid_content",
                "content is unreadable (OverflowError: too big)",
                "Unreadable('OverflowError: too big')",
            ),
        ),
        ({"id": "d", "content": None}, _dead("d", "null_content", "content is null", None)),
        (
            {"id": "d", "content": "abcdef"},
            _dead("d", "document_too_large", "content is 6 characters > max 5 (--max-document-chars)", "abcdef"),
        ),
        (
            {"id": "d", "content": "x", "content_format": "PDF "},
            _dead(
                "d",
                "unsupported_content_format",
                f"content_format 'PDF ' is not one of {FORMATS} (nor an alias of one)",
                "x",
                "route",
            ),
        ),
        (
            {"id": "d", "content": "x", "content_format": 3},
            _dead(
                "d",
                "unsupported_content_format",
                f"content_format '3' is not one of {FORMATS} (nor an alias of one)",
                "x",
                "route",
            ),
        ),
        (
            {"id": "d", "content": "x", "metadata": "[1]"},
            _dead("d", "invalid_metadata", "metadata is not a JSON object: '[1]'", "x"),
        ),
        (
            {"id": "d", "content": "x", "metadata": "{"},
            _dead("d", "invalid_metadata", "metadata is not JSON: '{'", "x"),
        ),
        (
            {"id": "d", "content": "x", "metadata": 7},
            _dead("d", "invalid_metadata", "the metadata column is a int, not a string", "x"),
        ),
        (
            {"id": "d", "content": "x", "stamp": Unreadable("OverflowError: year 10000")},
            _dead("d", "invalid_metadata", "column 'stamp': a value is unreadable (OverflowError: year 10000)", "x"),
        ),
        (
            {"id": "d", "content": "x", "blob": "b" * 70_000},
            # {"blob":"bbb...b"}: 9 + 70,000 + 2 bytes of JSON
            _dead(
                "d",
                "invalid_metadata",
                f"metadata and extra columns are 70011 bytes of JSON > max {MAX_METADATA_BYTES} "
                "(they are copied into every chunk)",
                "x",
            ),
        ),
        (
            {"id": "d", "content": " \n\t"},
            _dead("d", "empty_document", "content is empty or whitespace only (3 characters)", " \n\t"),
        ),
        (
            {"id": "d", "content": ""},
            _dead("d", "empty_document", "content is empty or whitespace only (0 characters)", ""),
        ),
    ],
)
def test_each_rule_gives_its_exact_dead_letter_row(row, expected):
    assert row_to_document(row, {"dup": 3}, "tok", max_document_chars=5) == expected


@pytest.mark.parametrize(
    "row, reason",
    [
        # the id before the content, the content before the format, the format before the
        # metadata, the metadata before emptiness
        ({"id": None, "content": b"\xff"}, "missing_document_id"),
        ({"id": "dup", "content": None}, "duplicate_document_id"),
        ({"id": "d", "content": None, "content_format": "pdf"}, "null_content"),
        ({"id": "d", "content": "toolong", "content_format": "pdf"}, "document_too_large"),
        ({"id": "d", "content": "x", "content_format": "pdf", "metadata": "["}, "unsupported_content_format"),
        ({"id": "d", "content": " ", "metadata": "["}, "invalid_metadata"),
    ],
)
def test_the_first_failing_rule_decides_the_reason(row, reason):
    assert row_to_document(row, {"dup": 2}, "tok", max_document_chars=5).reason == reason


def test_an_admitted_row_is_a_document_with_plain_json_metadata():
    row = {
        "id": 42,
        "content": b"Hi \xc3\xa9",
        "content_format": " MarkDown ",
        "metadata": '{"lang": "fr", "n": NaN}',
        "lang": "en",
        "score": float("inf"),
        "raw": b"\x00\xff",
    }
    assert row_to_document(row, {}, "tok") == Document(
        id="42",
        content="Hi é",
        content_format="markdown",
        metadata={"lang": "fr", "n": None, "raw": "base64:AP8=", "score": None},
    )


def test_a_blank_or_null_format_is_text_and_no_limit_admits_any_length():
    for fmt in (None, "", "  "):
        document = row_to_document({"id": "d", "content": "x" * 100, "content_format": fmt}, {}, "tok")
        assert (document.content_format, len(document.content)) == ("text", 100)


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("md", "markdown"),
        (" HTML ", "html"),
        ("htm", "html"),
        ("Text/Markdown", "markdown"),
        ("TXT", "text"),
        ("reStructuredText", "rst"),
        ("Docling", "docling"),
    ],
)
def test_a_format_is_matched_by_any_case_and_its_common_names(given, canonical):
    document = row_to_document({"id": "d", "content": "x", "content_format": given}, {}, "tok")
    assert document.content_format == canonical


@pytest.mark.parametrize("given", ["markdwn", "m d", "pdf", "html5"])
def test_a_name_that_is_no_format_nor_alias_is_unsupported(given):
    dead = row_to_document({"id": "d", "content": "x", "content_format": given}, {}, "tok")
    assert dead.reason == "unsupported_content_format"


def test_struct_and_map_metadata_are_objects():
    assert row_to_document({"id": "d", "content": "x", "metadata": {"a": 1}}, {}, "t").metadata == {"a": 1}
    pairs = [(2, "x"), (1, "a"), (1, "b")]
    assert row_to_document({"id": "d", "content": "x", "metadata": pairs}, {}, "t").metadata == {"1": "b", "2": "x"}
    assert metadata_object(["k", "v"]) is None
    assert metadata_object("{}") is None


def test_text_and_id_conversions():
    assert as_text("a") == ("a", None)
    assert as_text(None) == (None, None)
    assert as_text(bytearray(b"\xc3\xa9")) == ("é", None)
    assert as_text(b"a\xc3") == (None, "bytes that are not UTF-8 (at byte 1)")
    assert as_text(1.5) == (None, "a float, not a string")
    assert as_text(Unreadable("E: m")) == (None, "unreadable (E: m)")
    assert id_as_text(-7) == ("-7", None)
    assert id_as_text(False) == (None, "a bool, not a string")
    assert id_as_text("a\x00") == ("a\x00", "a string holding NUL (U+0000)")


def test_json_safe_depth_limit_is_exact():
    def nested(levels):
        value: list = []
        for _ in range(levels - 1):
            value = [value]
        return value

    # the outermost list is at depth 0: the innermost of n lists is at depth n - 1
    assert json_safe(nested(MAX_METADATA_DEPTH + 1)) == nested(MAX_METADATA_DEPTH + 1)
    with pytest.raises(ValueError, match=f"^nested deeper than {MAX_METADATA_DEPTH} levels$"):
        json_safe(nested(MAX_METADATA_DEPTH + 2))


def test_json_safe_values():
    import datetime
    import decimal

    assert json_safe({1: (b"ok", float("-inf"))}) == {"1": ["ok", None]}
    assert json_safe(datetime.date(2024, 5, 1)) == "2024-05-01"
    assert json_safe(decimal.Decimal("1.50")) == "1.50"
    with pytest.raises(ValueError):
        json_safe("caf\ud800")  # a lone surrogate cannot be written as UTF-8
    with pytest.raises(ValueError, match=r"^a value is unreadable \(E: m\)$"):
        json_safe([Unreadable("E: m")])
