"""StructureAwareChunker's packer gives the same chunks when it packs a long line a part at a time.

The packer (``transforms.structure.packing``) encodes a long text a part at a time, cut inside a
line where the tokenizer says its encoding cannot change (``part_cut``), rejects a huge tile
from a lower bound on its count without encoding it (``max_token_chars``), and hands chunks out
from inside a section once no merge can change them (``PackingRun._release``). None of this may change
a single chunk. The oracle here is the same packer on the unchanged path: a tokenizer without
``part_cut`` and ``max_token_chars`` (parts cut at line starts only, no lower bound), the whole
text one part (``limits.PART_CHARS`` as shipped), and no chunk handed out before its top-level section
ends. The documents are the hard cases: long lines of one pre-token (letters, digits, punctuation, emoji,
CJK, combining marks, RTL), rare safe cuts, ``\\r\\n`` and lone ``\\r``, U+2028, NBSP, tabs, lone
surrogates, tables with huge cells, code blocks with long lines, nested lists and quotes,
headings everywhere and sections of tiny mergeable paragraphs. Every chunk field is compared,
and the packer's own counts.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transforms.chunkers import StructureAwareChunker, structure
from transforms.documents import Document
from transforms.structure.packing import limits
from transforms.structure.packing.packer import PackingRun
from transforms.tokenizers import TiktokenTokenizer, Utf8ByteTokenizer

TOK = TiktokenTokenizer("cl100k_base")
BYTES = Utf8ByteTokenizer()


class _Plain:
    """A tokenizer as the packer saw one before: no ``part_cut``, no ``max_token_chars``."""

    def __init__(self, inner) -> None:
        self.identity = inner.identity
        self.count, self.token_ends, self.boundaries = inner.count, inner.token_ends, inner.boundaries


def _run(chunker, content: str, content_format: str, identity: str):
    """Every field of every chunk, and every field of the packer's chunks (its own counts)."""
    packed: list = []
    real = structure._piece

    def spy(source, verbatim_source, chunk):
        packed.append(dict(vars(chunk)))
        return real(source, verbatim_source, chunk)

    structure._piece = spy
    try:
        document = Document(id="d", content=content, content_format=content_format, metadata={"m": 1})
        chunks = [dict(vars(c)) for c in chunker.chunk(document, tokenizer_identity=identity)]
    finally:
        structure._piece = real
    return chunks, packed


def _compare(monkeypatch, content: str, content_format: str, budget, params: dict, part_chars: int) -> None:
    """The packer with its parts of ``part_chars`` code points gives the unchanged path's chunks."""
    with monkeypatch.context() as unchanged:
        unchanged.setattr(PackingRun, "_release", lambda self: [])
        expected = _run(
            StructureAwareChunker(tokenizer=_Plain(budget), **params), content, content_format, budget.identity
        )
    with monkeypatch.context() as parts:
        parts.setattr(limits, "PART_CHARS", part_chars)
        got = _run(StructureAwareChunker(tokenizer=budget, **params), content, content_format, budget.identity)
    assert got == expected


_FRAGMENTS = [
    "a" * 700,
    "é" * 300,
    "1" * 500,
    "-" * 400,
    "😀" * 200,
    "中文字符" * 80,
    "e\u0301" * 150,
    "שלום مرحبا" * 30,
    " " * 300,
    "\t" * 100,
    "\u00a0" * 50,
    "\u2028",
    "\ud800",
    "\udc00x",
    "word ",
    "two words. ",
    "don't ",
    "x" * 40 + " ",
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    "\r\n\r\n",
    "\n \n",
    "# Heading\n",
    "## Sub\n\n",
    "Setext\n===\n",
    "- item\n",
    "  - nested item\n",
    "> quote\n",
    ">> deeper\n",
    "```\n",
    "```python\n",
    "~~~\n",
    "| a | b |\n|---|---|\n",
    "| " + "c" * 300 + " | d |\n",
    "1. one\n",
    "p1\n\np2\n\np3\n\n",
]


@st.composite
def _documents(draw):
    pieces = draw(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=30))
    return "".join(pieces)


@st.composite
def _params(draw):
    max_tokens = draw(st.sampled_from([1, 2, 3, 5, 8, 16, 32, 64, 128]))
    target = draw(st.integers(1, max_tokens))
    params = {"max_tokens": max_tokens, "target_tokens": target, "min_preferred_tokens": draw(st.integers(0, target))}
    if target > 1 and draw(st.booleans()):
        params["overlap_tokens"] = draw(st.integers(1, min(50, target - 1)))
    for flag in (
        "merge_small_sections",
        "allow_cross_top_level_merge",
        "preserve_code_blocks",
        "preserve_table_rows",
        "include_heading_path_in_embedding",
    ):
        params[flag] = draw(st.booleans())
    return params


