# main's transforms/structure/normalizers/rst.py (4b2709c), unchanged: the reference of rst_fuzz.py and rst_normalizer_speed.py.
"""reStructuredText into blocks, with a fast line-based scanner (no docutils).

The scanner looks at lines and their indentation only; inline markup is never interpreted (a
heading's ``title`` is its raw text with whitespace collapsed). It follows docutils where it can
do so cheaply. Recognized:

- **Section titles**: a title line with an underline of one repeated ASCII punctuation
  character, optionally with an overline of the same character, at column 0 (an overlined title
  may be inset). The underline must be at least 3 characters and at least as long as the title,
  or at least 4 characters (docutils accepts a short underline of 4 or more with a warning; so do
  we, with a diagnostic). Levels follow the order in which each (character, overline or not)
  style first appears, like docutils, capped at 6. ``heading`` covers overline, title and
  underline.
- **Transitions**: a line of 4 or more repeated punctuation characters between blank lines:
  ``rule``.
- **Literal blocks**: the indented block after a paragraph ending in ``::`` (and blank lines) is
  a ``code`` block with ``fence`` and ``language`` empty; the paragraph stays a paragraph.
- **Code directives** ``.. code-block::``, ``.. code::`` and ``.. sourcecode::`` with their
  indented body (options included): ``code`` with ``language`` the directive's argument and
  ``fence`` the directive line as written plus ``"\\n"`` (so a split code block re-opens with the
  directive line and a blank line).
- **Other explicit markup** (any other directive, comments, hyperlink targets, footnotes,
  citations, substitution definitions) with its indented body: one ``rule`` block. Their bodies
  are not parsed (in the Python docs that includes every ``.. function::``/``.. method::`` body).
- **Bullet lists** (``-``, ``*``, ``+``, ``•``, ``‣``, ``⁃``) and **enumerated lists**
  (``1.``, ``#.``, ``a)``, ``(iv)`` ...): ``list`` (``level`` = list nesting depth, 1 outermost)
  of ``list_item``; an item's first paragraph is its own text and its later blocks (nested
  lists, paragraphs, literal blocks ...) are its children. An item ends at the first non-blank
  line not indented past its marker. A different bullet character or enumeration format starts a
  new list. An enumerated item needs a blank, indented or next-item line after it (as in
  docutils, so "A. Smith wrote" is prose).
- **Definition lists**: a one-line term directly followed by a more indented definition: a
  ``list`` whose items are term plus definition, the definition's blocks as children (field
  lists whose body continues on an indented line read the same way).
- **Grid tables** (``+---+`` borders, ``+===+`` ending the header) and **simple tables**
  (``===  ===`` borders of at least two columns): ``table`` of ``table_row``. Grid: the header
  row spans the top border through the ``+===+`` line, each body row its content lines and its
  bottom border; without a header the first row also holds the top border; a row with row spans
  runs to the next full border. Simple: the header row spans the top border through the second
  border, each body row its lines (a line with an empty first column continues the row above, as
  in docutils) and the last row holds the closing border. ``header_rows`` is 1 with a header.
- **Block quotes**: an indented block not after ``::``: ``quote`` with its blocks as children.
- **Paragraphs**: everything else, as maximal runs of non-blank lines (a run is never
  interrupted: as in docutils, a list or title needs a blank line before it).

Not recognized (they read as paragraphs or stay inside other blocks): quoted literal blocks
(unindented lines all starting with the same punctuation, e.g. ``>``), doctest blocks, line
blocks, option lists, field lists as such, inline markup and substitutions, and anything inside
a directive body. Only the three directives above are code: ``.. doctest::``, ``.. testcode::``,
``.. literalinclude::``, ``.. parsed-literal::``, CSV and list tables are ``rule`` like every
other directive. ``.. highlight::`` does not give literal blocks a language. Titles are only
found at column 0, never inside quotes or list items (docutils does not allow them there either).
Quotes, lists and items nested more than 60 deep are kept as one ``rule`` block (a diagnostic
says where).

Lines end at ``"\\n"``, ``"\\r\\n"`` or a lone ``"\\r"`` only. Indentation is measured in columns
with tabs expanded to multiples of 8 (docutils' rule); a line of whitespace only is blank.
``text`` is the content unchanged; every interval is in code points, starts at a line start and
ends at the end of a non-blank line (its line break excluded). Every non-blank line lies inside
some top-level block.
"""

