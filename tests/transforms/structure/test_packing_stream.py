"""The packer reads a split block's children as a stream, a batch of tiles at a time.

A huge Markdown list or table gets ``children=StreamedChildren(...)`` (no ``len``, no indexing,
re-made on every iteration): the packer must take them by iteration only, hold a bounded number
of them (``limits.TILE_BATCH`` tiles, plus one tile of look-ahead), and cut exactly where it
cuts the same children held as a tuple. A batch's end must change no decision, so every
comparison here also runs with batches of 1, 2 and 3 tiles. The oracle is the same chunker on the
same normalized document with tuple children and one batch for any block seen here (the
shipped ``TILE_BATCH``); every field of every chunk, and of the packer's own chunks, is compared.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Sequence
from functools import partial
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.transforms.chunkers.test_structure_properties import markdown_doc
from transforms.chunkers import StructureAwareChunker, structure
from transforms.documents import Document
from transforms.structure.packing import Lines, Packer, counting, limits
from transforms.structure.tree import Node, NormalizedDocument, StreamedChildren
from transforms.tokenizers import TiktokenTokenizer, Utf8ByteTokenizer

TOK = TiktokenTokenizer("cl100k_base")
BYTES = Utf8ByteTokenizer()
_STREAMED_KINDS = frozenset({"list", "list_item", "table", "quote"})


def _streamed(node: Node) -> Node:
    """``node`` with the children of every list, item, table and quote in it (at any depth) as a
    :class:`StreamedChildren` that rebuilds them on each iteration, as the Markdown normalizer
    does for a huge block."""
    children: Sequence[Node] | StreamedChildren = node.children
    if children and node.kind in _STREAMED_KINDS:
        children = StreamedChildren(map, _streamed, tuple(children))
    elif children:
        children = tuple(_streamed(c) for c in children)
    return Node(
        node.kind,
        node.start,
        node.end,
        cast("Sequence[Node]", children),  # a StreamedChildren stands in for a sequence, as in the normalizers
        level=node.level,
        title=node.title,
        language=node.language,
        fence=node.fence,
        header_rows=node.header_rows,
        page_no=node.page_no,
    )


def _stream_document(normalized: NormalizedDocument) -> NormalizedDocument:
    return NormalizedDocument(
        text=normalized.text,
        blocks=tuple(_streamed(b) for b in normalized.blocks),
        content_format=normalized.content_format,
        verbatim=normalized.verbatim,
        diagnostics=normalized.diagnostics,
    )


def _run(
    monkeypatch,
    content: str,
    params: dict,
    tokenizer,
    *,
    streamed: bool,
    batch: int | None,
    content_format: str = "markdown",
):
    """Every field of every chunk, and of the packer's chunks."""
    packed: list = []
    with monkeypatch.context() as patch:
        real_piece, real_normalize = structure._piece, structure._normalize

        def spy(source, verbatim_source, chunk):
            packed.append(dict(vars(chunk)))
            return real_piece(source, verbatim_source, chunk)

        patch.setattr(structure, "_piece", spy)
        if streamed:
            patch.setattr(
                structure, "_normalize", lambda registry, document: _stream_document(real_normalize(registry, document))
            )
        if batch is not None:
            patch.setattr(limits, "TILE_BATCH", batch)
        chunker = StructureAwareChunker(tokenizer=tokenizer, **params)
        document = Document(id="d", content=content, content_format=content_format, metadata={"m": 1})
        chunks = [dict(vars(c)) for c in chunker.chunk(document, tokenizer_identity=tokenizer.identity)]
    return chunks, packed


def _compare(monkeypatch, content: str, params: dict, tokenizer, content_format: str = "markdown") -> None:
    expected = _run(monkeypatch, content, params, tokenizer, streamed=False, batch=None, content_format=content_format)
    for batch in (1, 2, 3, None):
        for streamed in (False, True):
            got = _run(
                monkeypatch, content, params, tokenizer, streamed=streamed, batch=batch, content_format=content_format
            )
            assert got == expected, (batch, streamed, params)


