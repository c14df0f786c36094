"""DoclingChunker: docling-core's HierarchicalChunker / HybridChunker behind our Chunker contract."""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Callable

import pytest

from transforms.chunkers.base import ChunkingError
from transforms.chunkers.docling import DoclingChunker
from transforms.documents import Document
from transforms.tokenizers import TiktokenTokenizer, Utf8ByteTokenizer

docling_doc = pytest.importorskip("docling_core.types.doc")
DoclingDocument = docling_doc.DoclingDocument
DocItemLabel = docling_doc.DocItemLabel
SectionHeaderItem = docling_doc.SectionHeaderItem
TableCell = docling_doc.TableCell
TableData = docling_doc.TableData
TitleItem = docling_doc.TitleItem

# Quick with HybridChunker (< 0.5 s each): a DOCX, an HTML page, and a PDF paper with tables.
REAL_DOCS = ("word_sample.docx.json", "wiki_duck.html.json", "2206.01062.json")
BUDGET = 512


@pytest.fixture(scope="module")
def tok(tokenizer) -> TiktokenTokenizer:
    """conftest's session-wide cl100k_base TiktokenTokenizer."""
    assert isinstance(tokenizer, TiktokenTokenizer)
    return tokenizer


def _docling(name: str, content: str) -> Document:
    return Document(id=name, content=content, content_format="docling")


@pytest.fixture(scope="module")
def corpus_doc(shared_data) -> Callable[[str], Document]:
    """A document of the shared Docling corpus by file name (the test skips when it is absent)."""

    def load(name: str) -> Document:
        return _docling(name, shared_data(f"docling_corpus/{name}").read_text(encoding="utf-8"))

    return load


@pytest.fixture(scope="module")
def hybrid_chunks(tok, corpus_doc):
    """Chunks of each real document with the hybrid chunker at BUDGET tokens, computed once."""
    chunker = DoclingChunker(chunker="hybrid", max_tokens=BUDGET, tokenizer=tok)
    return {name: chunker.chunk(corpus_doc(name), tokenizer_identity=tok.identity) for name in REAL_DOCS}


# ---------------------------------------------------------------------------------------------
# Real documents
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL_DOCS)
def test_hybrid_chunks_fit_the_budget(name, tok, hybrid_chunks):
    chunks = hybrid_chunks[name]
    assert len(chunks) > 1
    over = [(c.chunk_index, tok.count(c.embedding_text)) for c in chunks if tok.count(c.embedding_text) > BUDGET]
    # Measured on docling-core 2.104: HybridChunker never overshoots on these documents.
    assert over == []
    assert all(c.text.strip() for c in chunks)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wiki_duck.html.json", "2206.01062.json"])
def test_hierarchical_has_no_budget_so_hybrid_really_splits(name, tok, corpus_doc):
    chunks = DoclingChunker(chunker="hierarchical").chunk(corpus_doc(name), tokenizer_identity=tok.identity)
    assert max(tok.count(c.embedding_text) for c in chunks) > BUDGET


def _last_heading_before(doc) -> dict[str, str | None]:
    """For every item's self_ref, the text of the nearest title or section header before it.

    A caption is placed where the table or picture it captions is: the chunkers serialize it
    there, though the JSON may keep it elsewhere (wiki_duck's picture captions sit at the end of
    the body).
    """
    last: str | None = None
    out: dict[str, str | None] = {}
    for item, _level in doc.iterate_items(with_groups=True, traverse_pictures=True):
        if isinstance(item, (TitleItem, SectionHeaderItem)):
            last = item.text
        out[item.self_ref] = last
    for floating in (*doc.tables, *doc.pictures):
        if floating.self_ref in out:  # not in a furniture layer
            for caption in floating.captions:
                out[caption.cref] = out[floating.self_ref]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL_DOCS)
def test_headings_are_the_path_to_the_nearest_heading(name, hybrid_chunks, corpus_doc):
    doc = DoclingDocument.model_validate_json(corpus_doc(name).content)
    nearest = _last_heading_before(doc)
    chunks = hybrid_chunks[name]
    for chunk in chunks:
        expected = nearest[chunk.metadata["doc_items"][0]]
        if expected is None:
            assert chunk.headings == ()
        else:
            assert chunk.headings and chunk.headings[-1] == expected
    assert sum(1 for c in chunks if c.headings) >= len(chunks) - 1