from __future__ import annotations

import re
import unicodedata

from transforms.structure.normalizers.text import split_lines
from transforms.structure.tree import Node, NormalizedDocument

__all__ = ["normalize_rst"]

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


def normalize_rst(content: str) -> NormalizedDocument:
    """Normalize reStructuredText into blocks with a line-based scanner.

    Args:
        content: The reStructuredText source.

    Returns:
        A verbatim :class:`NormalizedDocument` (``text`` is ``content``); intervals in code points.
    """
    scanner = _Scanner(content)
    blocks = scanner.blocks(0, len(scanner.lines), 0, 0, 0, literal_first=False)
    return NormalizedDocument(
        text=content,
        blocks=tuple(blocks),
        content_format="rst",
        verbatim=True,
        diagnostics=scanner.diagnostics(),
    )


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
    """

    def __init__(self, text: str) -> None:
        self.lines, self.starts = split_lines(text)
        self.indents = [_indent(line) for line in self.lines]
        self.styles: dict[tuple[str, bool], int] = {}
        self.short_underlines = 0
        self.capped_levels = 0
        self.notes: list[str] = []
        # (indentation, top border line, where its scan stopped) of the last simple table that had
        # no bottom border: a later top border inside that range cannot have one either.
        self.simple_table_failure = (-1, -1, -1)

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
        levels = [level for level in self.indents[lo:hi] if level >= 0]
        return min(levels) if levels else 0

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

    def blocks(self, lo: int, hi: int, base: int, depth: int, nesting: int, *, literal_first: bool) -> list[Node]:
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
                return []
            self.notes.append(f"blocks nested deeper than {_MAX_NESTING} levels at line {first + 1} kept as one block")
            return [Node("rule", *self.span(first, self.indented_end(first, hi, -1)))]
        indents = self.indents
        out: list[Node] = []
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
                    out.append(Node("code", *self.span(i, stop)))
                else:
                    inner = self.min_indent(i, stop)
                    children = self.blocks(i, stop, inner, depth, nesting + 1, literal_first=False)
                    out.append(Node("quote", *self.span(i, stop), tuple(children)))
                literal = False
                i = stop
                continue
            node, i, literal = self.block_at(i, hi, depth, nesting)
            out.append(node)
        return out

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
        level = self.styles.setdefault(style, len(self.styles) + 1)
        if level > _MAX_LEVEL:
            self.capped_levels += 1
            level = _MAX_LEVEL
        return Node("heading", *self.span(first, stop), level=level, title=" ".join(title.split()))

    def list_at(self, i: int, hi: int, kind: str, depth: int, nesting: int) -> tuple[Node, int, bool]:
        """A bullet or enumerated list whose first item starts at line ``i``."""
        indents = self.indents
        indent = indents[i]
        items: list[Node] = []
        k = i
        found = self.marker(i)
        while True:
            stop = max(self.indented_end(k + 1, hi, indent), k + 1)
            items.append(self.item(k, stop, found[1], found[2], depth + 1, nesting + 1))
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
        return Node("list", items[0].start, items[-1].end, tuple(items), level=depth + 1), stop, False

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
        children: list[Node] = []
        if after < stop:
            inner = self.min_indent(after, stop)
            base = min(column, inner) if has_text else inner
            children = self.blocks(after, stop, base, depth, nesting + 1, literal_first=literal)
        return Node("list_item", *self.span(k, stop), tuple(children))

    def definition_list(self, i: int, hi: int, depth: int, nesting: int) -> tuple[Node, int, bool]:
        """A definition list whose first term is line ``i`` (its definition starts on line ``i + 1``)."""
        indents = self.indents
        indent = indents[i]
        items: list[Node] = []
        k = i
        while True:
            stop = self.indented_end(k + 1, hi, indent)
            inner = self.min_indent(k + 1, stop)
            children = self.blocks(k + 1, stop, inner, depth + 1, nesting + 2, literal_first=False)
            items.append(Node("list_item", *self.span(k, stop), tuple(children)))
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
        return Node("list", items[0].start, items[-1].end, tuple(items), level=depth + 1), stop, False

    def grid_table(self, i: int, hi: int) -> tuple[Node, int, bool] | None:
        """A grid table whose top border is line ``i``, or ``None`` when no line follows the border."""
        lines, indents = self.lines, self.indents
        indent = indents[i]
        stop = i + 1
        while stop < hi and indents[stop] == indent and lines[stop].lstrip()[0] in "+|":
            stop += 1
        if stop - i < 2:
            return None
        borders = [k for k in range(i + 1, stop) if _GRID_BORDER.match(lines[k].lstrip())]
        header_end = next((k for k in borders if "=" in lines[k]), -1)
        rows: list[Node] = []
        row_start = i  # without a header, the first row holds the top border
        if header_end >= 0:
            rows.append(Node("table_row", *self.span(i, header_end + 1)))
            row_start = header_end + 1
        for k in borders:
            if k >= row_start:
                rows.append(Node("table_row", *self.span(row_start, k + 1)))
                row_start = k + 1
        if row_start < stop:
            self.notes.append(f"grid table at line {i + 1} does not end with a border")
            rows.append(Node("table_row", *self.span(row_start, stop)))
        table = Node("table", *self.span(i, stop), tuple(rows), header_rows=1 if header_end >= 0 else 0)
        return table, stop, False

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
        separators: list[int] = []
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
                    separators.append(k)
            k += 1
        if bottom < 0:
            self.simple_table_failure = (indent, i, k)
            self.notes.append(f"simple table at line {i + 1} has no bottom border: read as text")
            return None
        first_column = len(lines[i].lstrip().split(None, 1)[0])
        rows: list[Node] = []
        body_from = i + 1
        if separators:
            rows.append(Node("table_row", *self.span(i, separators[0] + 1)))
            body_from = separators[0] + 1
        row_first = row_last = -1
        for k in range(body_from, bottom):
            if indents[k] < 0:
                continue
            line = lines[k].expandtabs(8) if "\t" in lines[k] else lines[k]
            cell = line[indent : indent + first_column]
            continues = row_last >= 0 and (not cell.strip() or _SIMPLE_RULE.match(line.lstrip()) is not None)
            if not continues:
                if row_last >= 0:
                    rows.append(Node("table_row", *self.span(row_first, row_last + 1)))
                row_first = k if rows else i
            row_last = k
        if row_last >= 0:
            rows.append(Node("table_row", *self.span(row_first, bottom + 1)))
        elif rows:  # a header and no body: the header row takes the closing border
            rows[-1] = Node("table_row", rows[-1].start, self.span(bottom, bottom + 1)[1])
        else:
            rows.append(Node("table_row", *self.span(i, bottom + 1)))
        table = Node("table", *self.span(i, bottom + 1), tuple(rows), header_rows=1 if separators else 0)
        return table, bottom + 1, False


def _indent(line: str) -> int:
    """Indentation of ``line`` in columns (tabs to multiples of 8), or -1 when it is blank."""
    if not line:
        return -1
    first = line[0]
    if first != " " and first != "\t" and not first.isspace():
        return 0
    rest = line.lstrip()
    if not rest:
        return -1
    lead = line[: len(line) - len(rest)]
    return len(lead.expandtabs(8)) if "\t" in lead else len(lead)
