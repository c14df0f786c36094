"""StructureAwareChunker under tight budgets (20 to 128 tokens of cl100k_base): context travels with
what it introduces, an over-budget unit is cut where it is best cut, and no part is a sliver.

Properties over generated Markdown and reST documents (headings, tables, long lists, code blocks
with long lines, long paragraphs), each checked against the source and independent recounts:

* heading path: a chunk's ``headings`` is the section path of the first text in it that is not
  a section's heading line, whether its section fits one chunk or not;
* table header: a part of a split table that starts at a row carries the header rows before it
  (``context: table_header``) when they fit the budget with that row and with the first body
  row; no part ends right after the header when the header fits with its first body row;
* code: every chunk that starts inside a split code block says ``split: code``, and one that
  starts at a line of a fenced block carries the fence when the fence fits with that line and
  with the first line;
* part size: a paragraph or a line of code cut into pieces has none under an eighth of the
  budget (a part aims at the room after its prefix and context, at most half the budget, and a
  coarse cut or the last two parts give at least a quarter of that);
* the invariants: every ``embedding_text`` recounts within ``max_tokens``, the chunks tile the
  text (only whitespace between them), ``content[start:end] == text`` where offsets are set,
  and validation finds no problem.

The instances that found each kind are exact tests at the end, named for the behaviour they guard.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transforms.chunkers.structure import StructureAwareChunker
from transforms.documents import Document
from transforms.structure.packing import distinct_titles
from transforms.structure.tree import Node
from transforms.structure.validation import validate_structure_chunks
from transforms.tokenizers import TiktokenTokenizer

TOK = TiktokenTokenizer("cl100k_base")

SETTINGS = settings(
    derandomize=True,
    print_blob=True,
    deadline=None,
    max_examples=120,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_WORDS = ("alpha", "beta", "gamma", "delta", "pip", "install", "release", "notes", "x", "42", "yield", "table")

# --------------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------------

words = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6).map(" ".join)
sentence = st.lists(st.sampled_from(_WORDS), min_size=2, max_size=30).map(lambda w: " ".join(w).capitalize() + ".")
paragraph = st.lists(sentence, min_size=1, max_size=40).map(" ".join)
long_line = st.lists(
    st.sampled_from(_WORDS + ("+", "=", "(x)", "a.b", "0x1f", "end.", "ok!")), min_size=1, max_size=400
).map(" ".join)
code_line = st.one_of(words, long_line)


@st.composite
def md_table(draw: st.DrawFn) -> str:
    cols = draw(st.integers(2, 4))
    header = "| " + " | ".join(draw(st.lists(words, min_size=cols, max_size=cols))) + " |\n"
    rule = "|" + "---|" * cols + "\n"
    rows = draw(st.lists(st.lists(words, min_size=cols, max_size=cols), min_size=1, max_size=14))
    return header + rule + "".join("| " + " | ".join(r) + " |\n" for r in rows)


md_list = st.lists(st.one_of(words, sentence), min_size=1, max_size=20).map(
    lambda items: "".join(f"- {item}\n" for item in items)
)
md_code = st.tuples(st.sampled_from(["python", "", "sh"]), st.lists(code_line, min_size=1, max_size=6)).map(
    lambda t: f"```{t[0]}\n" + "".join(line + "\n" for line in t[1]) + "```\n"
)
md_block = st.one_of(paragraph, md_table(), md_list, md_code)


@st.composite
def md_doc(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 5))):
        level = draw(st.integers(1, 3))
        parts.append("#" * level + " " + draw(words).title() + "\n")
        parts.extend(draw(st.lists(md_block, min_size=0, max_size=3)))
    return "\n".join(parts)


rst_literal = st.tuples(words, st.lists(code_line, min_size=1, max_size=3)).map(
    lambda t: t[0] + "::\n\n" + "".join("    " + line + "\n" for line in t[1])
)
rst_code = st.lists(code_line, min_size=1, max_size=3).map(
    lambda lines: ".. code-block:: python\n\n" + "".join("    " + line + "\n" for line in lines)
)
rst_list = st.lists(sentence, min_size=1, max_size=20).map(lambda items: "".join(f"* {item}\n" for item in items))


@st.composite
def rst_doc(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        title = draw(words).title()
        parts.append(title + "\n" + draw(st.sampled_from("=-~")) * len(title) + "\n")
        parts.extend(draw(st.lists(st.one_of(paragraph, rst_literal, rst_code, rst_list), min_size=0, max_size=3)))
    return "\n".join(parts)


documents = st.one_of(md_doc().map(lambda d: (d, "markdown")), rst_doc().map(lambda d: (d, "rst")))
budgets = st.integers(20, 128)

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _chunker(budget: int) -> StructureAwareChunker:
    return StructureAwareChunker(tokenizer=TOK, target_tokens=budget, max_tokens=budget)


def _run(content: str, content_format: str, budget: int):
    chunker = _chunker(budget)
    document = Document(id="d", content=content, content_format=content_format, metadata={})
    normalized = chunker.normalize(document)
    chunks = chunker.chunk(document, tokenizer_identity=TOK.identity)
    return normalized, chunks


def _own(chunk) -> tuple[int, int]:
    """The chunk's own interval of the source (its last span; a first span is repeated context)."""
    start, end = chunk.metadata["structure"]["spans"][-1]
    return start, end


