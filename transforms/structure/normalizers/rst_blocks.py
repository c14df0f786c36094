"""The reStructuredText block scanner: lines and their indentation into blocks.

:class:`_Scanner` reads a document's lines, their starts and their indentations (three
sequences indexed by line number) and yields its top-level blocks (``iter_blocks``); the rules
it follows are the ``rst`` module's docstring. Both paths of
:func:`transforms.structure.normalizers.rst.normalize_rst` run it: a document of up to
``LARGE_CHARS`` code points on lists of its lines, a longer one on ``rst._Column`` views of its
lines made a page at a time (``stream=True``: a block whose children span more than
``STREAM_CHARS`` code points gets them as a
:class:`~transforms.structure.tree.StreamedChildren` that scans its lines again). The sizes are
attributes of :mod:`transforms.structure.normalizers.rst`, read when used.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Generator
from typing import TypeVar

from transforms.structure.normalizers import rst
from transforms.structure.tree import Node, StreamedChildren

_Result = TypeVar("_Result")  # what a generator of blocks returns (the line after its last one)

#: ASCII punctuation that may adorn a section title (docutils' "non-alphanumeric 7-bit" set).
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_BULLETS = frozenset("-*+\u2022\u2023\u2043")
_ENUMERATOR = re.compile(
    r"(?:(?:\d+|#|[a-zA-Z]|[ivxlcdm]+|[IVXLCDM]+)([.)])|\((?:\d+|#|[a-zA-Z]|[ivxlcdm]+|[IVXLCDM]+)(\)))"
    r"(?:[ \t]+|\Z)"
)
_DIRECTIVE = re.compile(r"\.\.[ \t]+[\w:.+-]+::")
_CODE_DIRECTIVE = re.compile(r"\.\.[ \t]+(?:code-block|sourcecode|code)::(?:[ \t]+(\S+))?")
_GRID_TOP = re.compile(r"\+(?:-+\+)+\s*\Z")
_GRID_BORDER = re.compile(r"\+(?:[-=]+\+)+\s*\Z")
_SIMPLE_TOP = re.compile(r"=+(?:[ \t]+=+)+\s*\Z")
_SIMPLE_BORDER = re.compile(r"=[ =\t]*\Z")
#: A border or column-span underline inside a simple table's body: continues the row above.
_SIMPLE_RULE = re.compile(r"[-=][ \t=-]*\Z")
#: Deeper nesting of quotes, lists and items than this is kept as one ``rule`` block.
_MAX_NESTING = 60
_MAX_LEVEL = 6


def _width(text: str) -> int:
    """Columns ``text`` takes: East Asian wide and full-width characters count twice."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _adornment(line: str) -> str:
    """The line without trailing whitespace when it is one repeated punctuation character, else ``""``."""
    if not line or line[0] not in _PUNCTUATION:
        return ""
    stripped = line.rstrip()
    return stripped if stripped.count(stripped[0]) == len(stripped) else ""


