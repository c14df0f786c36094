"""The plain-text splitters on DoclingDocuments (through the Markdown rendering) and with
regular-expression separators: exact small cases, slices and budgets as properties, errors."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest
from docling_core.types.doc import DocItemLabel, DoclingDocument
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.config import load_config, resolve_config
from pipelines.rechunk import main
from tests.conftest import REPO, read_output, write_documents
from transforms.chunkers import CHUNKERS, ChunkingError
from transforms.chunkers.registry import build_router
from transforms.chunkers.text import CharacterTextSplitter, RecursiveCharacterTextSplitter, TokenTextSplitter
from transforms.chunkers.text import separators as separators_module
from transforms.documents import Document
from transforms.structure.normalizers.docling import normalize_docling
from transforms.tokenizers import TiktokenTokenizer
from transforms.validation import validate_chunks

TOK = TiktokenTokenizer("cl100k_base")
#: AutoRAG's (ai4rag's) default separators: the second is a regular expression.
AUTORAG_SEPARATORS = ["\n\n", r"(?<=\. )", "\n", " ", ""]


def slices(splitter, text: str) -> list[tuple[str, int, int]]:
    """The pieces of ``text`` as ``(text, start, end)``; the splitters always set both offsets."""
    out = []
    for piece in splitter.split(Document(id="d", content=text)):
        assert piece.start_offset is not None and piece.end_offset is not None
        out.append((piece.text, piece.start_offset, piece.end_offset))
    return out


def guide() -> DoclingDocument:
    doc = DoclingDocument(name="guide")
    doc.add_title(text="Guide")
    doc.add_heading(text="Install", level=1)
    doc.add_text(label=DocItemLabel.TEXT, text="Run the installer. Then restart. Done.")
    group = doc.add_list_group()
    doc.add_list_item(text="first step", parent=group)
    doc.add_list_item(text="second step", parent=group)
    return doc


GUIDE_RENDERING = "# Guide\n\n## Install\n\nRun the installer. Then restart. Done.\n\n- first step\n- second step\n"


# --------------------------------------------------------------------------------------------
# Regular-expression separators: exact chunks
# --------------------------------------------------------------------------------------------

ANIMALS = "Cats purr. Dogs bark. Birds sing.\n\nFish swim."


def test_lookbehind_separator_cuts_after_sentences_in_characters():
    # "\n\n" gives "Cats purr. Dogs bark. Birds sing." (33 > 30), split again after ". ": 11 + 11
    # fit, a third sentence would not; the space after a sentence stays with it and is stripped.
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=30, chunk_overlap=0, separators=AUTORAG_SEPARATORS, is_separator_regex=True
    )
    assert slices(splitter, ANIMALS) == [
        ("Cats purr. Dogs bark.", 0, 21),
        ("Birds sing.", 22, 33),
        ("Fish swim.", 35, 45),
    ]
    # The same list read literally: "(?<=\. )" never occurs, so words decide.
    literal = RecursiveCharacterTextSplitter(chunk_size=30, chunk_overlap=0, separators=AUTORAG_SEPARATORS)
    assert slices(literal, ANIMALS) == [
        ("Cats purr. Dogs bark. Birds", 0, 27),
        ("sing.", 28, 33),
        ("Fish swim.", 35, 45),
    ]


def test_lookbehind_separator_in_tokens():
    # cl100k_base: "C|ats| pur|r|.| Dogs| bark|.| Birds| sing|.\n\n|Fish| swim|." — 8 tokens end at
    # 21, before the second sentence's match (22, after its space): the last match before the
    # budget runs out is 11. "Dogs bark. Birds sing." is 7 tokens, and "\n\n" ends it.
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=8,
        chunk_overlap=0,
        separators=AUTORAG_SEPARATORS,
        is_separator_regex=True,
        length="tokens",
        tokenizer=TOK,
    )
    assert slices(splitter, ANIMALS) == [
        ("Cats purr.", 0, 10),
        ("Dogs bark. Birds sing.", 11, 33),
        ("Fish swim.", 35, 45),
    ]
    assert [TOK.count(t) for t, _, _ in slices(splitter, ANIMALS)] == [5, 7, 3]
    # With 4 tokens of overlap the next chunk starts at the first sentence start within them.
    overlapping = RecursiveCharacterTextSplitter(
        chunk_size=8,
        chunk_overlap=4,
        separators=AUTORAG_SEPARATORS,
        is_separator_regex=True,
        length="tokens",
        tokenizer=TOK,
    )
    assert [t for t, _, _ in slices(overlapping, ANIMALS)] == [
        "Cats purr.",
        "purr. Dogs bark.",
        "Dogs bark. Birds sing.",
        "Birds sing.\n\nFish swim.",
    ]


def test_character_splitter_keeps_a_matched_separator_verbatim():
    # A match holding more than whitespace starts the piece after it: "alpha", "\n---\nbeta",
    # "\n-----\ngamma"; 5 + 9 = 14 fit, and the rule line after the cut starts the next chunk.
    # LangChain would join the pieces with the pattern itself ("alpha\\n-{3,}\\nbeta") and drop
    # the rule line at the cut.
    splitter = CharacterTextSplitter(chunk_size=14, chunk_overlap=0, separator=r"\n-{3,}\n", is_separator_regex=True)
    assert slices(splitter, "alpha\n---\nbeta\n-----\ngamma") == [("alpha\n---\nbeta", 0, 14), ("-----\ngamma", 15, 26)]
    zero_width = CharacterTextSplitter(chunk_size=12, chunk_overlap=0, separator=r"(?<=\. )", is_separator_regex=True)
    assert slices(zero_width, "One two. Three four. Five.") == [
        ("One two.", 0, 8),
        ("Three four.", 9, 20),
        ("Five.", 21, 26),
    ]


@pytest.mark.parametrize("is_separator_regex", [True, False])
def test_a_separator_that_holds_text_is_never_dropped_at_a_cut(is_separator_regex):
    text = "# Install\n\nRun pip.\n\n## Configure\n\nEdit the file.\n"
    separator = r"(?m)^#+ .*$" if is_separator_regex else "## Configure"
    splitter = CharacterTextSplitter(
        chunk_size=20, chunk_overlap=0, separator=separator, is_separator_regex=is_separator_regex
    )
    chunks = slices(splitter, text)
    assert all(text[start:end] == chunk for chunk, start, end in chunks)
    assert "".join(chunk for chunk, _, _ in chunks).replace("\n", "") == text.replace("\n", "")
    assert [chunk for chunk, _, _ in chunks][-1] == "## Configure\n\nEdit the file."


def test_regex_flag_leaves_literal_configurations_unchanged():
    # The flag is in to_dict() only when set: literal splitters keep their configuration hash.
    literal = RecursiveCharacterTextSplitter(chunk_size=100, chunk_overlap=10)
    assert "is_separator_regex" not in literal.to_dict()
    assert literal.config_hash == "540475e5388af440891613f1ce8202a0bb3c6e1b4d10200057d0820e5f47180f"
    assert (
        CharacterTextSplitter(chunk_size=100, chunk_overlap=10).config_hash
        == "37d29c269cad600dce9b3a86aa54dad7f2f58ba52622b5d5e9a7177809b11b15"
    )
    regex = RecursiveCharacterTextSplitter(chunk_size=100, chunk_overlap=10, is_separator_regex=True)
    assert regex.to_dict()["is_separator_regex"] is True and regex.config_hash != literal.config_hash
    rebuilt = RecursiveCharacterTextSplitter.from_dict(regex.to_dict())
    assert rebuilt.config_hash == regex.config_hash
    # The regex package's version enters the input fingerprint of the documents it splits.
    assert regex.fingerprint_libraries == ("regex",) and literal.fingerprint_libraries == ()
    assert CharacterTextSplitter(is_separator_regex=True).fingerprint_libraries == ("regex",)
    assert RecursiveCharacterTextSplitter.fingerprint_libraries == ()


# --------------------------------------------------------------------------------------------
# Regular-expression separators: properties
# --------------------------------------------------------------------------------------------

_TEXT = st.lists(
    st.one_of(
        st.sampled_from(
            ["Cats purr. ", "Dogs bark.", ". ", "\n\n", "\n", " ", "wonderful", "한국어", "🙂🙂", "a.b. c"]
        ),
        st.text("ab .\n", max_size=12),
    ),
    max_size=60,
).map("".join)


def _regex_splitters(size: int, overlap: int) -> list:
    regex: dict[str, Any] = {"is_separator_regex": True}
    return [
        RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, separators=AUTORAG_SEPARATORS, **regex),
        RecursiveCharacterTextSplitter(
            chunk_size=size,
            chunk_overlap=overlap,
            separators=AUTORAG_SEPARATORS,
            length="tokens",
            tokenizer=TOK,
            **regex,
        ),
        RecursiveCharacterTextSplitter(
            chunk_size=size,
            chunk_overlap=overlap,
            separators=[r"\n+", r"\.\s+", " ", ""],
            length="tokens",
            tokenizer=TOK,
            **regex,
        ),
        CharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, separator=r"(?<=\. )", **regex),
        CharacterTextSplitter(
            chunk_size=size, chunk_overlap=overlap, separator=r"\s*\n\s*", length="tokens", tokenizer=TOK, **regex
        ),
    ]


def _check_slices_and_budgets(splitter, text: str, recount) -> None:
    """Every chunk a non-blank slice of ``text`` (stripped but for token windows), in order, and
    within budget when ``""`` can cut, recounted independently."""
    chunks = slices(splitter, text)
    tokens = getattr(splitter, "length", "tokens") == "tokens"
    can_cut = isinstance(splitter, TokenTextSplitter) or "" in getattr(
        splitter, "separators", [splitter.__dict__.get("separator")]
    )
    previous = None
    for chunk, start, end in chunks:
        assert text[start:end] == chunk
        assert chunk.strip()
        if not isinstance(splitter, TokenTextSplitter):  # (token windows are not stripped)
            assert chunk.strip() == chunk
        size = recount(chunk) if tokens else len(chunk)
        if can_cut:
            assert size <= splitter.chunk_size or end - start == 1, (chunk, size)
        if previous is not None:
            # In reading order, never a repeat (with overlap a chunk may end where the one
            # before does: LangChain's merge counts whitespace pieces, then strips them).
            assert start >= previous[0] and end >= previous[1] and (start, end) != previous
        previous = (start, end)
    if can_cut or isinstance(splitter, RecursiveCharacterTextSplitter):
        # Every character but whitespace is in a chunk.
        covered = bytearray(len(text))
        for _, start, end in chunks:
            covered[start:end] = b"\x01" * (end - start)
        assert all(covered[i] or c.isspace() for i, c in enumerate(text))


@pytest.mark.parametrize("size", [(6, 0), (12, 4), (40, 10)])
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(text=_TEXT)
def test_regex_chunks_are_slices_within_budget(recount, size, text):
    for splitter in _regex_splitters(*size):
        _check_slices_and_budgets(splitter, text, recount)


@settings(max_examples=80, deadline=None)
@given(text=_TEXT, size=st.sampled_from([(8, 0), (20, 5), (64, 16)]))
def test_escaped_literals_as_regex_give_the_literal_chunks(text, size):
    # Separators that cannot overlap themselves: a regular expression that matches exactly them
    # finds the same occurrences as str.find, in both units.
    literal_seps = ["\n", ". ", " ", ""]
    regex_seps = [re.escape(s) if s else s for s in literal_seps]
    for kw in ({}, {"length": "tokens", "tokenizer": TOK}):
        literal = RecursiveCharacterTextSplitter(
            chunk_size=size[0], chunk_overlap=size[1], separators=literal_seps, **kw
        )
        regex = RecursiveCharacterTextSplitter(
            chunk_size=size[0], chunk_overlap=size[1], separators=regex_seps, is_separator_regex=True, **kw
        )
        assert slices(regex, text) == slices(literal, text)
    literal_one = CharacterTextSplitter(chunk_size=size[0], chunk_overlap=size[1], separator=". ")
    regex_one = CharacterTextSplitter(
        chunk_size=size[0], chunk_overlap=size[1], separator=r"\. ", is_separator_regex=True
    )
    if ". . " not in text:
        # (Where two occurrences touch, the literal merge estimates the empty piece's separator
        # as one more separator; the regular-expression one measures the text between pieces.)
        assert slices(regex_one, text) == slices(literal_one, text)


@settings(max_examples=80, deadline=None)
@given(text=_TEXT, size=st.sampled_from([(10, 0), (25, 5), (60, 20)]))
def test_characters_mode_is_langchains_with_regex_separators(text, size):
    """Dev-only: in characters, LangChain's RecursiveCharacterTextSplitter chunk for chunk."""
    lc = pytest.importorskip("langchain_text_splitters")
    for seps in (AUTORAG_SEPARATORS, [r"\n+", r"\.\s+", r"(?=b)", ""]):
        ours = RecursiveCharacterTextSplitter(
            chunk_size=size[0], chunk_overlap=size[1], separators=seps, is_separator_regex=True
        )
        theirs = lc.RecursiveCharacterTextSplitter(
            chunk_size=size[0], chunk_overlap=size[1], separators=seps, is_separator_regex=True
        )
        assert [t for t, _, _ in slices(ours, text)] == theirs.split_text(text)