def _blocks(node: Node, path: tuple[Node, ...] = ()):
    """``(block, section path)`` in reading order, a section's own heading line left out."""
    for i, child in enumerate(node.children):
        if child.kind == "section":
            yield from _blocks(child, path + (child,))
        elif not (i == 0 and child.kind == "heading" and node.kind == "section"):
            yield child, path


def _walk(node: Node):
    yield node
    for child in node.children:
        yield from _walk(child)


def _check_invariants(content: str, chunks, budget: int) -> None:
    position = 0
    for chunk in chunks:
        assert TOK.count(chunk.embedding_text) <= budget
        if chunk.start_offset is not None:
            assert content[chunk.start_offset : chunk.end_offset] == chunk.text
        start, end = _own(chunk)
        assert not content[position:start].strip(), "the chunks tile the text"
        position = end
    assert not content[position:].strip()
    result = validate_structure_chunks(content, chunks, tokenizer=TOK, max_tokens=budget, min_preferred_tokens=0)
    assert result.problems == (), result.problems


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(doc=documents, budget=budgets)
def test_heading_path_is_the_path_of_the_first_text_in_the_chunk(doc, budget):
    content, content_format = doc
    normalized, chunks = _run(content, content_format, budget)
    _check_invariants(content, chunks, budget)
    blocks = list(_blocks(normalized.root))
    for chunk in chunks:
        start, end = _own(chunk)
        first = next(
            ((b, p) for b, p in blocks if b.end > start and b.start < end and content[b.start : b.end].strip()), None
        )
        if first is None:
            continue  # heading lines alone
        assert chunk.headings == distinct_titles(first[1]), (chunk.text, chunk.headings)


@SETTINGS
@given(doc=md_doc(), budget=budgets)
def test_every_part_of_a_split_table_carries_its_header(doc, budget):
    normalized, chunks = _run(doc, "markdown", budget)
    _check_invariants(doc, chunks, budget)
    for table in (n for n in _walk(normalized.root) if n.kind == "table" and n.header_rows):
        rows = list(table.children)
        if len(rows) <= table.header_rows:
            continue
        header_end = rows[table.header_rows].start
        ends = [r.start for r in rows[1:]] + [table.end]
        row_text = {r.start: doc[r.start : e] for r, e in zip(rows, ends, strict=True)}
        header = doc[table.start : header_end]
        if TOK.count(header + row_text[header_end]) > budget:
            continue  # a header that does not fit with its first row is not repeated
        for chunk in chunks:
            start, end = _own(chunk)
            assert end != header_end, "a part never ends with the header alone"
            if start == table.start or start not in row_text:
                continue
            if TOK.count(header + row_text[start]) > budget:
                continue  # a row kept whole without the header
            assert chunk.metadata["structure"]["context"] == "table_header", chunk.text
            assert chunk.text.startswith(header)


