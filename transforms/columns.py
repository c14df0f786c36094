"""Arrow columns of input rows as Python values, one bad value never failing the batch.

Beam-free. The job's Parquet read (``transforms.beam.read``) turns each row group into Python
lists with :func:`table_columns` and hands them on a row at a time with :func:`release_rows`.
A value Python cannot hold stays readable for admission (``transforms.admission``): a string
that is not valid UTF-8 stays ``bytes``, any other value that cannot be converted becomes an
:class:`Unreadable`, and admission dead-letters its row with the reason of its column.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

__all__ = ["UNREADABLE_DETAIL_CHARS", "Unreadable", "column_values", "release_rows", "table_columns"]

#: An :class:`Unreadable`'s problem quotes at most this many characters of the conversion's error.
UNREADABLE_DETAIL_CHARS = 80


class Unreadable:
    """A Parquet value Python cannot hold (a timestamp past year 9999, invalid UTF-8 in a list).

    Admission turns it into the dead-letter reason of the column it is in.

    Args:
        problem: The conversion's error, as ``"TypeName: message"``.
    """

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def __repr__(self) -> str:
        return f"Unreadable({self.problem!r})"


def table_columns(table: pa.Table, rename: Mapping[str, str]) -> dict[str, list[Any]]:
    """Columns of one table as Python lists, renamed; a value that is not valid UTF-8 stays bytes.

    A string column whose values are not all valid UTF-8 is decoded value by value, so one bad
    value becomes a dead-letter row (``invalid_content`` ...) instead of failing the whole
    batch, as ``Table.to_pylist`` would. A contract-named column replaced by a mapped one is
    dropped. See :func:`column_values`.

    Args:
        table: One row group (or any table) of input rows.
        rename: Input column name -> output name; an output name that is also an input column's
            name drops that column (the mapped one wins).

    Returns:
        Output column name -> its values, one per row.
    """
    shadowed = set(rename.values())
    columns: dict[str, list[Any]] = {}
    for name, column in zip(table.column_names, table.columns):
        if name in shadowed and name not in rename:
            continue
        columns[rename.get(name, name)] = column_values(column)
    return columns


def release_rows(columns: dict[str, list[Any]], num_rows: int) -> Iterator[dict[str, Any]]:
    """Rows of ``columns`` as dicts; each row's values are dropped from ``columns`` as it is
    yielded, so a processed row (a document already chunked downstream) is not held.

    Args:
        columns: Column name -> values (as :func:`table_columns` gives them); emptied in place.
        num_rows: How many rows the columns hold.
    """
    names = list(columns)
    for i in range(num_rows):
        row = {}
        for name in names:
            values = columns[name]
            row[name] = values[i]
            values[i] = None
        yield row


def _is_text_type(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(arrow_type))
    )


def column_values(column: pa.ChunkedArray) -> list[Any]:
    """Python values of one column; a value that cannot be converted never fails the batch.

    Text columns (plain, large, view) convert whole; when a value is not valid UTF-8, they are
    read as binary and decoded per value (as dictionary-encoded ones always are): invalid UTF-8
    stays ``bytes``. Other columns convert whole, or value by value when the
    whole fails, with :class:`Unreadable` where a value cannot be converted.
    """
    if pa.types.is_dictionary(column.type) and _is_text_type(column.type.value_type):
        column = pa.chunked_array(
            [c.dictionary.cast(pa.large_binary()).take(c.indices) for c in column.chunks],
            type=pa.large_binary(),
        )
    elif _is_text_type(column.type):
        try:
            # Strings straight from the Arrow buffers: no bytes object of each value on the way
            # (for a 50 MB document that was 50 MB more at the read's peak).
            return column.to_pylist()
        except UnicodeDecodeError:  # a value is not UTF-8: decode value by value below
            column = column.cast(pa.large_binary())  # a cast to binary does not validate UTF-8
    else:
        try:
            return column.to_pylist()
        except Exception:  # OverflowError, UnicodeDecodeError, ... from one value
            return [_scalar_value(column, i) for i in range(len(column))]
    return _decoded(column.to_pylist())


def _decoded(raw_values: list[bytes | None]) -> list[Any]:
    """Each value decoded from UTF-8; a value that is not valid UTF-8 stays ``bytes``."""
    values: list[Any] = []
    for raw in raw_values:
        try:
            values.append(raw if raw is None else raw.decode("utf-8"))
        except UnicodeDecodeError:
            values.append(raw)
    return values


def _scalar_value(column: pa.ChunkedArray, index: int) -> Any:
    try:
        return column[index].as_py()
    except Exception as err:
        return Unreadable(f"{type(err).__name__}: {' '.join(str(err).split())[:UNREADABLE_DETAIL_CHARS]}")