# --------------------------------------------------------------------------------------------
# Regular-expression separators: errors and time bounds
# --------------------------------------------------------------------------------------------

BAD_PATTERNS = [
    ("(", "separators[1]: '(' is not a valid regular expression: missing ), unterminated subpattern at position 0"),
    (
        "(?<=a+)b",
        "separators[1]: '(?<=a+)b' is not a valid regular expression: look-behind requires fixed-width pattern",
    ),
    (r"\s*", r"separators[1]: '\\s*' matches the empty string, so it would cut before every character"),
    ("^", "separators[1]: '^' matches the empty string"),
    ("[[:space:]]+", "separators[1]: '[[:space:]]+' holds a POSIX character class"),
    (r"\B", r"separators[1]: '\\B' matches the empty string between every two characters of 'ab12cd'"),
    ("(?<=.)", "separators[1]: '(?<=.)' matches the empty string between every two characters"),
    ("(?=[a-z0-9])", "separators[1]: '(?=[a-z0-9])' matches the empty string between every two characters"),
    ("(a|aa)+$", "separators[1]: '(a|aa)+$' takes more than 0.25 s on the 41-character text"),
]


@pytest.mark.parametrize(("pattern", "message"), BAD_PATTERNS)
def test_bad_patterns_are_refused_when_built(pattern, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        RecursiveCharacterTextSplitter(separators=["\n\n", pattern, ""], is_separator_regex=True)
    with pytest.raises(ValueError, match=re.escape(message.replace("separators[1]", "separator"))):
        CharacterTextSplitter(separator=pattern, is_separator_regex=True)
    # Read literally the same strings are fine.
    RecursiveCharacterTextSplitter(separators=["\n\n", pattern, ""])


def test_regex_flag_must_be_a_bool():
    with pytest.raises(ValueError, match=re.escape("is_separator_regex must be a bool, got 'yes'")):
        RecursiveCharacterTextSplitter(is_separator_regex="yes")


@pytest.mark.parametrize("length", ["characters", "tokens"])
def test_a_document_whose_searches_run_out_of_time_is_a_chunker_error(monkeypatch, length):
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=8,
        chunk_overlap=0,
        separators=AUTORAG_SEPARATORS,
        is_separator_regex=True,
        length=length,
        tokenizer=TOK,
    )
    monkeypatch.setattr(separators_module, "DOCUMENT_SECONDS", 0.0)
    with pytest.raises(ChunkingError) as caught:
        list(splitter.split(Document(id="d", content=ANIMALS)))
    assert caught.value.reason == "chunker_error"
    assert caught.value.detail.startswith("separator regex '\\n\\n' took more than 0 s on this document")