@SETTINGS
@given(doc=documents, budget=budgets)
def test_every_part_of_a_split_code_block_says_code(doc, budget):
    content, content_format = doc
    normalized, chunks = _run(content, content_format, budget)
    _check_invariants(content, chunks, budget)
    for code in (n for n in _walk(normalized.root) if n.kind == "code"):
        inside = [c for c in chunks if code.start < _own(c)[0] < code.end]
        if not inside:
            continue  # not split
        for chunk in inside:
            assert chunk.metadata["structure"]["split"] == "code", chunk.text
        holder = next(c for c in chunks if _own(c)[0] <= code.start < _own(c)[1])
        assert holder.metadata["structure"]["split"] is not None, holder.text


@SETTINGS
@given(doc=documents, budget=budgets)
def test_a_unit_cut_inside_has_no_sliver(doc, budget):
    content, content_format = doc
    normalized, chunks = _run(content, content_format, budget)
    _check_invariants(content, chunks, budget)
    units = []
    for node in _walk(normalized.root):
        if node.kind == "paragraph":
            units.append((node.start, node.end))
        elif node.kind == "code":
            # Its lines (a fence or directive line with them).
            at = node.start
            for line in content[node.start : node.end].splitlines(keepends=True):
                units.append((at, at + len(line)))
                at += len(line)
    for start, end in units:
        pieces = [content[max(start, s) : min(end, e)] for s, e in map(_own, chunks) if s < end and e > start]
        pieces = [p for p in pieces if p.strip()]
        if len(pieces) < 2:
            continue
        for piece in pieces:
            assert TOK.count(piece.strip()) >= budget // 4, (budget, [TOK.count(p) for p in pieces])


# --------------------------------------------------------------------------------------------
# The instances
# --------------------------------------------------------------------------------------------

CHANGELOG = "# Changelog\n\n## Release notes\n\nInstall with pip install pkg first.\n"
ORCHARD = (
    "# Orchard report\n\n## Yields\n\n| Fruit | Tons | Grade |\n|---|---|---|\n"
    + "".join(f"| {fruit} | {tons} | {grade} |\n" for fruit, tons, grade in [
        ("Apple", 12, "A"), ("Pear", 8, "B"), ("Plum", 5, "A"), ("Cherry", 3, "A"),
        ("Peach", 7, "B"), ("Quince", 2, "C"), ("Fig", 4, "B"), ("Apricot", 6, "A"),
    ])
)  # fmt: skip


def test_a_section_that_fits_carries_the_path_of_its_text():
    _, chunks = _run(CHANGELOG, "markdown", 64)
    assert [(c.text, c.headings) for c in chunks] == [(CHANGELOG, ("Changelog", "Release notes"))]
    longer = CHANGELOG.replace("first.", "first. " + "Then restart the service and check the logs. " * 8)
    _, chunks = _run(longer, "markdown", 64)
    assert len(chunks) > 1
    assert {c.headings for c in chunks} == {("Changelog", "Release notes")}


def test_every_part_of_a_split_table_repeats_its_header():
    header = "| Fruit | Tons | Grade |\n|---|---|---|\n"
    header_and_row = "# Orchard report\n\n## Yields\n\n" + header + "| Apple | 12 | A |\n"
    assert TOK.count("Yields\n\n" + header + "| Apple | 12 | A |\n") <= 27
    for budget in (28, 40):
        _, chunks = _run(ORCHARD, "markdown", budget)
        _check_invariants(ORCHARD, chunks, budget)
        table_parts = [c for c in chunks if "| Fruit" in c.text or c.metadata["structure"]["split"] == "table"]
        for chunk in table_parts:
            assert chunk.text.count(header) == 1 and not chunk.text.endswith(header), (budget, chunk.text)
        for chunk in table_parts[1:]:
            assert chunk.metadata["structure"]["context"] == "table_header"
    _, chunks = _run(ORCHARD, "markdown", 40)
    assert chunks[0].text.startswith(header_and_row)
    assert chunks[0].headings == ("Orchard report", "Yields")
    # At 28 the heading lines, the header and a row do not fit together: the header goes with the row.
    _, chunks = _run(ORCHARD, "markdown", 28)
    assert chunks[0].text == "# Orchard report\n\n## Yields\n\n"
    assert chunks[1].text == header + "| Apple | 12 | A |\n"


