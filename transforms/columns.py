"""Arrow columns of input rows as Python values, one bad value never failing the batch.

Beam-free. The job's Parquet read (``transforms.beam.read``) turns each row group into Python
lists with :func:`table_columns` and hands them on a row at a time with :func:`release_rows`.
A value Python cannot hold stays readable for admission (``transforms.admission``): a string
that is not valid UTF-8 stays ``bytes``, any other value that cannot be converted becomes an
:class:`Unreadable`, and admission dead-letters its row with the reason of its column. A text
value longer than a limit the caller gives (``--max-document-chars`` for ``content``) is never
made a Python string: it stays in its Arrow buffer as an :class:`ArrowText`, which admission
rejects and the dead-letter writer writes as it is.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["UNREADABLE_DETAIL_CHARS", "ArrowText", "Unreadable", "column_values", "release_rows", "table_columns"]

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


class ArrowText:
    """A valid UTF-8 text value left in its Arrow buffer instead of made a Python string.

    The read leaves a ``content`` value longer than ``--max-document-chars`` this way: admission
    rejects it (``document_too_large``) and the dead-letter writer writes it as the row's
    ``payload`` from this buffer, so the rejection path holds no Python string of the document
    and no second UTF-8 copy of it (see :meth:`as_arrow`).

    ``len()`` is the value's length in code points, as ``len()`` of its string would be.

    Args:
        array: A one-value ``string`` or ``large_string`` array (a slice of a column: zero-copy),
            valid UTF-8.
    """

    __slots__ = ("_array", "_chars")

    def __init__(self, array: pa.Array) -> None:
        if len(array) != 1 or not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
            raise ValueError(f"ArrowText holds one string value, got {len(array)} of {array.type}")
        self._array = array
        self._chars = int(pc.utf8_length(array)[0].as_py())

    def __len__(self) -> int:
        return self._chars

    @property
    def utf8_bytes(self) -> int:
        """The value's size in bytes of UTF-8."""
        return int(pc.binary_length(self._array)[0].as_py())

    def as_arrow(self, arrow_type: pa.DataType) -> pa.Array:
        """The value as a one-value array of ``arrow_type`` (``string`` or ``large_string``); the
        UTF-8 bytes are shared with the read's buffer, not copied (only the two offsets are)."""
        return self._array if self._array.type == arrow_type else self._array.cast(arrow_type)

    def __str__(self) -> str:
        return str(self._array[0].as_py())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ArrowText):
            return self._array.equals(other._array.cast(self._array.type))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ArrowText({self._chars} characters)"

    def __reduce__(self):
        # The value's own UTF-8 bytes: pyarrow pickles a slice with its column's whole buffers.
        array = self._array
        width = np.int64 if pa.types.is_large_string(array.type) else np.int32
        start, end = np.frombuffer(array.buffers()[1], dtype=width)[array.offset : array.offset + 2].tolist()
        return (_arrow_text_from_utf8, (array.buffers()[2].slice(start, end - start), array.type))


def _arrow_text_from_utf8(data: pa.Buffer, arrow_type: pa.DataType) -> ArrowText:
    """An :class:`ArrowText` of one value's UTF-8 bytes (unpickling)."""
    width = np.int64 if pa.types.is_large_string(arrow_type) else np.int32
    offsets = pa.py_buffer(np.array([0, data.size], dtype=width).tobytes())
    return ArrowText(pa.Array.from_buffers(arrow_type, 1, [None, offsets, data]))


def table_columns(
    table: pa.Table, rename: Mapping[str, str], *, text_limits: Mapping[str, int] | None = None
) -> dict[str, list[Any]]:
    """Columns of one table as Python lists, renamed; a value that is not valid UTF-8 stays bytes.

    A string column whose values are not all valid UTF-8 is decoded value by value, so one bad
    value becomes a dead-letter row (``invalid_content`` ...) instead of failing the whole
    batch, as ``Table.to_pylist`` would. A contract-named column replaced by a mapped one is
    dropped. See :func:`column_values`.

    Args:
        table: One row group (or any table) of input rows.
        rename: Input column name -> output name; an output name that is also an input column's
            name drops that column (the mapped one wins).
        text_limits: Output column name -> a length in code points: a valid UTF-8 value of that
            (plain or large string) column longer than it is an :class:`ArrowText`, not a string.

    Returns:
        Output column name -> its values, one per row.
    """
    shadowed = set(rename.values())
    limits = text_limits or {}
    columns: dict[str, list[Any]] = {}
    for name, column in zip(table.column_names, table.columns):
        if name in shadowed and name not in rename:
            continue
        target = rename.get(name, name)
        limit = limits.get(target)
        if limit is not None and (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            columns[target] = _values_within(column, limit)
        else:
            columns[target] = column_values(column)
    return columns


def _values_within(column: pa.ChunkedArray, limit: int) -> list[Any]:
    """As :func:`column_values`, but each valid UTF-8 value longer than ``limit`` code points is an
    :class:`ArrowText`; the values around those are converted in zero-copy slices."""
    over = [
        np.flatnonzero(pc.fill_null(pc.greater(pc.utf8_length(chunk), limit), False).to_numpy(zero_copy_only=False))
        for chunk in column.chunks
    ]
    if not any(len(indices) for indices in over):
        return column_values(column)
    values: list[Any] = []
    for chunk, indices in zip(column.chunks, over):
        start = 0
        for index in indices.tolist():
            value = chunk.slice(index, 1)
            try:
                value.validate(full=True)  # UTF-8 checked, nothing copied
            except pa.ArrowInvalid:
                continue  # not UTF-8: converted with its neighbours (bytes, for invalid_content)
            values += column_values(pa.chunked_array([chunk.slice(start, index - start)], type=chunk.type))
            values.append(ArrowText(value))
            start = index + 1
        values += column_values(pa.chunked_array([chunk.slice(start)], type=chunk.type))
    return values


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