def test_bad_pattern_in_a_configuration_is_an_option_error(capsys, tmp_path):
    docs = write_documents(
        tmp_path / "in" / "docs.parquet", [{"id": "a", "content": "A. B.", "content_format": "text", "metadata": None}]
    )
    config = tmp_path / "c.yaml"
    config.write_text(
        "chunkers: {r: {type: RecursiveCharacterTextSplitter, params: {separators: ['(?<=\\. )', '(('], "
        "is_separator_regex: true}}}\ndefault: r\n"
    )
    assert main(["--input", str(docs), "--output", str(tmp_path / "out"), "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"rechunk: error: --config {config}: chunkers.r.params: separators[1]: '((' is not a valid regular "
        "expression: missing ), unterminated subpattern at position 1"
    ]


# --------------------------------------------------------------------------------------------
# DoclingDocuments: split through the Markdown rendering
# --------------------------------------------------------------------------------------------


def test_docling_document_is_split_from_its_rendering():
    content = guide().model_dump_json()
    assert normalize_docling(content).text == GUIDE_RENDERING
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=30, chunk_overlap=0, separators=AUTORAG_SEPARATORS, is_separator_regex=True
    )
    document = Document(id="g", content=content, content_format="docling", metadata={"lang": "en"})
    chunks, source = splitter.chunk_with_source(document, tokenizer_identity=TOK.identity)
    assert source == GUIDE_RENDERING
    assert [(c.text, c.metadata["source_spans"]) for c in chunks] == [
        ("# Guide\n\n## Install", [[0, 19]]),
        ("Run the installer.", [[21, 39]]),
        ("Then restart. Done.", [[40, 59]]),
        ("- first step\n- second step", [[61, 87]]),
    ]
    for chunk in chunks:
        assert chunk.start_offset is None and chunk.end_offset is None
        assert chunk.content_format == "markdown" and chunk.metadata["lang"] == "en"
        assert chunk.embedding_text == chunk.text
    result = validate_chunks(
        document, chunks, tokenizer=TOK, tokenizer_identity=TOK.identity, max_tokens=512, source=source
    )
    assert len(result.accepted) == 4 and not result.rejected