def _segment(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


# One line of about 1,370 tokens with four sentence ends: 240 words in, 40 words later, then two
# words apart twice.
LITERAL = (
    "Build\n=====\n\nRun this::\n\n    "
    + ". ".join([_segment(240, "a"), _segment(40, "b"), _segment(2, "c"), _segment(2, "d"), _segment(400, "e")])
    + "\n"
)


def test_a_long_line_of_code_is_cut_into_balanced_code_parts():
    # Without the rules (512 tokens): 7 (the title and "Run this::" alone), 483, 93 (cut at a
    # sentence end), 510, 295, every part of the line "split: prose".
    for target, counts in ((512, [7, 510, 511, 359]), (400, [404, 398, 292, 293])):
        chunker = StructureAwareChunker(tokenizer=TOK, target_tokens=target, max_tokens=512)
        document = Document(id="d", content=LITERAL, content_format="rst", metadata={})
        chunks = chunker.chunk(document, tokenizer_identity=TOK.identity)
        _check_invariants(LITERAL, chunks, 512)
        assert [TOK.count(c.embedding_text) for c in chunks] == counts
        line_parts = [c for c in chunks if "a0" in c.text or c.metadata["structure"]["split"]]
        assert [c.metadata["structure"]["split"] for c in line_parts] == ["code"] * len(line_parts)
        # Cut at word starts (a code line has no sentences): every part ends with a whole word.
        assert all(c.text.rstrip()[-1].isdigit() for c in line_parts)
    # With room for a part after it, the introduction travels with the line's first part (at 512
    # a full part does not fit after it: the parts are cut where they are cut alone).
    assert chunks[0].text.startswith("Build\n=====\n\nRun this::\n\n    a0 a1")


def test_a_split_fenced_code_block_says_code_in_every_part_and_repeats_its_fence():
    code = "```python\n" + "".join(f"value_{i} = compute({i}, scale=2)\n" for i in range(30)) + "```\n"
    text = "# Tool\n\n" + code
    _, chunks = _run(text, "markdown", 64)
    _check_invariants(text, chunks, 64)
    assert len(chunks) > 2
    assert [c.metadata["structure"]["split"] for c in chunks] == ["code"] * len(chunks)
    assert chunks[0].text.startswith("# Tool\n\n```python\nvalue_0 = ")  # the fence goes with a line
    assert all(c.metadata["structure"]["context"] == "code_fence" for c in chunks[1:])
    assert all(c.text.startswith("```python\nvalue_") for c in chunks[1:])
    # A long line alone in a fenced block: the fence in the first part's text, then repeated.
    one = "```sh\n" + _segment(300, "arg") + "\n```\n"
    _, chunks = _run(one, "markdown", 64)
    _check_invariants(one, chunks, 64)
    assert [c.metadata["structure"]["split"] for c in chunks] == ["code"] * len(chunks)
    assert chunks[0].text.startswith("```sh\narg0")
    assert all(c.text.startswith("```sh\narg") for c in chunks[1:])
    counts = [TOK.count(c.embedding_text) for c in chunks]
    assert min(counts) >= 64 // 2, counts


def test_a_list_parent_travels_with_its_first_child_items():
    text = (
        "# Setup\n\n- Install the tools:\n"
        + "".join(f"  - tool number {i} with its options\n" for i in range(12))
        + "- Done.\n"
    )
    for budget in (24, 64):
        _, chunks = _run(text, "markdown", budget)
        _check_invariants(text, chunks, budget)
        # Without the rule: "# Setup\n\n- Install the tools:\n" alone (8 tokens), then the items.
        assert chunks[0].text.startswith("# Setup\n\n- Install the tools:\n  - tool number 0 with its options\n")
        assert all(c.metadata["structure"]["split"] is not None for c in chunks)