@pytest.mark.slow
def test_page_no_comes_from_pdf_provenance(hybrid_chunks, corpus_doc):
    doc = DoclingDocument.model_validate_json(corpus_doc("2206.01062.json").content)
    chunks = hybrid_chunks["2206.01062.json"]
    refs = {item.self_ref: item for item, _ in doc.iterate_items(with_groups=False, traverse_pictures=True)}
    for chunk in chunks:
        first_with_prov = next(refs[r] for r in chunk.metadata["doc_items"] if refs[r].prov)
        assert chunk.page_no == first_with_prov.prov[0].page_no
    assert len({c.page_no for c in chunks}) > 3  # a multi-page paper


@pytest.mark.slow
@pytest.mark.parametrize("name", ["word_sample.docx.json", "wiki_duck.html.json"])
def test_page_no_is_none_without_pages(name, hybrid_chunks):
    assert {c.page_no for c in hybrid_chunks[name]} == {None}


@pytest.mark.slow
def test_metadata_refs_and_captions_are_json(hybrid_chunks):
    chunks = hybrid_chunks["2206.01062.json"]
    for chunk in chunks:
        json.dumps(chunk.metadata)
        refs = chunk.metadata["doc_items"]
        assert refs and all(re.fullmatch(r"#/(texts|tables|pictures|groups)/\d+", r) for r in refs)
        assert len(refs) == len(set(refs))
    # HybridChunker hands back table items as bare DocItems; captions still resolve via self_ref.
    table_chunks = [c for c in chunks if "#/tables/0" in c.metadata["doc_items"]]
    assert table_chunks
    assert all(c.metadata["captions"][0].startswith("Table 1:") for c in table_chunks)
    assert all(c.content_format == "text" and c.start_offset is None and c.end_offset is None for c in chunks)


def test_chunk_ids_are_deterministic(tok, corpus_doc):
    document = corpus_doc("word_sample.docx.json")
    first = DoclingChunker(max_tokens=BUDGET, tokenizer=tok).chunk(document, tokenizer_identity=tok.identity)
    chunker = DoclingChunker(max_tokens=BUDGET, tokenizer=tok)
    second = chunker.chunk(document, tokenizer_identity=tok.identity)
    third = chunker.chunk(document, tokenizer_identity=tok.identity)
    assert [c.chunk_id for c in first] == [c.chunk_id for c in second] == [c.chunk_id for c in third]
    assert first == second == third
    assert len({c.chunk_id for c in first}) == len(first)


# ---------------------------------------------------------------------------------------------
# A small hand-built document with exact expected chunks
# ---------------------------------------------------------------------------------------------


def _duck_document() -> Document:
    doc = DoclingDocument(name="ducks")
    doc.add_title("Ducks")  # texts/0
    doc.add_text(DocItemLabel.PARAGRAPH, "Ducks are water birds.")  # texts/1
    doc.add_heading("Diet", level=1)  # texts/2
    doc.add_text(DocItemLabel.PARAGRAPH, "They eat plants and insects.")  # texts/3
    group = doc.add_list_group()
    doc.add_list_item("seeds", parent=group)  # texts/4
    doc.add_list_item("snails", parent=group)  # texts/5
    doc.add_heading("Species", level=1)  # texts/6
    rows = [["Name", "Weight"], ["Mallard", "1.1 kg"], ["Teal", "0.3 kg"]]
    cells = [
        TableCell(
            text=value,
            start_row_offset_idx=r,
            end_row_offset_idx=r + 1,
            start_col_offset_idx=c,
            end_col_offset_idx=c + 1,
            column_header=r == 0,
        )
        for r, row in enumerate(rows)
        for c, value in enumerate(row)
    ]
    table = doc.add_table(data=TableData(num_rows=3, num_cols=2, table_cells=cells))  # tables/0
    caption = doc.add_text(DocItemLabel.CAPTION, "Table 1: Duck weights.", parent=table)  # texts/7
    table.captions.append(caption.get_ref())
    return _docling("ducks", doc.model_dump_json())


TABLE_TEXT = "Table 1: Duck weights.\n\nMallard, Weight = 1.1 kg. Teal, Weight = 0.3 kg"
TABLE_META = {"doc_items": ["#/texts/7", "#/tables/0"], "captions": ["Table 1: Duck weights."]}
HIERARCHICAL = [
    ("Ducks are water birds.", ("Ducks",), {"doc_items": ["#/texts/1"]}),
    ("They eat plants and insects.", ("Ducks", "Diet"), {"doc_items": ["#/texts/3"]}),
    ("- seeds\n- snails", ("Ducks", "Diet"), {"doc_items": ["#/texts/4", "#/texts/5"]}),
    (TABLE_TEXT, ("Ducks", "Species"), TABLE_META),
]