def test_a_span_that_is_not_the_chunks_text_is_rejected():
    content = guide().model_dump_json()
    document = Document(id="g", content=content, content_format="docling")
    splitter = TokenTextSplitter(chunk_size=6, chunk_overlap=0, tokenizer=TOK)
    chunks, source = splitter.chunk_with_source(document, tokenizer_identity=TOK.identity)
    assert "".join(c.text for c in chunks) == source  # token windows tile the rendering
    import dataclasses

    moved = dataclasses.replace(chunks[1], metadata={"source_spans": [[0, len(chunks[1].text)]]})
    broken = dataclasses.replace(chunks[2], metadata={"source_spans": [[0, 10**9]]})
    result = validate_chunks(
        document,
        [chunks[0], moved, broken],
        tokenizer=TOK,
        tokenizer_identity=TOK.identity,
        max_tokens=512,
        source=source,
    )
    assert [c.chunk_index for c in result.accepted] == [0]
    assert [c.text for c in chunks[:3]] == [
        "# Guide\n\n## Install\n\n",
        "Run the installer. Then restart",
        ". Done.\n\n- first step",
    ]
    assert [(r.reason, r.detail) for r in result.rejected] == [
        ("offset_mismatch", "the rendering's source_spans [[0, 31]] are not the chunk's text (31 characters)"),
        ("offset_mismatch", "source_spans holds [0, 1000000000], not [start, end] within the 88-character rendering"),
    ]