def _params(rng: random.Random) -> dict:
    max_tokens = rng.choice([8, 12, 16, 24, 32, 48, 64])
    target = rng.randint(max(1, max_tokens // 3), max_tokens)
    params = {
        "max_tokens": max_tokens,
        "target_tokens": target,
        "min_preferred_tokens": rng.choice([0, target, rng.randint(0, target)]),
    }
    if rng.random() < 0.3 and target > 1:
        params["overlap_tokens"] = rng.randint(1, min(20, target - 1))
    for flag in (
        "merge_small_sections",
        "allow_cross_top_level_merge",
        "include_heading_path_in_embedding",
        "preserve_code_blocks",
        "preserve_table_rows",
        "preserve_list_hierarchy",
    ):
        if rng.random() < 0.25:
            params[flag] = rng.random() < 0.5
    return params


def _table(rng: random.Random, rows: int) -> str:
    head = "| name | value | note |\n|---|---:|---|\n"
    return head + "".join(
        f"| r{i} | {rng.randint(0, 10 ** rng.randint(1, 9))} | {'x ' * rng.randint(0, 6)}|\n" for i in range(rows)
    )


def _list(rng: random.Random, items: int) -> str:
    out = []
    for i in range(items):
        depth = rng.choice([0, 0, 0, 1, 2])
        out.append("  " * depth + rng.choice(["- ", "* ", "1. "]) + f"item {i} " + "word " * rng.randint(0, 8))
        if rng.random() < 0.15:
            out.append("  " * depth + "  continued line of the same item")
    return "\n".join(out) + "\n"


def _quote(rng: random.Random, lines: int) -> str:
    return "".join(
        "> " + ("quoted text " * rng.randint(1, 5)) + ("\n>\n" if rng.random() < 0.3 else "\n") for _ in range(lines)
    )


def _code(rng: random.Random, lines: int) -> str:
    body = "".join("    " * rng.randint(0, 2) + f"x{i} = {i}" + " + y" * rng.randint(0, 6) + "\n" for i in range(lines))
    return f"```python\n{body}```\n"


def _document(rng: random.Random) -> str:
    parts = ["# Title\n\nIntro paragraph.\n"]
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["table", "list", "quote", "code", "para", "heading"])
        if kind == "table":
            parts.append(_table(rng, rng.randint(1, 60)))
        elif kind == "list":
            parts.append(_list(rng, rng.randint(1, 60)))
        elif kind == "quote":
            parts.append(_quote(rng, rng.randint(1, 30)))
        elif kind == "code":
            parts.append(_code(rng, rng.randint(1, 60)))
        elif kind == "heading":
            parts.append(f"{'#' * rng.randint(1, 3)} Heading {rng.randint(0, 99)}\n")
        else:
            parts.append("Some short text. " * rng.randint(1, 12) + "\n")
    return "\n".join(parts)


@pytest.mark.parametrize("seed", range(40))
def test_streamed_children_and_small_batches_change_no_chunk(monkeypatch, seed):
    rng = random.Random(seed)
    content = _document(rng)
    _compare(monkeypatch, content, _params(rng), TOK if seed % 2 else BYTES)


@pytest.mark.slow
@pytest.mark.parametrize("block", ["table", "list", "quote", "code"])
@pytest.mark.parametrize("tokenizer", [TOK, BYTES], ids=["cl100k", "bytes"])
@pytest.mark.parametrize("max_tokens", [8, 16, 64])
def test_each_kind_of_split_block(monkeypatch, block, tokenizer, max_tokens):
    rng = random.Random(max_tokens)
    body = {"table": _table, "list": _list, "quote": _quote, "code": _code}[block](rng, 80)
    content = "# A\n\n## B\n\n" + body + "\nafter\n"
    for params in (
        {"max_tokens": max_tokens},
        {"max_tokens": max_tokens, "min_preferred_tokens": 0},
        {"max_tokens": max_tokens, "overlap_tokens": max(1, max_tokens // 4), "target_tokens": max(2, max_tokens // 2)},
        {"max_tokens": max_tokens, "include_heading_path_in_embedding": False},
        {"max_tokens": max_tokens, "preserve_table_rows": False, "preserve_code_blocks": False},
    ):
        _compare(monkeypatch, content, params, tokenizer)


@pytest.mark.parametrize("header_rows", [0, 1, 2, 3, 5, 40])
@pytest.mark.parametrize("tokenizer", [TOK, BYTES], ids=["cl100k", "bytes"])
def test_hand_built_table_with_header_rows(monkeypatch, header_rows, tokenizer):
    """A table node built by hand (as the HTML or Docling normalizer may give): ``header_rows``
    header rows are found without indexing the children, and repeated in every later part."""
    rows = [f"| h{i} | head |" if i < header_rows else f"| row {i} | {i * 7} |" for i in range(40)]
    text = "before\n\n" + "\n".join(rows) + "\n\nafter\n"
    start = text.index("|")
    children, at = [], start
    for row in rows:
        children.append(Node("table_row", at, at + len(row)))
        at += len(row) + 1
    table = Node("table", start, at - 1, tuple(children), header_rows=header_rows)
    blocks = (Node("paragraph", 0, 6), table, Node("paragraph", text.index("after"), len(text) - 1))
    plain = NormalizedDocument(text=text, blocks=blocks, content_format="markdown")
    streamed = _stream_document(plain)
    for max_tokens in (8, 16, 24, 64):
        for overlap in (0, 2):
            packer = Packer(
                tokenizer=tokenizer,
                target_tokens=max_tokens,
                max_tokens=max_tokens,
                min_preferred_tokens=max_tokens // 4,
                overlap_tokens=overlap,
            )
            expected = packer.pack(plain)
            header = text[start : children[header_rows].start] if 0 < header_rows < 40 else None
            if header is not None and tokenizer.count(header) <= max_tokens // 2:
                parts = [c for c in expected if c.split == "table"]
                assert (
                    all(
                        c.context == "table_header" and c.spans[0] == (start, children[header_rows].start)
                        for c in parts[1:]
                    )
                    and len(parts) > 1
                )
            for batch in (1, 2, 3, 4096):
                with monkeypatch.context() as patch:
                    patch.setattr(limits, "TILE_BATCH", batch)
                    assert packer.pack(streamed) == expected
                    assert packer.pack(plain) == expected


class _Counted(Node):
    """A table row that counts how many rows are alive."""

    alive = 0
    most = 0

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _Counted.alive += 1
        _Counted.most = max(_Counted.most, _Counted.alive)

    def __del__(self) -> None:
        _Counted.alive -= 1


@pytest.mark.slow
def test_a_huge_block_is_never_held_whole(monkeypatch):
    """50 000 rows of a streamed table: at most about two batches of them are alive at a time."""
    rows = 50_000
    text = "| a | b |\n|---|---|\n" + "".join(f"| {i} | v |\n" for i in range(rows))
    starts = [0]
    for _ in range(rows + 1):
        starts.append(text.index("\n", starts[-1]) + 1)
    iterations = []

    def make():
        iterations.append(1)
        for i in range(rows + 1):
            yield _Counted("table_row", starts[i], starts[i + 1] - 1)

    table = Node("table", 0, len(text) - 1, StreamedChildren(make), header_rows=1)
    normalized = NormalizedDocument(text=text, blocks=(table,), content_format="markdown")
    monkeypatch.setattr(limits, "TILE_BATCH", 1000)
    monkeypatch.setattr(limits, "PART_CHARS", 4096)
    counters = []
    real_init = counting.TokenCounter.__init__
    monkeypatch.setattr(
        counting.TokenCounter, "__init__", lambda self, *a: counters.append(self) or real_init(self, *a)
    )
    _Counted.alive = _Counted.most = 0
    packer = Packer(tokenizer=BYTES, target_tokens=200, max_tokens=256, min_preferred_tokens=50)
    chunks = []
    most_parts = 0
    for chunk in packer.stream(normalized):
        chunks.append(chunk)
        most_parts = max(most_parts, sum(part is not None for part in counters[0]._parts))
    assert _Counted.most <= 2 * 1000 + 10, _Counted.most
    # The token ends behind the packer are dropped although the header (at 0) is repeated in
    # every part, and no part is encoded twice.
    assert len(counters[0]._parts) > 100 and most_parts <= 3 and counters[0].encoded_again == 0
    assert len(iterations) == 1  # read once
    assert all(c.context == "table_header" for c in chunks[1:])
    assert "".join(text[c.spans[-1][0] : c.spans[-1][1]] for c in chunks) == text


def test_a_huge_code_block_is_cut_at_its_lines_as_a_stream(monkeypatch):
    """The cuts of a code block's lines are found as they are taken (here: the same chunks, and
    the closing fence never a part of its own, with batches of every small size)."""
    body = "".join(f"v{i} = {i}\n" for i in range(3000))
    content = "```python\n" + body + "```\n"
    for batch in (1, 2, 3, 4096):
        with monkeypatch.context() as patch:
            patch.setattr(limits, "TILE_BATCH", batch)
            chunks = StructureAwareChunker(tokenizer=BYTES, max_tokens=64).chunk(
                Document(id="d", content=content, content_format="markdown"), tokenizer_identity=BYTES.identity
            )
        assert all(c.text.startswith("```python\n") for c in chunks)
        assert chunks[-1].text.endswith("```\n") and chunks[-1].text != "```python\n```\n"
        if batch == 1:
            first = [(c.text, c.metadata) for c in chunks]
        else:
            assert [(c.text, c.metadata) for c in chunks] == first


def test_lines_forget_stability_past_their_memo(monkeypatch):
    """``Lines`` keeps at most ``limits.STABLE_MEMO`` answers, and answers the same after forgetting."""
    monkeypatch.setattr(limits, "STABLE_MEMO", 8)
    text = "".join(("x\n" if i % 3 else "\u00a0\n") for i in range(100))
    lines = Lines(text)
    first = [lines.is_stable(p) for p in range(len(text) + 1)]
    assert len(lines._stable) <= 8
    assert [lines.is_stable(p) for p in range(len(text) + 1)] == first
    assert first == [Lines(text).is_stable(p) for p in range(len(text) + 1)]


@pytest.mark.slow
@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(
    md=markdown_doc(),
    max_tokens=st.sampled_from([8, 12, 20, 32, 64]),
    seed=st.integers(0, 10**6),
    use_bytes=st.booleans(),
)
def test_generated_markdown_streamed_gives_the_same_chunks(monkeypatch, md, max_tokens, seed, use_bytes):
    """Generated Markdown, every list, item, table and quote streamed, small batches: the chunks
    are those of the children held as tuples."""
    rng = random.Random(seed)
    params = _params(rng)
    params["max_tokens"] = max_tokens
    params["target_tokens"] = min(params["target_tokens"], max_tokens)
    params["min_preferred_tokens"] = min(params["min_preferred_tokens"], params["target_tokens"])
    if params.get("overlap_tokens", 0) >= params["target_tokens"]:
        params.pop("overlap_tokens")
    _compare(monkeypatch, md, params, BYTES if use_bytes else TOK)


def test_flattening_keeps_streamed_children_streamed():
    """``preserve_code_blocks=False`` rebuilds the tree: a streamed list stays streamed (never
    made a tuple), its code blocks turned into paragraphs as the children are read."""
    text = "- a\n\n  ```\n  x\n  ```\n- b\n"
    item_a = Node("list_item", 0, 20, (Node("code", 6, 20, fence="```"),))
    block = Node("list", 0, len(text) - 1, StreamedChildren(iter, (item_a, Node("list_item", 21, 24))), level=1)
    normalized = NormalizedDocument(text=text, blocks=(block,), content_format="markdown")
    flat = StructureAwareChunker(tokenizer=BYTES, preserve_code_blocks=False)._flatten(normalized)
    children = flat.blocks[0].children
    assert type(children) is StreamedChildren
    assert [[c.kind for c in item.children] for item in children] == [["paragraph"], []]
    assert [[c.kind for c in item.children] for item in children] == [["paragraph"], []]  # re-made


@pytest.mark.slow
def test_a_huge_list_leaves_as_it_is_packed_with_merges(monkeypatch):
    """With merges on (the defaults), the parts of a huge list come out while it is being read:
    two neighbours both at least ``min_preferred_tokens`` are never merged, so the chunks
    before them are final. Their fields are those of packing it all at once, held as a tuple."""
    items = 20_000
    text = "".join(f"- item {i}\n" for i in range(items))
    starts = [0]
    for _ in range(items):
        starts.append(text.index("\n", starts[-1]) + 1)
    made = []

    def make():
        for i in range(items):
            made.append(i)
            yield Node("list_item", starts[i], starts[i + 1] - 1)

    def document(children):
        return NormalizedDocument(
            text=text, blocks=(Node("list", 0, len(text) - 1, children, level=1),), content_format="markdown"
        )

    monkeypatch.setattr(limits, "TILE_BATCH", 500)
    packer = Packer(tokenizer=TOK, target_tokens=100, max_tokens=128, min_preferred_tokens=50)
    stream = packer.stream(document(StreamedChildren(make)))
    first = next(stream)
    assert len(made) <= 2 * 500
    chunks = [first, *stream]
    assert chunks == packer.pack(document(tuple(make())))


# -- top-level blocks as a stream ----------------------------------------------------------------


class _Alive(Node):
    """A top-level block that counts how many of its kind are alive (the most at a time, too)."""

    alive = 0
    most = 0

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _Alive.alive += 1
        _Alive.most = max(_Alive.most, _Alive.alive)

    def __del__(self) -> None:
        _Alive.alive -= 1


def _sections_text(count: int, *, nested: bool = False) -> tuple[str, list[tuple[str, int, int, int]]]:
    """``"# T{i}\\n- a\\n"`` sections (with ``nested``: ``"## T{i}"`` under one ``"# Top"``), and their
    blocks as ``(kind, start, end, level)``."""
    parts, blocks, at = [], [], 0
    if nested:
        parts.append("# Top\n")
        blocks.append(("heading", 0, 5, 1))
        at = 6
    for i in range(count):
        heading = ("## T" if nested else "# T") + str(i)
        parts.append(heading + "\n- a\n")
        blocks.append(("heading", at, at + len(heading), 2 if nested else 1))
        at += len(heading) + 1
        blocks.append(("list", at, at + 3, 1))
        at += 4
    return "".join(parts), blocks


def test_iter_sections_gives_each_top_level_section_once_the_next_heading_is_read():
    from transforms.structure.tree import build_sections, iter_sections

    text, specs = _sections_text(5)
    blocks = [Node(kind, s, e, level=level, title=text[s:e].lstrip("# ")) for kind, s, e, level in specs]
    read: list[int] = []

    def reading():
        for i, block in enumerate(blocks):
            read.append(i)
            yield block

    sections = iter_sections(reading())
    first = next(sections)
    assert (first.kind, first.title, [c.kind for c in first.children]) == ("section", "T0", ["heading", "list"])
    assert read == [0, 1, 2]  # the next top-level heading, and nothing after it
    assert (first, *sections) == build_sections(blocks)
    assert build_sections([Node("paragraph", 0, 3), *blocks]) == (Node("paragraph", 0, 3), *build_sections(blocks))


@pytest.mark.slow
@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("resumable", [False, True])
def test_top_level_blocks_streamed_are_packed_without_holding_them(monkeypatch, nested, resumable):
    """3,000 one-item sections whose top-level blocks come as a ``StreamedChildren``: the packer
    reads them once, holds a few at a time, and cuts exactly as with the blocks held as a tuple.
    Nested under one top-level section, they are held whole, unless the blocks can be read again
    from a heading (``streamed_document(..., resumable=True)``, as the normalizers of long
    documents give them): then a section of more than ``HELD_SECTION_NODES`` nodes (64 here) is
    read through to its end, then again from its heading as the packer takes its children."""
    from transforms.structure import tree
    from transforms.structure.tree import streamed_document

    monkeypatch.setattr(tree, "HELD_SECTION_NODES", 64)
    text, specs = _sections_text(3000, nested=nested)
    iterations = []

    def make(notes=None, resume=None):
        iterations.append(resume)
        for i, (kind, s, e, level) in enumerate(specs):
            if resume is not None and i < resume:
                continue
            node = _Alive(kind, s, e, level=level, title=text[s:e].lstrip("# ") if kind == "heading" else "")
            yield (i if kind == "heading" else None), node

    packer = Packer(tokenizer=TOK, target_tokens=40, max_tokens=64, min_preferred_tokens=10)
    held = NormalizedDocument(text=text, blocks=tuple(node for _, node in make()), content_format="markdown")
    expected = packer.pack(held)
    del held
    gc.collect()
    assert _Alive.alive == 0
    _Alive.most = 0
    iterations.clear()
    if resumable:
        streamed = streamed_document(text, make, content_format="markdown", resumable=True)
    else:
        streamed = NormalizedDocument(
            text=text, blocks=StreamedChildren(lambda: (n for _, n in make())), content_format="markdown"
        )
    chunks = list(packer.stream(streamed))
    assert chunks == expected
    if nested and not resumable:
        assert _Alive.most >= len(specs) and len(iterations) == 1  # held whole
    else:
        assert _Alive.most <= 2 * 64 + 20, _Alive.most
        # Nested: one pass, and one again from the top section's heading (line 0).
        assert iterations == ([None, 0] if nested else [None])


def _traced_peak(make_chunks) -> int:
    """The most bytes traced (``tracemalloc``) while every chunk of ``make_chunks()`` is taken one at a time."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        for _ in make_chunks():
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
@pytest.mark.parametrize(
    "content_format, lead, unit",
    [
        ("markdown", "", "# T\n- a\n"),
        ("markdown", "", "para graph\n\n"),
        ("rst", "", "T\n=\n\n- a\n\n"),
        ("markdown", "# Top\n", "## T\n- a\n"),
        ("rst", "Top\n===\n\n", "T\n-\n\n- a\n\n"),
        ("html", "<h1>Top</h1>", "<h2>T</h2><ul><li>a</li></ul>"),
    ],
)
def test_memory_does_not_follow_the_number_of_top_level_blocks(monkeypatch, content_format, lead, unit):
    """A document of many small top-level blocks, read in windows (sizes forced small): the
    chunker's peak for 8 times the blocks stays under twice the peak for the smaller one (holding
    every block, section and heading path costs about 140 bytes a character for Markdown
    sections: 5 to 6 times the smaller peak here), also when all of them are nested in one top-level
    section (read again from its heading). The chunks are those of the whole parse (windows off).
    HTML is rendered whole before it is packed: there the growth per unit is bounded instead."""
    from transforms.structure import tree
    from transforms.structure.normalizers import html, markdown, rst

    # (min_preferred_tokens well under the target, as by default: a run of chunks all under it
    # is held until it ends, to be merged)
    chunker = StructureAwareChunker(tokenizer=BYTES, max_tokens=64, min_preferred_tokens=16)

    def chunks(content: str):
        document = Document(id="d", content=content, content_format=content_format)
        return chunker.stream_with_source(document, tokenizer_identity=BYTES.identity)[0]

    small, large = lead + unit * 3000, lead + unit * 24000
    whole = [(c.text, c.metadata) for c in chunks(small)]
    monkeypatch.setattr(markdown, "WINDOW_CHARS", 4096)
    monkeypatch.setattr(markdown, "WINDOW_LINES", 256)
    monkeypatch.setattr(rst, "LARGE_CHARS", 4096)
    monkeypatch.setattr(rst, "PAGE_CHARS", 4096)
    monkeypatch.setattr(html, "STREAM_DOCUMENT_CHARS", 4096)
    monkeypatch.setattr(tree, "HELD_SECTION_NODES", 512)
    # (and the packer's own bounded memos and batches, so that the small document fills them)
    monkeypatch.setattr(limits, "PART_CHARS", 4096)
    monkeypatch.setattr(limits, "STABLE_MEMO", 1024)
    monkeypatch.setattr(limits, "TILE_BATCH", 256)
    assert [(c.text, c.metadata) for c in chunks(small)] == whole
    peaks = [_traced_peak(partial(chunks, content)) for content in (small, large)]
    if content_format == "html":
        # The rendering must be whole before packing: the top-level blocks are kept as compact
        # records (12 bytes a node) beside it, about 56 bytes a unit here (holding nodes would take over 500).
        assert (peaks[1] - peaks[0]) / 21000 < 80, peaks
    else:
        assert peaks[1] < 2 * peaks[0], peaks