def _shape(chunks):
    return [(c.text, c.headings, c.metadata) for c in chunks]


def test_hand_built_hierarchical(tok):
    chunks = DoclingChunker(chunker="hierarchical").chunk(_duck_document(), tokenizer_identity=tok.identity)
    assert _shape(chunks) == HIERARCHICAL
    assert [c.embedding_text for c in chunks] == ["\n".join((*h, t)) for t, h, _ in HIERARCHICAL]
    assert {c.page_no for c in chunks} == {None}


def test_hand_built_hybrid_merges_peers_under_the_same_headings(tok):
    chunks = DoclingChunker(max_tokens=BUDGET, tokenizer=tok).chunk(_duck_document(), tokenizer_identity="t")
    assert _shape(chunks) == [
        HIERARCHICAL[0],
        (
            "They eat plants and insects.\n- seeds\n- snails",
            ("Ducks", "Diet"),
            {"doc_items": ["#/texts/3", "#/texts/4", "#/texts/5"]},
        ),
        HIERARCHICAL[3],
    ]
    assert chunks[1].embedding_text == "Ducks\nDiet\nThey eat plants and insects.\n- seeds\n- snails"


def test_hand_built_hybrid_without_merging_or_context(tok):
    chunks = DoclingChunker(max_tokens=BUDGET, merge_peers=False, contextualize=False, tokenizer=tok).chunk(
        _duck_document(), tokenizer_identity="t"
    )
    assert _shape(chunks) == HIERARCHICAL
    assert [c.embedding_text for c in chunks] == [t for t, _, _ in HIERARCHICAL]


def test_hand_built_hybrid_small_budget_cuts_the_table_as_plain_text(tok):
    chunks = DoclingChunker(max_tokens=16, tokenizer=tok).chunk(_duck_document(), tokenizer_identity="t")
    assert _shape(chunks) == [
        HIERARCHICAL[0],
        ("They eat plants and insects.", ("Ducks", "Diet"), {"doc_items": ["#/texts/3"]}),
        ("- seeds\n- snails", ("Ducks", "Diet"), {"doc_items": ["#/texts/4", "#/texts/5"]}),
        # docling-core joins the (empty) caption-item window and the first table piece with "\n".
        ("\nTable 1: Duck weights.\nMallard,", ("Ducks", "Species"), TABLE_META),
        ("Weight = 1.1 kg.", ("Ducks", "Species"), {**TABLE_META, "doc_items": ["#/tables/0"]}),
        ("Teal, Weight = 0.3 kg", ("Ducks", "Species"), {**TABLE_META, "doc_items": ["#/tables/0"]}),
    ]
    assert all(tok.count(c.embedding_text) <= 16 for c in chunks)
    assert not any("| - |" in c.text for c in chunks)  # no fake Markdown table header


# ---------------------------------------------------------------------------------------------
# Refused documents
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reason", "detail"),
    [
        ("{not json", "invalid_docling_json", "Invalid JSON"),
        ('{"title": "not a DoclingDocument"}', "invalid_docling_json", "name: Field required"),
        ("[1, 2]", "invalid_docling_json", "Input should be an object"),
        (DoclingDocument(name="empty").model_dump_json(), "empty_document", "has no items"),
    ],
)
@pytest.mark.parametrize("kind", ["hybrid", "hierarchical"])
def test_bad_content_is_refused_with_its_reason(content, reason, detail, kind, tok):
    chunker = DoclingChunker(chunker=kind, tokenizer=tok)
    with pytest.raises(ChunkingError) as info:
        chunker.chunk(_docling("bad", content), tokenizer_identity=tok.identity)
    assert info.value.reason == reason
    assert detail in info.value.detail
    assert "\n" not in info.value.detail and len(info.value.detail) <= 200


def test_error_detail_is_truncated(tok):
    content = '{"name": 1' + "x" * 1000
    with pytest.raises(ChunkingError) as info:
        DoclingChunker(tokenizer=tok).chunk(_docling("bad", content), tokenizer_identity="t")
    assert info.value.reason == "invalid_docling_json"
    assert len(info.value.detail) <= 200


def test_headings_only_document_is_empty(tok):
    doc = DoclingDocument(name="headings")
    doc.add_heading("Only a heading")
    with pytest.raises(ChunkingError) as info:
        DoclingChunker(tokenizer=tok).chunk(_docling("h", doc.model_dump_json()), tokenizer_identity="t")
    assert info.value.reason == "empty_document"
    assert "1 item(s)" in info.value.detail