def test_every_splitter_takes_docling_and_refuses_bad_json():
    for cls in (RecursiveCharacterTextSplitter, CharacterTextSplitter, TokenTextSplitter):
        assert "docling" in cls.accepted_content_formats
    splitter = CharacterTextSplitter(chunk_size=40, chunk_overlap=0, separator="\n\n")
    bad = Document(id="x", content="{not json", content_format="docling")
    with pytest.raises(ChunkingError) as caught:
        splitter.chunk_with_source(bad, tokenizer_identity=TOK.identity)
    assert caught.value.reason == "invalid_docling_json"
    empty = Document(id="e", content=DoclingDocument(name="e").model_dump_json(), content_format="docling")
    assert splitter.chunk_with_source(empty, tokenizer_identity=TOK.identity) == ([], "")
    texts = [
        c.text
        for c in splitter.chunk(
            Document(id="g", content=guide().model_dump_json(), content_format="docling"),
            tokenizer_identity=TOK.identity,
        )
    ]
    assert texts == ["# Guide\n\n## Install", "Run the installer. Then restart. Done.", "- first step\n- second step"]


_PARAGRAPHS = st.lists(
    st.tuples(st.sampled_from(["text", "heading", "item"]), st.text("ab .\n한🙂", min_size=1, max_size=40)),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(items=_PARAGRAPHS, size=st.sampled_from([(6, 0), (16, 4), (40, 10)]))
def test_docling_chunks_are_slices_of_the_rendering_within_budget(recount, items, size):
    doc = DoclingDocument(name="p")
    group = None
    for kind, text in items:
        if kind == "heading":
            doc.add_heading(text=text, level=1)
            group = None
        elif kind == "item":
            group = group or doc.add_list_group()
            doc.add_list_item(text=text, parent=group)
        else:
            doc.add_text(label=DocItemLabel.TEXT, text=text)
            group = None
    document = Document(id="p", content=doc.model_dump_json(), content_format="docling")
    rendering = normalize_docling(document.content).text
    for splitter in [
        *_regex_splitters(*size),
        TokenTextSplitter(chunk_size=size[0], chunk_overlap=size[1], tokenizer=TOK),
    ]:
        chunks, source = splitter.chunk_with_source(document, tokenizer_identity=TOK.identity)
        assert source == rendering
        direct = slices(splitter, rendering)
        assert [(c.text, c.metadata["source_spans"]) for c in chunks] == [
            (t, [[a, b]]) for t, a, b in direct if t.strip()
        ]
        _check_slices_and_budgets(splitter, rendering, recount)
        result = validate_chunks(
            document, chunks, tokenizer=TOK, tokenizer_identity=TOK.identity, max_tokens=10**6, source=source
        )
        assert not result.rejected


def test_job_splits_a_docling_document_with_the_autorag_configuration(tmp_path):
    content = guide().model_dump_json()
    docs = write_documents(
        tmp_path / "in" / "docs.parquet",
        [
            {"id": "g", "content": content, "content_format": "docling", "metadata": None},
            {"id": "t", "content": ANIMALS, "content_format": "text", "metadata": None},
        ],
    )
    out = tmp_path / "out"
    assert main(["--input", str(docs), "--output", str(out), "--config", str(REPO / "configs" / "autorag.yaml")]) == 0
    rows = {r["document_id"]: r for r in read_output(out, "chunks")}
    assert rows["g"]["text"] == GUIDE_RENDERING.strip() and rows["g"]["start_offset"] is None
    assert rows["g"]["content_format"] == "markdown" and '"source_spans":[[0,87]]' in rows["g"]["metadata"]
    assert rows["t"]["text"] == ANIMALS and rows["t"]["start_offset"] == 0
    assert read_output(out, "dead_letter") == []


# --------------------------------------------------------------------------------------------
# configs/autorag.yaml: AutoRAG's defaults, checked against the reference API's own text
# --------------------------------------------------------------------------------------------

# From the AutoRAG toolkit's published Chunking API (ai4rag/rag/chunking/langchain_chunker.py and
# docling_chunker.py), quoted as published.
REFERENCE_LANGCHAIN_CHUNKER = r"""
def __init__(
    self,
    method: Literal["recursive", "character", "token"] = "recursive",
    chunk_size: int = 2048,
    chunk_overlap: int = 256,
    **kwargs: Any,
) -> None:
    self.method = method
    self.chunk_size = chunk_size
    self.chunk_overlap = chunk_overlap
    self.separators = kwargs.pop("separators", ["\n\n", r"(?<=\. )", "\n", " ", ""])
    self._encoding = tiktoken.encoding_for_model(_DEFAULT_TIKTOKEN_MODEL)
    self._text_splitter = self._get_text_splitter()
"""
REFERENCE_TOKENIZER = "When None, defaults to OpenAI tiktoken (cl100k_base, zero model downloads)."
REFERENCE_UNITS = (
    "chunk_size (int, default: 2048 ) – Maximum number of tokens per chunk.",
    "chunk_overlap (int, default: 256 ) – Overlap in tokens between chunks.",
)


def _reference_defaults() -> dict:
    function = ast.parse(REFERENCE_LANGCHAIN_CHUNKER).body[0]
    assert isinstance(function, ast.FunctionDef)
    names = [a.arg for a in function.args.args][-len(function.args.defaults) :]
    defaults = {name: ast.literal_eval(value) for name, value in zip(names, function.args.defaults)}
    pop = next(
        node
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", None) == "pop"
        and ast.literal_eval(node.args[0]) == "separators"
    )
    defaults["separators"] = ast.literal_eval(pop.args[1])
    found = re.search(r"tiktoken \((\w+),", REFERENCE_TOKENIZER)
    assert found is not None
    defaults["tokenizer"] = found.group(1)
    return defaults


def test_autorag_configuration_holds_the_reference_defaults():
    reference = _reference_defaults()
    assert reference == {
        "method": "recursive",
        "chunk_size": 2048,
        "chunk_overlap": 256,
        "separators": AUTORAG_SEPARATORS,
        "tokenizer": "cl100k_base",
    }
    assert all("tokens" in line for line in REFERENCE_UNITS)  # sizes are tokens of that encoding
    spec = resolve_config(load_config(str(REPO / "configs" / "autorag.yaml")), tokenizer=None, max_tokens=None)
    assert spec["tokenizer"] == f"tiktoken:{reference['tokenizer']}"
    assert spec["default"] == reference["method"] and spec["routes"] == []
    classes = {
        "recursive": "RecursiveCharacterTextSplitter",
        "character": "CharacterTextSplitter",
        "token": "TokenTextSplitter",
    }
    assert {name: entry["type"] for name, entry in spec["chunkers"].items()} == classes
    for name, entry in spec["chunkers"].items():
        params = entry["params"]
        assert (params["chunk_size"], params["chunk_overlap"]) == (reference["chunk_size"], reference["chunk_overlap"])
        if name != "token":
            assert params["length"] == "tokens"
    recursive = spec["chunkers"]["recursive"]["params"]
    assert recursive["separators"] == reference["separators"] and recursive["is_separator_regex"] is True
    assert spec["max_tokens"] >= reference["chunk_size"]
    router = build_router(spec, tokenizer=TOK)
    assert isinstance(router.chunkers["recursive"], CHUNKERS["RecursiveCharacterTextSplitter"])


@pytest.mark.parametrize("separators", ["\n\n", {"\n": 1}, 7])
def test_separators_given_as_a_string_or_mapping_are_refused(separators):
    with pytest.raises(ValueError, match="separators must be a non-empty list of strings, got "):
        RecursiveCharacterTextSplitter(separators=separators)