@pytest.mark.slow
@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(
    content=_documents(),
    content_format=st.sampled_from(["markdown", "text", "rst", "html"]),
    bytes_budget=st.booleans(),
    params=_params(),
    part_chars=st.sampled_from([1, 5, 64, 333]),
)
def test_parts_lower_bound_and_early_release_change_no_chunk(
    monkeypatch, content, content_format, bytes_budget, params, part_chars
):
    _compare(monkeypatch, content, content_format, BYTES if bytes_budget else TOK, params, part_chars)


def _words(n: int, seed: int = 1) -> str:
    import random

    rng = random.Random(seed)
    return " ".join("".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 9))) for _ in range(n))


# Named hard documents, each packed with parts far smaller than its long lines.
_HARD_DOCUMENTS = {
    "rare_safe_cuts": ("z" * 997 + " ") * 6,
    "no_safe_cut_in_line": "Intro.\n\n" + "中文字符" * 700 + "\n\nafter\n",
    "one_letter_run": "a" * 5000 + "\n\nb\n",
    "emoji_combining_rtl": ("😀e\u0301שלום" + "مرحبا ") * 300,
    "lone_cr": ("line " * 200 + "\r") * 5 + "# H\r\r" + "x " * 600,
    "crlf_code": "# C\r\n\r\n```python\r\n" + ("y" * 1500 + "\r\n") * 3 + "```\r\n",
    "u2028_nbsp_tabs": ("w\u2028" * 100 + "\u00a0" * 40 + "\t" * 40 + " v") * 8,
    "lone_surrogates": "# H\n\n" + "\ud800x\udc00 " * 500,
    "table_huge_cells": "| a | b |\n|---|---|\n" + "".join(f"| {_words(200 + 40 * i, i)} | d |\n" for i in range(6)),
    "code_long_lines": "```\n" + "".join(_words(400, i) + "\n" for i in range(4)) + "```\n\ntail\n",
    "nested_lists_quotes": "".join(
        "  " * (i % 4) + "- " + "> " * (i % 3) + _words(30 + i, i) + "\n" for i in range(20)
    ),
    "tiny_paragraphs": "# T\n\n"
    + "\n\n".join(f"p{i}" for i in range(300))
    + "\n\n"
    + _words(900)
    + "\n\n"
    + "\n\n".join(f"q{i}" for i in range(300)),
    "headings_everywhere": "".join(f"{'#' * (1 + i % 6)} h{i}\n{_words(i % 50, i)}\n" for i in range(120)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_HARD_DOCUMENTS))
@pytest.mark.parametrize("budget", ["tiktoken", "utf8"])
@pytest.mark.parametrize(
    "params",
    [
        {"max_tokens": 3, "target_tokens": 2, "min_preferred_tokens": 1},
        {"max_tokens": 64, "target_tokens": 48, "min_preferred_tokens": 20},
        {"max_tokens": 64, "target_tokens": 48, "overlap_tokens": 12},
        {"max_tokens": 512, "allow_cross_top_level_merge": True},
    ],
)
def test_hard_documents_keep_their_chunks_when_packed_a_part_at_a_time(monkeypatch, name, budget, params):
    _compare(monkeypatch, _HARD_DOCUMENTS[name], "markdown", TOK if budget == "tiktoken" else BYTES, params, 97)


@pytest.mark.parametrize("slack", [-2, -1, 0, 1, 2])
def test_a_tile_whose_lower_bound_is_exactly_the_budget(monkeypatch, slack):
    """The fit test's lower bound (``max_token_chars`` code points a token) decides nothing it
    should not: cl100k_base's longest token is 128 spaces, so a code line of 128 * k spaces holds
    k tokens of 128 code points, where the bound is tight; UTF-8 bytes of ASCII are tight always."""
    assert TOK.max_token_chars == 128
    k = 6
    code = "```\n" + " " * (128 * k) + "x\n```\n"
    tile = len(code)
    assert TOK.count(" " * (128 * k)) == k
    for budget, limit in ((TOK, tile // 128 + slack), (BYTES, tile + slack)):
        limit = max(limit, 1)
        _compare(
            monkeypatch,
            "intro\n\n" + code + "\nafter\n",
            "markdown",
            budget,
            {"max_tokens": limit, "target_tokens": limit, "min_preferred_tokens": 0},
            64,
        )
        _compare(
            monkeypatch,
            "intro\n\n" + code + "\nafter\n",
            "markdown",
            budget,
            {"max_tokens": limit + 8, "target_tokens": limit, "min_preferred_tokens": limit},
            64,
        )