def test_other_content_formats_are_refused(tok):
    document = Document(id="t", content="Plain text.", content_format="text")
    with pytest.raises(ChunkingError) as info:
        DoclingChunker(tokenizer=tok).chunk(document, tokenizer_identity=tok.identity)
    assert info.value.reason == "unsupported_content_format"


def test_budget_below_one_character_is_a_chunker_error():
    # A duck emoji is 4 UTF-8 bytes; with a 3-byte budget semchunk 3.2.5 recurses without end.
    doc = DoclingDocument(name="emoji")
    doc.add_text(DocItemLabel.PARAGRAPH, "\U0001f986" * 4)
    chunker = DoclingChunker(max_tokens=3, tokenizer=Utf8ByteTokenizer())
    with pytest.raises(ChunkingError) as info:
        chunker.chunk(_docling("e", doc.model_dump_json()), tokenizer_identity="utf8-bytes:v1")
    assert info.value.reason == "chunker_error"
    assert "max_tokens=3" in info.value.detail


# ---------------------------------------------------------------------------------------------
# Special-token spellings, the token counter and the docling chunker's lifetime
# ---------------------------------------------------------------------------------------------


def test_endoftext_literal_is_ordinary_text(tok):
    text = "Before <|endoftext|> after, " * 20
    doc = DoclingDocument(name="special")
    doc.add_text(DocItemLabel.PARAGRAPH, text.strip())
    document = _docling("s", doc.model_dump_json())
    # docling's own OpenAITokenizer encodes with special tokens disallowed and would raise here.
    with pytest.raises(ValueError):
        tok.encoding.encode(text)
    chunks = DoclingChunker(max_tokens=32, tokenizer=tok).chunk(document, tokenizer_identity="t")
    assert len(chunks) > 1  # semchunk did the cutting, through our counter
    assert all(tok.count(c.embedding_text) <= 32 for c in chunks)
    assert " ".join(c.text for c in chunks).split() == text.split()


def test_docling_chunker_is_built_once_and_semchunk_memo_is_freed(tok, monkeypatch):
    import semchunk.semchunk as semchunk_module

    import transforms.chunkers.docling as module

    built = []
    real = module._docling().HybridChunker

    def counting(**kwargs):
        built.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(module._docling(), "HybridChunker", counting)
    chunker = DoclingChunker(max_tokens=32, tokenizer=tok)
    document = _duck_document()
    chunker.chunk(document, tokenizer_identity="t")
    chunker.chunk(document, tokenizer_identity="t")
    assert len(built) == 1
    assert chunker._docling_chunker.tokenizer.get_tokenizer() == tok.count
    assert tok.count not in semchunk_module._memoized_token_counters


def test_pickles_without_the_built_docling_chunker(tok):
    chunker = DoclingChunker(max_tokens=64, tokenizer=tok)
    document = _duck_document()
    before = chunker.chunk(document, tokenizer_identity="t")
    clone = pickle.loads(pickle.dumps(chunker))
    assert "_docling_chunker" not in vars(clone)
    assert clone.chunk(document, tokenizer_identity="t") == before