class _Scanner:
    """Block scanner over the lines of one document.

    ``indents[i]`` is line ``i``'s indentation in columns, or -1 for a blank line. A *region* is a
    range of lines ``[lo, hi)`` whose non-blank lines are all indented at least ``base`` columns.

    The ``iter_*`` methods are generators of blocks; a block's children are gathered by
    :meth:`children`, which runs such a generator to its end at once (so diagnostics come in the
    same order as with lists) and keeps what it yields, unless ``stream`` is set and they span
    more than ``STREAM_CHARS``: then it only runs it through, and the children are a
    ``StreamedChildren`` that runs it again, on a fresh scanner, on each iteration.
    """

    def __init__(self, lines, starts, indents, count: int, *, stream: bool) -> None:
        self.lines, self.starts, self.indents = lines, starts, indents
        self.count = count
        self.stream = stream
        self.lazy = False  # a scan again (``_scan_again``): see ``region_children``
        self.styles: dict[tuple[str, bool], int] = {}
        self.short_underlines = 0
        self.capped_levels = 0
        self.notes: list[str] = []
        # (indentation, top border line, where its scan stopped) of the last simple table that had
        # no bottom border: a later top border inside that range cannot have one either.
        self.simple_table_failure = (-1, -1, -1)
        self.styles_met: tuple = ()  # ``styles`` as a tuple of items (a mark holds it)
        self.top_mark: tuple | None = None  # (line, styles, simple-table memo) where the last top-level block started

    def diagnostics(self) -> tuple[str, ...]:
        notes = list(self.notes)
        if self.short_underlines:
            notes.append(f"{self.short_underlines} section title(s) with an underline shorter than the title")
        if self.capped_levels:
            notes.append(
                f"{len(self.styles)} title styles: {self.capped_levels} title(s) deeper than level 6 kept at 6"
            )
        return tuple(notes)

    # -- helpers -----------------------------------------------------------------------------

    def span(self, first: int, stop: int) -> tuple[int, int]:
        """Code-point interval of lines ``[first, stop)``, ending at the end of line ``stop - 1``."""
        return self.starts[first], self.starts[stop - 1] + len(self.lines[stop - 1])

    def indented_end(self, first: int, hi: int, indent: int) -> int:
        """One past the last non-blank line of the run from ``first`` indented more than ``indent``."""
        indents = self.indents
        stop = first
        i = first
        while i < hi:
            level = indents[i]
            if level >= 0:
                if level <= indent:
                    break
                stop = i + 1
            i += 1
        return stop

    def run_end(self, first: int, hi: int) -> int:
        """One past the last line of the run of non-blank lines starting at ``first``."""
        indents = self.indents
        i = first + 1
        while i < hi and indents[i] >= 0:
            i += 1
        return i

    def min_indent(self, lo: int, hi: int) -> int:
        indents = self.indents
        if type(indents) is list:
            levels = [level for level in indents[lo:hi] if level >= 0]
            return min(levels) if levels else 0
        return min((level for level in indents.levels(lo, hi) if level >= 0), default=0)

    def children(
        self, make: Callable[..., Generator[Node, None, _Result]], *args
    ) -> tuple[tuple[Node, ...] | StreamedChildren, int, int, _Result]:
        """Run ``make(self, *args)`` to its end: ``(children, first start, last end, its return value)``.

        The children are a tuple, or a ``StreamedChildren`` in streaming mode when they span more
        than ``STREAM_CHARS`` code points. Starts and ends are -1 when there are none.
        """
        state = self.simple_table_failure
        made = make(self, *args)
        nodes: list[Node] = []
        start = end = -1
        while True:
            try:
                node = next(made)
            except StopIteration as done:
                return tuple(nodes), start, end, done.value
            if start < 0:
                start = node.start
            end = node.end
            nodes.append(node)
            if self.stream and end - start > rst.STREAM_CHARS:
                break
        del nodes
        while True:
            try:
                end = next(made).end
            except StopIteration as done:
                value = done.value
                break
        streamed = StreamedChildren(_scan_again, self.lines, self.starts, self.indents, self.count, state, make, args)
        return streamed, start, end, value

    def region_children(self, lo: int, hi: int, make: Callable[..., Generator[Node, None, object]], *args):
        """:meth:`children` of a block whose children lie in lines ``[lo, hi)`` (at least one
        non-blank line). When scanning again (``lazy``), a region of more than ``STREAM_CHARS``
        gets a ``StreamedChildren`` at once, without a scan: nothing else in the scan depends on
        its children (the first scan already had their diagnostics), and so the blocks nested in
        a streamed block are not scanned again each time one around them is.
        """
        if self.lazy and self.starts[hi - 1] + len(self.lines[hi - 1]) - self.starts[lo] > rst.STREAM_CHARS:
            state = self.simple_table_failure
            return StreamedChildren(_scan_again, self.lines, self.starts, self.indents, self.count, state, make, args)
        return self.children(make, *args)[0]

    def marker(self, i: int) -> tuple[str, int, bool] | None:
        """The list marker starting line ``i``, or ``None``.

        Returns:
            ``(list kind, content column, whether text follows the marker on the line)``; the kind
            is the bullet character or the enumeration's punctuation, so a change starts a new list.
        """
        indent = self.indents[i]
        text = self.lines[i].lstrip()
        first = text[0]
        if first in _BULLETS:
            if len(text) == 1 or text[1] in " \t":
                rest = text[1:]
                body = rest.lstrip(" \t")
                return "bullet" + first, indent + 1 + len(rest) - len(body), body.strip() != ""
            return None
        if first.isalnum() or first in "#(":
            match = _ENUMERATOR.match(text)
            if match is not None:
                kind = "enum" + (match.group(1) or "()")
                return kind, indent + match.end(), text[match.end() :].strip() != ""
        return None

    def enumerated_item_ok(self, i: int, hi: int, kind: str) -> bool:
        """docutils' test: an enumerated item is followed by a blank, indented or next-item line."""
        nxt = i + 1
        if nxt >= hi or self.indents[nxt] < 0 or self.indents[nxt] > self.indents[i]:
            return True
        if self.indents[nxt] == self.indents[i]:
            other = self.marker(nxt)
            return other is not None and other[0] == kind
        return False

    def is_plain(self, i: int) -> bool:
        """Whether line ``i`` starts no construct other than a paragraph (or definition term)."""
        text = self.lines[i].lstrip()
        first = text[0]
        if text.startswith("..") and (len(text) == 2 or text[2] in " \t"):
            return False
        if first == "+" and _GRID_TOP.match(text):
            return False
        if first == "=" and _SIMPLE_TOP.match(text):
            return False
        if (first in _BULLETS or first.isalnum() or first in "#(") and self.marker(i) is not None:
            return False
        return not (self.indents[i] == 0 and _adornment(self.lines[i]))

    # -- regions -----------------------------------------------------------------------------

    def iter_blocks(
        self, lo: int, hi: int, base: int, depth: int, nesting: int, literal_first: bool
    ) -> Generator[Node, None, None]:
        """The blocks of region ``[lo, hi)`` at indentation ``base``.

        Args:
            depth: Number of lists around the region (a list found here gets level depth + 1).
            nesting: Number of quotes, lists and items around the region (a recursion guard).
            literal_first: The text just before the region ended with ``::``, so an indented
                block at its start is a literal block.
        """
        if nesting > _MAX_NESTING:
            first = lo
            while first < hi and self.indents[first] < 0:
                first += 1
            if first >= hi:
                return
            self.notes.append(f"blocks nested deeper than {_MAX_NESTING} levels at line {first + 1} kept as one block")
            yield Node("rule", *self.span(first, self.indented_end(first, hi, -1)))
            return
        indents = self.indents
        literal = literal_first
        i = lo
        while i < hi:
            indent = indents[i]
            if indent < 0:
                i += 1
                continue
            if indent > base:
                stop = self.indented_end(i, hi, base)
                if literal:
                    yield Node("code", *self.span(i, stop))
                else:
                    inner = self.min_indent(i, stop)
                    children = self.region_children(
                        i, stop, _Scanner.iter_blocks, i, stop, inner, depth, nesting + 1, False
                    )
                    yield Node("quote", *self.span(i, stop), children)
                literal = False
                i = stop
                continue
            if not nesting:
                # A top-level block starts here: what a scan resumed here needs (see _large_blocks).
                self.top_mark = (i, self.styles_met, self.simple_table_failure)
            node, i, literal = self.block_at(i, hi, depth, nesting)
            yield node

    def block_at(self, i: int, hi: int, depth: int, nesting: int) -> tuple[Node, int, bool]:
        """The block starting at line ``i`` (at the region's indentation).

        Returns:
            ``(node, next line, whether the block is a paragraph ending with "::")``.
        """
        lines, indents = self.lines, self.indents
        line = lines[i]
        indent = indents[i]
        text = line.lstrip()
        first = text[0]

        if indent == 0:
            heading = self.section_title(i, hi)
            if heading is not None:
                return heading
        if first == "." and text.startswith("..") and (len(text) == 2 or text[2] in " \t"):
            stop = max(self.indented_end(i + 1, hi, indent), i + 1)
            match = _CODE_DIRECTIVE.match(text)
            if match is not None:
                language = match.group(1) or ""
                return Node("code", *self.span(i, stop), language=language, fence=line + "\n"), stop, False
            # A directive's own line (not a comment's or a target's) is its fence: a part of a
            # split directive starts with it again.
            fence = line + "\n" if _DIRECTIVE.match(text) else ""
            return Node("rule", *self.span(i, stop), fence=fence), stop, False
        if first == "+" and _GRID_TOP.match(text):
            table = self.grid_table(i, hi)
            if table is not None:
                return table
        if first == "=" and _SIMPLE_TOP.match(text):
            table = self.simple_table(i, hi)
            if table is not None:
                return table
        if first in _BULLETS or first.isalnum() or first in "#(":
            found = self.marker(i)
            if found is not None and (found[0].startswith("bullet") or self.enumerated_item_ok(i, hi, found[0])):
                return self.list_at(i, hi, found[0], depth, nesting)
        if (
            i + 1 < hi
            and indents[i + 1] > indent
            and not text.rstrip().endswith("::")
            and not (indent == 0 and _adornment(line))
        ):
            return self.definition_list(i, hi, depth, nesting)
        stop = self.run_end(i, hi)
        literal = lines[stop - 1].rstrip().endswith("::")
        return Node("paragraph", *self.span(i, stop)), stop, literal

    # -- constructs --------------------------------------------------------------------------

    def section_title(self, i: int, hi: int) -> tuple[Node, int, bool] | None:
        """A section title (or transition) at line ``i``, which is at column 0."""
        lines, indents = self.lines, self.indents
        over = _adornment(lines[i])
        if over:
            if (
                i + 2 < hi
                and indents[i + 1] >= 0
                and indents[i + 2] == 0
                and not (indents[i + 1] == 0 and _adornment(lines[i + 1]))
            ):
                under = _adornment(lines[i + 2])
                title = lines[i + 1].strip()
                if under and under[0] == over[0] and self.underline_ok(min(len(over), len(under)), title):
                    return self.heading(i, i + 3, title, over[0], True), i + 3, False
            if len(over) >= 4 and (i == 0 or indents[i - 1] < 0) and (i + 1 >= hi or indents[i + 1] < 0):
                return Node("rule", *self.span(i, i + 1)), i + 1, False
            return None
        if i + 1 < hi and indents[i + 1] == 0:
            under = _adornment(lines[i + 1])
            if under:
                title = lines[i].strip()
                if self.underline_ok(len(under), title):
                    return self.heading(i, i + 2, title, under[0], False), i + 2, False
        return None

    def underline_ok(self, length: int, title: str) -> bool:
        if length < 3:
            return False
        if length >= _width(title):
            return True
        if length >= 4:
            self.short_underlines += 1
            return True
        return False

    def heading(self, first: int, stop: int, title: str, char: str, overline: bool) -> Node:
        style = (char, overline)
        level = self.styles.get(style)
        if level is None:
            level = self.styles[style] = len(self.styles) + 1
            self.styles_met = tuple(self.styles.items())
        if level > _MAX_LEVEL:
            self.capped_levels += 1
            level = _MAX_LEVEL
        return Node("heading", *self.span(first, stop), level=level, title=" ".join(title.split()))

    def list_at(self, i: int, hi: int, kind: str, depth: int, nesting: int) -> tuple[Node, int, bool]:
        """A bullet or enumerated list whose first item starts at line ``i``."""
        items, start, end, stop = self.children(_Scanner.iter_items, i, hi, kind, depth, nesting)
        return Node("list", start, end, items, level=depth + 1), stop, False

    def iter_items(self, i: int, hi: int, kind: str, depth: int, nesting: int) -> Generator[Node, None, int]:
        """The items of :meth:`list_at`'s list; returns the line after the last one."""
        indents = self.indents
        indent = indents[i]
        k = i
        found = self.marker(i)  # (a marker: list_at is called at one)
        while found is not None:
            stop = max(self.indented_end(k + 1, hi, indent), k + 1)
            yield self.item(k, stop, found[1], found[2], depth + 1, nesting + 1)
            nxt = stop
            while nxt < hi and indents[nxt] < 0:
                nxt += 1
            if nxt >= hi or indents[nxt] != indent:
                break
            found = self.marker(nxt)
            if found is None or found[0] != kind:
                break
            if not kind.startswith("bullet") and not self.enumerated_item_ok(nxt, hi, kind):
                break
            k = nxt
        return stop

    def item(self, k: int, stop: int, column: int, has_text: bool, depth: int, nesting: int) -> Node:
        """A list item over lines ``[k, stop)``: its first paragraph, then its blocks as children.

        Args:
            column: Where the text after the marker starts (columns).
            has_text: Whether the marker line has text after the marker; if not, the item's first
                paragraph is on the next lines and is a child like the rest.
        """
        if has_text:
            after = self.run_end(k, stop)
            literal = self.lines[after - 1].rstrip().endswith("::")
        else:
            after, literal = k + 1, False
        children: tuple[Node, ...] | StreamedChildren = ()
        if after < stop:
            inner = self.min_indent(after, stop)
            base = min(column, inner) if has_text else inner
            children = self.region_children(
                after, stop, _Scanner.iter_blocks, after, stop, base, depth, nesting + 1, literal
            )
        return Node("list_item", *self.span(k, stop), children)

    def definition_list(self, i: int, hi: int, depth: int, nesting: int) -> tuple[Node, int, bool]:
        """A definition list whose first term is line ``i`` (its definition starts on line ``i + 1``)."""
        items, start, end, stop = self.children(_Scanner.iter_definitions, i, hi, depth, nesting)
        return Node("list", start, end, items, level=depth + 1), stop, False

    def iter_definitions(self, i: int, hi: int, depth: int, nesting: int) -> Generator[Node, None, int]:
        """The items of :meth:`definition_list`'s list; returns the line after the last one."""
        indents = self.indents
        indent = indents[i]
        k = i
        while True:
            stop = self.indented_end(k + 1, hi, indent)
            inner = self.min_indent(k + 1, stop)
            children = self.region_children(
                k + 1, stop, _Scanner.iter_blocks, k + 1, stop, inner, depth + 1, nesting + 2, False
            )
            yield Node("list_item", *self.span(k, stop), children)
            nxt = stop
            while nxt < hi and indents[nxt] < 0:
                nxt += 1
            if not (
                nxt + 1 < hi
                and indents[nxt] == indent
                and indents[nxt + 1] > indent
                and not self.lines[nxt].rstrip().endswith("::")
                and self.is_plain(nxt)
            ):
                break
            k = nxt
        return stop

    def grid_table(self, i: int, hi: int) -> tuple[Node, int, bool] | None:
        """A grid table whose top border is line ``i``, or ``None`` when no line follows the border."""
        lines, indents = self.lines, self.indents
        indent = indents[i]
        stop = i + 1
        while stop < hi and indents[stop] == indent and lines[stop].lstrip()[0] in "+|":
            stop += 1
        if stop - i < 2:
            return None
        header_end = next(
            (k for k in range(i + 1, stop) if "=" in lines[k] and _GRID_BORDER.match(lines[k].lstrip())), -1
        )
        rows = self.region_children(i, stop, _Scanner.iter_grid_rows, i, stop, header_end)
        table = Node("table", *self.span(i, stop), rows, header_rows=1 if header_end >= 0 else 0)
        return table, stop, False

    def iter_grid_rows(self, i: int, stop: int, header_end: int) -> Generator[Node, None, None]:
        """The rows of the grid table over lines ``[i, stop)`` whose header ends at line ``header_end`` (or -1)."""
        lines = self.lines
        row_start = i  # without a header, the first row holds the top border
        if header_end >= 0:
            yield Node("table_row", *self.span(i, header_end + 1))
            row_start = header_end + 1
        for k in range(row_start, stop):
            if k > i and _GRID_BORDER.match(lines[k].lstrip()):
                yield Node("table_row", *self.span(row_start, k + 1))
                row_start = k + 1
        if row_start < stop:
            self.notes.append(f"grid table at line {i + 1} does not end with a border")
            yield Node("table_row", *self.span(row_start, stop))

    def simple_table(self, i: int, hi: int) -> tuple[Node, int, bool] | None:
        """A simple table whose top border is line ``i``, or ``None`` when no bottom border follows.

        The bottom border is the first border line followed by a blank line (or the region's end);
        the first border line before it ends the header.
        """
        lines, indents = self.lines, self.indents
        indent = indents[i]
        failed_indent, failed_from, failed_to = self.simple_table_failure
        if indent == failed_indent and failed_from < i < failed_to:
            return None  # the scan from an earlier top border already found no bottom border here
        separator = -1
        bottom = -1
        k = i + 1
        while k < hi:
            level = indents[k]
            if level >= 0:
                if level < indent:
                    break
                if level == indent and _SIMPLE_BORDER.match(lines[k].lstrip()):
                    if k + 1 >= hi or indents[k + 1] < 0:
                        bottom = k
                        break
                    if separator < 0:
                        separator = k
            k += 1
        if bottom < 0:
            self.simple_table_failure = (indent, i, k)
            self.notes.append(f"simple table at line {i + 1} has no bottom border: read as text")
            return None
        rows = self.region_children(i, bottom + 1, _Scanner.iter_simple_rows, i, bottom, separator)
        table = Node("table", *self.span(i, bottom + 1), rows, header_rows=1 if separator >= 0 else 0)
        return table, bottom + 1, False

    def iter_simple_rows(self, i: int, bottom: int, separator: int) -> Generator[Node, None, None]:
        """The rows of the simple table over lines ``[i, bottom]`` whose header ends at line
        ``separator`` (or -1)."""
        lines, indents = self.lines, self.indents
        indent = indents[i]
        body_from = separator + 1 if separator >= 0 else i + 1
        k = body_from
        while k < bottom and indents[k] < 0:
            k += 1
        if k >= bottom:
            # No body: one row, the header's when there is one, takes the closing border.
            yield Node("table_row", *self.span(i, bottom + 1))
            return
        if separator >= 0:
            yield Node("table_row", *self.span(i, separator + 1))
        first_column = len(lines[i].lstrip().split(None, 1)[0])
        row_first = row_last = -1
        for k in range(body_from, bottom):
            if indents[k] < 0:
                continue
            line = lines[k].expandtabs(8) if "\t" in lines[k] else lines[k]
            cell = line[indent : indent + first_column]
            continues = row_last >= 0 and (not cell.strip() or _SIMPLE_RULE.match(line.lstrip()) is not None)
            if not continues:
                if row_last >= 0:
                    yield Node("table_row", *self.span(row_first, row_last + 1))
                row_first = k if (separator >= 0 or row_last >= 0) else i
            row_last = k
        yield Node("table_row", *self.span(row_first, bottom + 1))


def _scan_again(
    lines, starts, indents, count: int, state: tuple[int, int, int], make, args
) -> Generator[Node, None, None]:
    """The children ``make`` yielded in :meth:`_Scanner.children`, made again on a fresh scanner
    (its diagnostics dropped) in the state the first scan started in."""
    scanner = _Scanner(lines, starts, indents, count, stream=True)
    scanner.simple_table_failure = state
    scanner.lazy = True
    return make(scanner, *args)