# ---------------------------------------------------------------------------------------------
# Construction and configuration
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunker": "semantic"}, "chunker must be one of ('hybrid', 'hierarchical'), got 'semantic'"),
        ({"max_tokens": 0}, "max_tokens must be a positive integer, got 0"),
        ({"max_tokens": -5}, "max_tokens must be a positive integer, got -5"),
        ({"max_tokens": 1.5}, "max_tokens must be a positive integer, got 1.5"),
        ({"max_tokens": True}, "max_tokens must be a positive integer, got True"),
        ({"merge_peers": "yes"}, "merge_peers must be a bool, got 'yes'"),
        ({"contextualize": 1}, "contextualize must be a bool, got 1"),
        ({"tokenizer": None}, "chunker='hybrid' needs a tokenizer, got None"),
        ({"tokenizer": "cl100k_base"}, "tokenizer must implement transforms.tokenizers.Tokenizer, got 'cl100k_base'"),
    ],
)
def test_constructor_rejects_bad_values(kwargs, message, tok):
    params = {"tokenizer": tok, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        DoclingChunker(**params)


def test_hierarchical_needs_no_tokenizer_and_ignores_one(tok):
    assert DoclingChunker(chunker="hierarchical").tokenizer is None
    chunker = DoclingChunker(chunker="hierarchical", tokenizer=tok)
    assert chunker.tokenizer is None
    assert "tokenizer" not in chunker.config()


def test_to_dict_round_trip_and_config(tok):
    chunker = DoclingChunker(chunker="hybrid", max_tokens=256, merge_peers=False, contextualize=False, tokenizer=tok)
    assert chunker.to_dict() == {
        "chunker": "hybrid",
        "max_tokens": 256,
        "merge_peers": False,
        "contextualize": False,
    }
    assert chunker.config() == {**chunker.to_dict(), "tokenizer": tok.identity}
    clone = DoclingChunker.from_dict(chunker.to_dict(), tokenizer=tok)
    assert clone.config_hash == chunker.config_hash
    assert DoclingChunker.accepted_content_formats == frozenset({"docling"})
    assert DoclingChunker.content_format == "text"


def test_config_hash_tracks_the_configuration(tok):
    def h(**kwargs):
        return DoclingChunker(**{"tokenizer": tok, **kwargs}).config_hash

    assert h(max_tokens=512) == h(max_tokens=512)
    assert h(max_tokens=512) != h(max_tokens=256)
    assert h(chunker="hybrid") != h(chunker="hierarchical")
    assert h(merge_peers=True) != h(merge_peers=False)
    assert h(contextualize=True) != h(contextualize=False)
    assert h(max_tokens=512) != DoclingChunker(max_tokens=512, tokenizer=Utf8ByteTokenizer()).config_hash
    assert re.fullmatch(r"[0-9a-f]{64}", h())


def test_hierarchical_config_hash_ignores_budget_parameters(tok):
    def h(**kwargs):
        return DoclingChunker(chunker="hierarchical", **kwargs).config_hash

    assert h(max_tokens=512) == h(max_tokens=256) == h(merge_peers=False)
    assert h() != h(contextualize=False)
    assert DoclingChunker(chunker="hierarchical").config() == {"chunker": "hierarchical", "contextualize": True}


# ---------------------------------------------------------------------------------------------
# Start-up cost
# ---------------------------------------------------------------------------------------------

_LAZY_IMPORT_PROBE = r"""
import json, sys, tempfile
from pathlib import Path

HEAVY = ("docling_core.transforms.chunker", "transformers", "torch", "semchunk")
loaded = lambda: sorted(m for m in HEAVY if m in sys.modules)  # noqa: E731

from pipelines.rechunk import parse_job
from transforms.beam.chunk import _ChunkDoFn
from transforms.documents import Document

# The launcher: every option checked, the default configuration's router built once.
job = parse_job(["--input", "sample/docs.parquet", "--output", str(Path(tempfile.mkdtemp()) / "out"), *sys.argv[1:]])
after_launch = loaded()
# A worker: the chunking DoFn set up, a Markdown document chunked (the docling route is not taken).
dofn = _ChunkDoFn(job.spec)
dofn.setup()
rows = list(dofn.process(Document(id="m", content="# Title\n\nSome text.\n", content_format="markdown"),
                         job.tokenizer_identity))
after_markdown = loaded()
# The first DoclingDocument (the sample's): now docling-core's chunker is imported, and it chunks.
import pyarrow.parquet as pq
content = next(r["content"] for r in pq.read_table("sample/docs.parquet").to_pylist()
               if r["content_format"] == "docling")
docling = Document(id="d", content=content, content_format="docling")
rows += list(dofn.process(docling, job.tokenizer_identity))
print(json.dumps({"launch": after_launch, "markdown": after_markdown, "docling": loaded(),
                  "chunks": sorted({r["document_id"] for r in rows if isinstance(r, dict)})}))
"""


@pytest.mark.slow
def test_launcher_and_workers_import_docling_chunking_only_for_a_docling_document():
    """docling-core's chunker package imports transformers (and torch, with the semantic extra):
    seconds of start-up in the launcher and in every worker. Only the first DoclingDocument a
    DoclingChunker chunks may import it; the default configuration never does."""
    import subprocess
    import sys

    from tests.conftest import REPO

    def probe(*options: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", _LAZY_IMPORT_PROBE, *options], cwd=REPO, capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    found = probe("--config", "configs/docling.yaml")  # DoclingDocuments to DoclingChunker
    assert found["launch"] == []
    assert found["markdown"] == []
    assert "docling_core.transforms.chunker" in found["docling"]  # the probe sees the import when it happens
    assert found["chunks"] == ["d", "m"]
    default = probe()  # DoclingDocuments to StructureAwareChunker: docling-core's chunker never loads
    assert default["launch"] == default["markdown"] == default["docling"] == []
    assert default["chunks"] == ["d", "m"]
