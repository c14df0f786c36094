"""Retrieval quality of this project's chunkers: token-level recall, precision and IoU.

The evaluation of Chroma's technical report "Evaluating Chunking Strategies for Retrieval"
(Smith and Troynikov, 2024), code at github.com/brandonstarxel/chunking_evaluation:
``chunking_evaluation/evaluation_framework/base_evaluation.py`` (``BaseEvaluation.run`` and
``_scores_from_dataset_and_retrievals``) and ``evaluation_utils.py`` (the range helpers). It is
reproduced here, not imported (that package pulls in chromadb, OpenAI and fuzzywuzzy):

1. Every corpus is chunked; every chunk is embedded, and so is every question.
2. For each question the ``k`` nearest chunks by cosine similarity are retrieved from the pooled
   collection of all corpora's chunks (exact search with numpy; ties go to the chunk listed first,
   corpora in file-name order, chunks in reading order). Chroma's default and its report's tables
   retrieve 5, hence ``--k 5`` here.
3. Scores are over character ranges (code points) of the corpus, per question:

   - a retrieved chunk of the question's corpus is intersected with each reference range
     (``max`` of starts, ``min`` of ends; ranges that only touch give an empty intersection);
     the numerator is the total length of the union of those intersections;
   - ``recall = numerator / sum of the reference lengths``;
   - ``precision = numerator / sum of the lengths of the k retrieved chunks`` (every retrieved
     chunk counts, also those of other corpora, and overlapping chunks count twice);
   - ``IoU = numerator / (that same chunk length sum + the length of the references' parts no
     retrieved chunk covered)``;
   - a score whose denominator is 0 is 0.

   The run reports the mean and the population standard deviation (``numpy.std``) of each over
   the questions, as ``BaseEvaluation.run`` does.

Differences from Chroma:

- Chunk ranges come from the chunks themselves, not from searching their text in the corpus
  (Chroma's ``rigorous_document_search``, which also leaves a final period out of the range):
  ``[start_offset, end_offset)`` when the chunk is a verbatim slice, else its
  ``metadata["structure"]["spans"]`` (``HeadingChunker``'s ancestor headings, a repeated table
  header or code fence): such a chunk is the union of several ranges, each intersected as Chroma
  intersects a chunk, and its precision length is the sum of its spans.
  A chunk with neither (``LangchainSemanticChunker`` where LangChain rejoined sentences with other
  whitespace) is located as Chroma locates every chunk, ignoring whitespace and case; the table's
  note counts them.
- ``DoclingChunker`` takes only DoclingDocuments, so each corpus is first converted to one by
  Docling itself (:func:`docling_document`: Markdown and text through Docling's Markdown backend,
  reST through docutils' HTML and Docling's HTML backend), chunked, and each chunk is located in
  the original corpus line by line (:func:`locate_lines`: its lines are its items' texts, with
  Markdown markup removed, so not slices). A line not found is left out of the chunk's ranges
  but its length still counts in the chunk's length for precision and IoU (``unlocated_chars``):
  unlocated text can only lower the scores, never raise them. The table's note counts the lines
  located and not found.
- What is embedded is each chunk's ``embedding_text``, what the job writes for embedding (the
  heading path in front for the structure chunkers, the text itself for the others), so every
  chunker is measured as it would be used. Its scored range is its source text only.
- Chunks whose ``embedding_text`` is over the budget (recounted with the job's tokenizer) are
  left out of the collection, since the job dead-letters them (``token_budget_exceeded``); the
  table counts them. ``HeadingChunker`` (no size cap) and ``CharacterTextSplitter`` (an
  oversized piece stays whole) can make such chunks.

Inputs, in the layout of Chroma's evaluation:

- ``--corpora DIR``: one file per corpus, UTF-8, read as Chroma reads it (``open()``'s universal
  newlines). A question's ``corpus_id`` is the file name in ``DIR``; when no such file exists,
  ``DIR/<corpus_id>.md`` is tried, as Chroma's general evaluation names its corpora. The file
  extension gives the ``content_format`` of the rechunk ``Document`` (its id is the
  ``corpus_id``): ``.md``/``.markdown`` markdown, ``.rst`` rst, anything else text. HTML and
  DoclingDocument files are refused: their structure chunks are cut from a Markdown rendering, so
  no range of the file could be compared. (``DoclingChunker`` gets DoclingDocuments converted from
  the corpora instead, see above; that needs the ``parse`` extra, and ``docutils`` for reST.)
- ``--questions CSV``: columns ``question``, ``references`` (a JSON list of ``{"content",
  "start_index", "end_index"}``) and ``corpus_id``. Every reference is checked,
  ``corpus[start_index:end_index] == content``, before anything runs.

Chunkers: ``--config FILE`` (a rechunk configuration; its routes choose a chunker per corpus) or
``--chunker NAME`` (repeatable; default every class in ``transforms.chunkers.CHUNKERS``) with
``--params JSON``. Named chunkers get the parameters below unless ``--params`` says otherwise, so
that ``--max-tokens`` sizes every one of them in tokens of the job's tokenizer, without overlap as
in Chroma's main comparisons: ``RecursiveCharacterTextSplitter`` and ``CharacterTextSplitter``
``{"length": "tokens", "chunk_overlap": 0}``, ``TokenTextSplitter`` ``{"chunk_overlap": 0}``,
``EmbeddingSemanticChunker`` and ``LangchainSemanticChunker`` ``{"embeddings": "local"}``, where the
model ``local`` is the same local all-MiniLM-L6-v2 as below (their other parameters are the
reference's defaults: percentile breakpoints). ``SemanticChunker`` needs a chat model (``llm``);
with none configured its row says it was not run: give one with ``--config``.
The budget goes where the job puts it (``pipelines.config.resolve_config``). ``--max-tokens`` takes
several values; each chunker runs at each.

The embedder is the local all-MiniLM-L6-v2 (``transforms.models.local.SentenceTransformerEmbedder``
with its defaults, the ``semantic`` extra; vectors are normalised here, so cosine is a dot
product). It reads at most 256 word pieces of a text and ignores the rest, so the tail of a chunk
of 400 tokens does not count for its embedding (as in Chroma's runs with that model). Tests pass another embedder to :func:`main`.

Output: a Markdown table (one row per chunker and budget) printed and, with ``--out``, written as Markdown.

    python benchmarks/retrieval_quality.py --max-tokens 200 400 --out results.md

Exit status 2 with one line on stderr for a bad option or input.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.measurement import header, shown, write_markdown  # noqa: E402
from pipelines.config import ConfigError, load_config, resolve_config  # noqa: E402
from transforms.chunkers import CHUNKERS, ChunkingError  # noqa: E402
from transforms.chunkers.registry import build_router  # noqa: E402
from transforms.documents import Document  # noqa: E402
from transforms.models import Embedder  # noqa: E402
from transforms.tokenizers import Tokenizer, TokenizerError, load_tokenizer  # noqa: E402

DATA = Path(__file__).resolve().parent / "retrieval_data"

#: Parameters a chunker named with ``--chunker`` gets unless ``--params`` is given.
DEFAULT_PARAMS: Mapping[str, Mapping[str, Any]] = {
    "RecursiveCharacterTextSplitter": {"length": "tokens", "chunk_overlap": 0},
    "CharacterTextSplitter": {"length": "tokens", "chunk_overlap": 0},
    "TokenTextSplitter": {"chunk_overlap": 0},
    "EmbeddingSemanticChunker": {"embeddings": "local"},
    "LangchainSemanticChunker": {"embeddings": "local"},
}

#: The ``models:`` section given to a ``--chunker`` class that takes an embedding model.
LOCAL_MODELS: Mapping[str, Any] = {"local": {"type": "SentenceTransformerEmbedder", "params": {}}}

#: Corpus file extension -> content_format; any other extension is text.
FORMATS_BY_EXTENSION: Mapping[str, str] = {".md": "markdown", ".markdown": "markdown", ".rst": "rst"}
#: Extensions refused as corpora (chunks of these are cut from a rendering, not the file).
REFUSED_EXTENSIONS = frozenset({".html", ".htm", ".json"})

Range = tuple[int, int]


class InputError(ValueError):
    """A bad option, questions file or corpus; the message is one line."""


# --------------------------------------------------------------------------- range arithmetic
# Same semantics as chunking_evaluation/evaluation_framework/evaluation_utils.py (half-open
# code-point ranges (start, end)).


def sum_of_ranges(ranges: Iterable[Range]) -> int:
    """Total length of ``ranges``, overlaps counted as often as they occur."""
    return sum(end - start for start, end in ranges)


def union_ranges(ranges: Iterable[Range]) -> list[Range]:
    """Merge overlapping or touching ranges; sorted by start."""
    merged: list[Range] = []
    for start, end in sorted(ranges, key=lambda r: r[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def intersect_two_ranges(a: Range, b: Range) -> Range | None:
    """The common part of ``a`` and ``b``; ``(x, x)`` when they only touch; ``None`` when apart."""
    start, end = max(a[0], b[0]), min(a[1], b[1])
    return (start, end) if start <= end else None


def difference(ranges: Iterable[Range], target: Range) -> list[Range]:
    """``ranges`` with ``target`` cut out of each (a range may fall in two)."""
    cut_start, cut_end = target
    result: list[Range] = []
    for start, end in ranges:
        if end < cut_start or start > cut_end:
            result.append((start, end))
            continue
        if start < cut_start:
            result.append((start, cut_start))
        if end > cut_end:
            result.append((cut_end, end))
    return result


@dataclass(frozen=True)
class Retrieved:
    """One retrieved chunk: its corpus and its source ranges (one for a verbatim slice).

    ``unlocated_chars``: code points of the chunk's text that were not found in its corpus (a
    ``DoclingChunker`` line, see :func:`locate_lines`); they count in the chunk's length for
    precision and IoU, and can find nothing.
    """

    corpus_id: str
    ranges: tuple[Range, ...]
    unlocated_chars: int = 0


def question_scores(
    references: Sequence[Range], corpus_id: str, retrieved: Sequence[Retrieved]
) -> tuple[float, float, float]:
    """``(iou, recall, precision)`` of one question, as Chroma's ``_scores_from_dataset_and_retrievals``.

    Args:
        references: The question's reference ranges in its corpus (code points, half-open).
        corpus_id: The question's corpus.
        retrieved: The top ``k`` chunks, best first (all of them are scored).
    """
    numerator: list[Range] = []
    unused = list(references)
    for chunk in retrieved:
        if chunk.corpus_id != corpus_id:
            continue
        for chunk_range in chunk.ranges:
            for reference in references:
                common = intersect_two_ranges(chunk_range, reference)
                if common is not None:
                    unused = difference(unused, common)
                    numerator = union_ranges([common, *numerator])
    found = sum_of_ranges(numerator)
    recall_denominator = sum_of_ranges(references)
    precision_denominator = sum(sum_of_ranges(chunk.ranges) + chunk.unlocated_chars for chunk in retrieved)
    iou_denominator = precision_denominator + sum_of_ranges(unused)
    recall = found / recall_denominator if recall_denominator else 0.0
    precision = found / precision_denominator if precision_denominator else 0.0
    iou = found / iou_denominator if iou_denominator else 0.0
    return iou, recall, precision


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Question:
    question: str
    corpus_id: str
    references: tuple[Range, ...]


def corpus_path(corpora: Path, corpus_id: str) -> Path:
    """The file of ``corpus_id``: ``corpora/corpus_id``, else ``corpora/corpus_id.md`` (Chroma's names)."""
    path = corpora / corpus_id
    if not path.is_file() and (corpora / f"{corpus_id}.md").is_file():
        path = corpora / f"{corpus_id}.md"
    return path


def read_corpus(path: Path) -> str:
    """A corpus as Chroma reads it: UTF-8 text with universal newlines."""
    with open(path, encoding="utf-8") as f:
        return f.read()


def content_format_of(path: Path) -> str:
    """The ``content_format`` of a corpus file, from its extension.

    Raises:
        InputError: An HTML or JSON (DoclingDocument) file.
    """
    ext = path.suffix.lower()
    if ext in REFUSED_EXTENSIONS:
        raise InputError(
            f"corpus {path.name}: {ext} corpora are not supported (their chunks are cut from a "
            f"rendering, so their ranges are not ranges of the file); use .md, .rst or .txt"
        )
    return FORMATS_BY_EXTENSION.get(ext, "text")


def load_inputs(corpora: Path, questions_csv: Path) -> tuple[list[Question], dict[str, Document]]:
    """Read the questions and the corpora they name; check every reference against its corpus.

    Raises:
        InputError: A missing file or column, bad JSON, a missing corpus, or a reference whose
            ``content`` is not ``corpus[start_index:end_index]``.
    """
    if not corpora.is_dir():
        raise InputError(f"--corpora {corpora}: not a directory")
    try:
        with open(questions_csv, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as err:
        raise InputError(f"--questions {questions_csv}: cannot read ({err.strerror or err})") from err
    if not rows:
        raise InputError(f"--questions {questions_csv}: no questions")
    missing = {"question", "references", "corpus_id"} - set(rows[0])
    if missing:
        raise InputError(f"--questions {questions_csv}: missing column {sorted(missing)[0]!r}")
    documents: dict[str, Document] = {}
    questions = []
    for line, row in enumerate(rows, start=2):
        where = f"{questions_csv.name} line {line}"
        corpus_id = row["corpus_id"]
        if corpus_id not in documents:
            path = corpus_path(corpora, corpus_id)
            if not path.is_file():
                raise InputError(f"{where}: corpus {corpus_id!r} not found in {corpora}")
            documents[corpus_id] = Document(
                id=corpus_id, content=read_corpus(path), content_format=content_format_of(path)
            )
        corpus = documents[corpus_id].content
        try:
            references = json.loads(row["references"])
            ranges = []
            for ref in references:
                start, end = int(ref["start_index"]), int(ref["end_index"])
                if corpus[start:end] != ref["content"] or not 0 <= start <= end <= len(corpus):
                    raise InputError(
                        f"{where}: reference [{start}:{end}] of {corpus_id} is not its content {ref['content'][:60]!r}"
                    )
                ranges.append((start, end))
        except (ValueError, TypeError, KeyError) as err:
            if isinstance(err, InputError):
                raise
            raise InputError(
                f"{where}: references must be a JSON list of {{content, start_index, end_index}} ({err})"
            ) from err
        if not ranges:
            raise InputError(f"{where}: no references")
        questions.append(Question(row["question"], corpus_id, tuple(ranges)))
    return questions, documents


# --------------------------------------------------------------------------- chunking


@dataclass(frozen=True)
class IndexedChunk:
    corpus_id: str
    ranges: tuple[Range, ...]
    embedding_text: str
    tokens: int
    unlocated_chars: int = 0  # code points of its lines not found in the corpus (DoclingChunker)


@dataclass
class ChunkedCorpora:
    label: str
    chunks: list[IndexedChunk]
    over_budget: int
    refused: dict[str, str]  # corpus_id -> reason of the ChunkingError
    located: int = 0  # chunks without offsets or spans, found by text search
    unlocated: int = 0  # such chunks not found (left out)
    converted: int = 0  # corpora converted to DoclingDocuments for a docling-only chunker
    lines: int = 0  # lines of such chunks, located line by line (locate_lines)
    missed_lines: list[str] = field(default_factory=list)  # those lines not found in their corpus
    missed_chars: int = 0  # their code points
    text_chars: int = 0  # code points of all such lines


def chunk_ranges(chunk) -> tuple[Range, ...] | None:
    """Source ranges of a chunk: its offsets, or its structure spans; ``None`` when it has neither."""
    if chunk.start_offset is not None:
        return ((chunk.start_offset, chunk.end_offset),)
    spans = (chunk.metadata.get("structure") or {}).get("spans")
    if spans:
        return tuple((int(a), int(b)) for a, b in spans)
    return None


def locate(corpus: str, text: str, start: int) -> Range | None:
    """Where ``text`` is in ``corpus`` with any whitespace between its words, case-insensitive.

    Chroma's ``find_query_despite_whitespace`` (``chunking_evaluation/utils.py``), searched from
    ``start`` (the end of the document's previous chunk), then from 0. For chunks that are not
    verbatim slices and carry no spans (``LangchainSemanticChunker`` rejoins sentences with
    single spaces).
    """
    words = text.split()
    if not words:
        return None
    pattern = re.compile(r"\s*".join(re.escape(w) for w in words), re.IGNORECASE)
    match = pattern.search(corpus, start) or pattern.search(corpus)
    return (match.start(), match.end()) if match else None


# --------------------------------------------------------------------------- DoclingChunker's route

#: Sphinx directives of the reST corpora (Python's documentation) that docutils does not know: an
#: object description (``.. function:: sig``, ``.. method::``, ``.. class::`` ...) or an admonition
#: (``.. versionadded:: 3.4``); rendered as the argument in a paragraph, then the parsed body.
SPHINX_DIRECTIVES = (
    "function",
    "method",
    "class",
    "exception",
    "attribute",
    "data",
    "module",
    "currentmodule",
    "decorator",
    "classmethod",
    "staticmethod",
    "versionadded",
    "versionchanged",
    "deprecated",
    "deprecated-removed",
    "seealso",
    "audit-event",
    "describe",
    "option",
    "envvar",
)
#: Sphinx directives that print nothing (index entries, author credits).
SPHINX_SILENT_DIRECTIVES = ("index", "sectionauthor", "moduleauthor", "toctree", "highlight")
#: Sphinx roles (``:func:`open```): rendered as their text in a literal.
SPHINX_ROLES = (
    "attr",
    "class",
    "data",
    "func",
    "meth",
    "mod",
    "exc",
    "const",
    "obj",
    "pep",
    "rfc",
    "program",
    "ref",
    "source",
    "file",
    "term",
    "envvar",
    "option",
    "keyword",
    "samp",
    "kbd",
    "doc",
    "abbr",
    "dfn",
    "menuselection",
    "command",
    "makevar",
    "mailheader",
    "mimetype",
    "newsgroup",
    "regexp",
)


def rst_to_html(text: str) -> str:
    """reST as HTML, by docutils, with Sphinx's directives and roles (:data:`SPHINX_DIRECTIVES`,
    :data:`SPHINX_ROLES`) rendered generically instead of as errors.

    Plain docutils would drop each unknown directive with its whole body (an error message that
    the report level filters out), i.e. most of an API page. A directive's options (``:synopsis:``)
    are left out, as Sphinx leaves them out of the page. Includes are not read; docutils' messages
    are left out of the HTML (``report_level`` 5).

    Raises:
        ImportError: docutils is not installed.
    """
    from collections import defaultdict

    from docutils import nodes
    from docutils.core import publish_string
    from docutils.parsers.rst import Directive, directives, roles
    from docutils.writers import html5_polyglot

    class AnyOption(defaultdict):  # every option accepted (and left out); truthy, so docutils reads options
        def __bool__(self) -> bool:
            return True

    any_option = AnyOption(lambda: directives.unchanged)

    class Description(Directive):
        has_content = True
        optional_arguments = 1
        final_argument_whitespace = True
        option_spec = any_option

        def run(self):
            out = []
            if self.arguments:  # the signature or version, with its inline markup parsed
                inline, _messages = self.state.inline_text(self.arguments[0], self.lineno)
                out.append(nodes.paragraph("", "", *inline))
            body = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, body)
            return out + list(body.children)

    class Silent(Description):
        def run(self):
            return []

    # docutils keeps its directives and roles in module-level registries: restore them afterwards,
    # so that no other docutils user in the process sees these (or loses docutils' own "class").
    saved = dict(directives._directives), dict(roles._roles)
    try:
        for name in SPHINX_DIRECTIVES:
            directives.register_directive(name, Description)
        for name in SPHINX_SILENT_DIRECTIVES:
            directives.register_directive(name, Silent)
        for name in SPHINX_ROLES:
            roles.register_generic_role(name, nodes.literal)
        settings = {"report_level": 5, "halt_level": 5, "file_insertion_enabled": False, "output_encoding": "unicode"}
        return publish_string(text, writer=html5_polyglot.Writer(), settings_overrides=settings)
    finally:
        for registry, before in zip((directives._directives, roles._roles), saved):
            registry.clear()
            registry.update(before)


_DOCLING_CACHE: dict[tuple[str, str], Document] = {}


@functools.lru_cache(maxsize=1)
def _file_converter():
    """The converter of ``rechunk parse`` (Docling's pipelines), built once, sending Markdown and
    HTML to Docling (``--format-for md=docling,html=docling``)."""
    from transforms.parsing import FileConverter

    return FileConverter(content_format="docling", format_for={"md": "docling", "html": "docling"})


def docling_document(document: Document) -> Document:
    """``document`` converted to a DoclingDocument (``content_format="docling"``) by Docling itself.

    Markdown goes through Docling's Markdown backend, as ``rechunk parse --format-for md=docling``
    converts a ``.md`` file;
    text too (it is read as Markdown: paragraphs stay paragraphs); reST first becomes HTML
    (:func:`rst_to_html`), then goes through Docling's HTML backend. Cached per document.

    Raises:
        ChunkingError: ``unsupported_content_format`` when Docling (the ``parse`` extra) or, for
            reST, docutils is not installed; ``conversion_failed`` when Docling fails.
    """
    key = (document.id, document.document_hash)
    if key in _DOCLING_CACHE:
        return _DOCLING_CACHE[key]
    try:
        from transforms.parsing import ParseFailure

        converter = _file_converter()
    except ImportError as err:
        raise ChunkingError("unsupported_content_format", f"Docling is not installed ({err})") from err
    if document.content_format == "rst":
        try:
            name, data = f"{document.id}.html", rst_to_html(document.content)
        except ImportError as err:
            raise ChunkingError(
                "unsupported_content_format", "reST needs docutils to become HTML: pip install docutils"
            ) from err
    else:
        name, data = f"{document.id}.md", document.content
    try:
        row = converter.convert(path=name, doc_id=document.id, data=data.encode("utf-8"))
    except ParseFailure as err:
        raise ChunkingError("conversion_failed", f"{err.reason}: {err.detail}") from err
    converted = Document(id=document.id, content=row["content"], content_format="docling")
    _DOCLING_CACHE[key] = converted
    return converted


_WORD = re.compile(r"[^\W_]+")  # letters and digits (no underscore: Markdown escapes "\_")
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")  # the "(url)" of a Markdown link "[text](url)"
#: Markup that may stand between two lines of one chunk in the source: a Markdown link's target
#: (with a title), a reST directive's marker, a reST role's name.
_GAP_MARKUP = re.compile(r"\]\([^)]*\)|\.\. [\w-]+::|:[\w-]+:")
_INLINE_MARKUP = "`*_[]\\"  # Markdown's inline markup characters and its escape


def _past_final_punctuation(corpus: str, end: int, line: str) -> int:
    """``end`` moved over the punctuation ``line`` ends with (``.``, ``).``), where ``corpus`` has
    it after ``end``, with inline markup (backticks, emphasis) between allowed."""
    tail = re.findall(r"[^\w\s]*$", _LINK_TARGET.sub("", line).rstrip())[0]
    position = end
    for char in (c for c in tail if c not in _INLINE_MARKUP):
        i = position
        while i < len(corpus) and corpus[i] in _INLINE_MARKUP and i - position < 3:
            i += 1
        if i >= len(corpus) or corpus[i] != char:
            break
        position = i + 1
    return position


#: Words of a corpus that a chunk line's next word may be looked for after the previous one's match
#: (skips a Markdown link's URL or other markup Docling left out of the item text).
ALIGN_GAP_WORDS = 30
#: Share of a line's words that must be found in order for :func:`align_words` to accept a match.
ALIGN_MIN_SHARE = 0.9


@functools.lru_cache(maxsize=16)
def _corpus_words(corpus: str) -> tuple[tuple[str, int, int], ...]:
    """``(word in lower case, start, end)`` of every word of ``corpus``, in order."""
    return tuple((m.group().lower(), m.start(), m.end()) for m in _WORD.finditer(corpus))


def align_words(corpus: str, line: str, start: int) -> Range | None:
    """Where the words of ``line`` are in ``corpus``, in order, with markup between them; or None.

    The fallback for a line whose text Docling changed beyond whitespace (Markdown emphasis,
    backticks, link targets and escapes removed; list markers rewritten; a link in the chunk as
    ``[text](url)`` whatever its form in the source). The target of a Markdown link in the line is
    left out (the source may have only its text, or only the URL); words are runs of letters and
    digits, compared case-insensitively. From each place in ``corpus`` where one of
    the line's first three words occurs, the line's following words are matched greedily, each
    within :data:`ALIGN_GAP_WORDS` words after the previous match (a word not found there is
    skipped); the best start (most words matched; the first in the corpus among equals, those
    at or after ``start`` tried first) is accepted when at least :data:`ALIGN_MIN_SHARE` of the
    line's words matched. The range runs from the first matched word's start to the last's end,
    and on over the punctuation the line ends with, where the source has it.
    Like Chroma's fuzzy fallback in ``rigorous_document_search`` (which accepts a sentence of
    token-sort ratio 98 or more), it finds text that is not a verbatim slice.
    """
    words = [w.lower() for w in _WORD.findall(_LINK_TARGET.sub("]", line))]
    if not words:
        return None
    corpus_words = _corpus_words(corpus)
    first_after = next((i for i, (_, a, _) in enumerate(corpus_words) if a >= start), len(corpus_words))
    need = max(1, -(-len(words) * int(ALIGN_MIN_SHARE * 100) // 100))
    for lo, hi in ((first_after, len(corpus_words)), (0, first_after)):
        best: tuple[int, int, int] | None = None  # (matched, first, last) corpus word indices
        for p in range(lo, hi):
            word = corpus_words[p][0]
            for j in range(min(3, len(words))):
                if words[j] != word:
                    continue
                last, matched = p, 1
                for w in words[j + 1 :]:
                    for q in range(last + 1, min(last + 1 + ALIGN_GAP_WORDS, len(corpus_words))):
                        if corpus_words[q][0] == w:
                            last, matched = q, matched + 1
                            break
                if best is None or matched > best[0]:
                    best = (matched, p, last)
                break
        if best is not None and best[0] >= need:
            return (corpus_words[best[1]][1], _past_final_punctuation(corpus, corpus_words[best[2]][2], line))
    return None


def locate_lines(corpus: str, text: str, start: int) -> tuple[list[Range], int, list[str]]:
    """The source ranges of a chunk that is not a slice, line by line: ``(ranges, lines, missed)``.

    A ``DoclingChunker`` chunk is its items' texts (Markdown markup removed, whitespace
    normalised), one per line, and a long item may be cut across chunks; so each line with a
    letter or digit (code fences and table rules have none) is located on its own, in order from
    the previous line's end: first as :func:`locate` finds text (whitespace and case ignored, as
    Chroma's ``find_query_despite_whitespace``), else by :func:`align_words`. Neighbouring ranges
    with no letter or digit between them but markup (blank lines, list markers, fences, a Markdown
    link's target, a reST directive marker or role name) are joined; a heading or any other text
    between two ranges is not. ``missed`` holds the lines not found.
    """
    found: list[Range] = []
    missed: list[str] = []
    lines = 0
    position = start
    for line in text.split("\n"):
        if not _WORD.search(line):
            continue
        lines += 1
        where = locate(corpus, line, position) or align_words(corpus, line, position)
        if where is None:
            missed.append(line)
            continue
        found.append(where)
        position = where[1]
    ranges: list[Range] = []
    for a, b in union_ranges(found):
        if ranges and not _WORD.search(_GAP_MARKUP.sub("", corpus[ranges[-1][1] : a])):
            ranges[-1] = (ranges[-1][0], b)
        else:
            ranges.append((a, b))
    return ranges, lines, missed


def chunk_corpora(spec: Mapping[str, Any], documents: Mapping[str, Document], tokenizer: Tokenizer) -> ChunkedCorpora:
    """Chunk every corpus with the routed chunker of ``spec``; keep chunks within its budget."""
    router = build_router(spec, tokenizer=tokenizer)
    result = ChunkedCorpora("", [], 0, {})
    chunks: list[IndexedChunk] = []
    over = located = unlocated = 0
    refused: dict[str, str] = {}
    used: list[str] = []
    for corpus_id in sorted(documents):
        document = documents[corpus_id]
        by_lines = False
        try:
            _, chunker = router.select(document)
            if chunker.name not in used:
                used.append(chunker.name)
            source = document
            if chunker.accepted_content_formats == frozenset({"docling"}) and document.content_format != "docling":
                source = docling_document(document)
                result.converted += 1
                by_lines = True
            produced = chunker.chunk(source, tokenizer_identity=tokenizer.identity)
        except ChunkingError as err:
            refused[corpus_id] = f"{err.reason}: {err.detail}"
            continue
        previous_end = 0
        for chunk in produced:
            ranges = chunk_ranges(chunk)
            missed_chars = 0
            if by_lines:
                found_lines, lines, missed = locate_lines(document.content, chunk.text, previous_end)
                missed_chars = sum(len(line.strip()) for line in missed)
                result.lines += lines
                result.missed_lines.extend(missed)
                result.missed_chars += missed_chars
                result.text_chars += sum(len(line.strip()) for line in chunk.text.split("\n") if _WORD.search(line))
                ranges = tuple(found_lines)
            elif ranges is None:
                found = locate(document.content, chunk.text, previous_end)
                if found is None:
                    unlocated += 1
                    continue
                located += 1
                ranges = (found,)
            if ranges:
                previous_end = ranges[-1][1]
            tokens = tokenizer.count(chunk.embedding_text)
            if tokens > spec["max_tokens"]:
                over += 1
                continue
            chunks.append(IndexedChunk(corpus_id, ranges, chunk.embedding_text, tokens, missed_chars))
    result.label = " + ".join(used)
    result.chunks, result.over_budget, result.refused = chunks, over, refused
    result.located, result.unlocated = located, unlocated
    return result


# --------------------------------------------------------------------------- embedding and retrieval


class _CachedEmbedder:
    """Embeds each distinct text once per run, in batches; rows normalised to unit length."""

    def __init__(self, embedder: Embedder, *, batch_size: int = 64) -> None:
        self.embedder = embedder
        self.batch_size = batch_size
        self.cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self.cache))
        for i in range(0, len(todo), self.batch_size):
            batch = todo[i : i + self.batch_size]
            vectors = self.embedder.embed(batch)
            if len(vectors) != len(batch):
                raise RuntimeError(f"embedder returned {len(vectors)} vectors for {len(batch)} texts")
            for text, vector in zip(batch, vectors):
                v = np.asarray(vector, dtype=np.float64)
                norm = np.linalg.norm(v)
                self.cache[text] = v / norm if norm else v
        if not texts:
            return np.zeros((0, 0))
        return np.stack([self.cache[t] for t in texts])


def top_k(question_vectors: np.ndarray, chunk_vectors: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` chunks of highest cosine similarity per question (rows unit length).

    Exact search; ties go to the lower index (a stable sort of the negated similarities).
    """
    similarities = question_vectors @ chunk_vectors.T
    return np.argsort(-similarities, axis=1, kind="stable")[:, :k]


# --------------------------------------------------------------------------- the run


@dataclass
class Row:
    chunker: str
    max_tokens: int
    chunks: int
    mean_tokens: float
    over_budget: int
    k: int
    recall: tuple[float, float] | None
    precision: tuple[float, float] | None
    iou: tuple[float, float] | None
    note: str = ""


def evaluate(
    questions: Sequence[Question],
    corpora: ChunkedCorpora,
    embed: _CachedEmbedder,
    question_vectors: np.ndarray,
    *,
    k: int,
    max_tokens: int,
) -> Row:
    """Retrieve and score every question against the pooled chunks of ``corpora``."""
    chunks = corpora.chunks
    note = ""
    if corpora.refused:
        total = len(corpora.refused) + len({c.corpus_id for c in chunks})
        reasons = sorted({reason.split(":")[0] for reason in corpora.refused.values()})
        note = f"refused {len(corpora.refused)} of {total} corpora: {', '.join(reasons)}"
    if corpora.located or corpora.unlocated:
        found = f"{corpora.located} chunks located by text search"
        if corpora.unlocated:
            found += f", {corpora.unlocated} not found and left out"
        note = f"{note}; {found}" if note else found
    if corpora.converted:
        found = (
            f"{corpora.converted} corpora converted by Docling; {corpora.lines - len(corpora.missed_lines)} of "
            f"{corpora.lines} chunk lines located by text search ({corpora.missed_chars} of {corpora.text_chars} "
            "code points not found)"
        )
        note = f"{note}; {found}" if note else found
    if not chunks:
        return Row(corpora.label, max_tokens, 0, 0.0, corpora.over_budget, k, None, None, None, note or "no chunks")
    chunk_vectors = embed([c.embedding_text for c in chunks])
    best = top_k(question_vectors, chunk_vectors, k)
    scores = np.array(
        [
            question_scores(
                q.references,
                q.corpus_id,
                [Retrieved(chunks[i].corpus_id, chunks[i].ranges, chunks[i].unlocated_chars) for i in best[n]],
            )
            for n, q in enumerate(questions)
        ]
    )
    iou, recall, precision = scores[:, 0], scores[:, 1], scores[:, 2]
    return Row(
        chunker=corpora.label,
        max_tokens=max_tokens,
        chunks=len(chunks),
        mean_tokens=float(np.mean([c.tokens for c in chunks])),
        over_budget=corpora.over_budget,
        k=k,
        recall=(float(np.mean(recall)), float(np.std(recall))),
        precision=(float(np.mean(precision)), float(np.std(precision))),
        iou=(float(np.mean(iou)), float(np.std(iou))),
        note=note,
    )


def _pct(value: tuple[float, float] | None) -> str:
    return "—" if value is None else f"{100 * value[0]:.1f} ± {100 * value[1]:.1f}"


def markdown_table(rows: Sequence[Row], *, tokenizer: str) -> str:
    """The rows as one Markdown table (scores in percent, mean ± std over the questions)."""
    lines = [
        "| chunker | max tokens | chunks | mean tokens | over budget (left out) | recall % | precision % | IoU % | k |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        name = r.chunker or "—"
        if r.note:
            name += f" ({r.note})"
        mean = f"{r.mean_tokens:.0f}" if r.chunks else "—"
        lines.append(
            f"| {name} | {r.max_tokens} | {r.chunks} | {mean} | {r.over_budget} | {_pct(r.recall)} | "
            f"{_pct(r.precision)} | {_pct(r.iou)} | {r.k} |"
        )
    lines.append("")
    lines.append(f"Tokens are `{tokenizer}` tokens of each chunk's `embedding_text`.")
    return "\n".join(lines) + "\n"


def _specs(args: argparse.Namespace, budgets: Sequence[int]) -> list[tuple[str, dict[str, Any]]]:
    """(label, resolved spec) per chunker and budget, in table order."""
    out = []
    if args.config:
        data = load_config(args.config)
        for budget in budgets:
            out.append(
                (args.config, resolve_config(data, tokenizer=args.tokenizer, max_tokens=budget, source=args.config))
            )
        return out
    names = args.chunker or list(CHUNKERS)
    for name in names:
        if name not in CHUNKERS:
            raise InputError(f"--chunker {name!r}: not one of {', '.join(sorted(CHUNKERS))}")
    if args.params is not None:
        try:
            params = json.loads(args.params)
        except ValueError as err:
            raise InputError(f"--params: not JSON ({err})") from err
        if not isinstance(params, dict):
            raise InputError(f"--params: must be a JSON object, got {args.params!r}")
    for name in names:
        for budget in budgets:
            chosen = params if args.params is not None else DEFAULT_PARAMS.get(name, {})
            data = {"chunkers": {"c": {"type": name, "params": dict(chosen)}}, "default": "c"}
            if "embeddings" in getattr(CHUNKERS[name], "model_parameters", ()):
                data["models"] = dict(LOCAL_MODELS)
            out.append(
                (name, resolve_config(data, tokenizer=args.tokenizer, max_tokens=budget, source=f"--chunker {name}"))
            )
    return out


def local_embedder() -> Embedder:
    """The local all-MiniLM-L6-v2 of the ``semantic`` extra (never downloads: HF_HUB_OFFLINE=1).

    Raises:
        InputError: The extra is not installed.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from transforms.models.local import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder()
    except (ImportError, ValueError) as err:
        raise InputError(f"the local embedder: {err}") from err


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--corpora", type=Path, default=DATA / "corpora", help="folder of corpus files (default: the shipped set)"
    )
    parser.add_argument(
        "--questions",
        type=Path,
        default=DATA / "questions.csv",
        help="Chroma-layout questions CSV (default: the shipped set)",
    )
    parser.add_argument("--config", help="a rechunk configuration file (instead of --chunker)")
    parser.add_argument("--chunker", action="append", help="a chunker class name; repeatable (default: every chunker)")
    parser.add_argument(
        "--params", help="JSON parameters for the --chunker classes (default: see the module docstring)"
    )
    parser.add_argument(
        "--tokenizer", default=None, help="as rechunk --tokenizer (default: the configuration's, tiktoken:cl100k_base)"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        nargs="+",
        default=[200, 400],
        help="budgets to run each chunker at (default: 200 400)",
    )
    parser.add_argument("--k", type=int, default=5, help="chunks retrieved per question (default: 5, Chroma's)")
    parser.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    if args.config and args.chunker:
        parser.error("give --config or --chunker, not both")
    if args.k < 1:
        parser.error(f"--k must be >= 1, got {args.k}")
    if any(b < 1 for b in args.max_tokens):
        parser.error(f"--max-tokens must be positive, got {args.max_tokens}")
    return args


def main(argv: Sequence[str] | None = None, *, embedder: Embedder | None = None) -> int:
    """Run the benchmark; ``embedder`` replaces the local model (tests pass a fake one)."""
    args = parse_args(argv)
    try:
        questions, documents = load_inputs(args.corpora, args.questions)
        specs = _specs(args, args.max_tokens)
        tokenizer_spec = specs[0][1]["tokenizer"]
        tokenizer = load_tokenizer(tokenizer_spec)
        if embedder is None:
            embedder = local_embedder()
    except (InputError, ConfigError, TokenizerError) as err:
        print(f"retrieval_quality: error: {err}", file=sys.stderr)
        return 2
    embed = _CachedEmbedder(embedder)
    question_vectors = embed([q.question for q in questions])
    rows = []
    for label, spec in specs:
        try:
            corpora = chunk_corpora(spec, documents, tokenizer)
        except (TypeError, ValueError) as err:  # e.g. SemanticChunker without a chat model
            if isinstance(err, InputError):
                raise
            reason = " ".join(str(err).split())[:160]
            rows.append(Row(label, spec["max_tokens"], 0, 0.0, 0, args.k, None, None, None, f"not run: {reason}"))
            print(f"retrieval_quality: {label} @ {spec['max_tokens']}: not run: {reason}", file=sys.stderr)
            continue
        corpora.label = corpora.label or label
        row = evaluate(questions, corpora, embed, question_vectors, k=args.k, max_tokens=spec["max_tokens"])
        rows.append(row)
        print(
            f"retrieval_quality: {row.chunker} @ {row.max_tokens}: {row.chunks} chunks, recall {_pct(row.recall)}",
            file=sys.stderr,
        )
    lines = header("sentence-transformers", "torch", "docling-slim", "docling-core", "docutils")
    lines.append(
        f"{len(questions)} questions over {len(documents)} corpora (`{shown(args.corpora)}`, "
        f"`{shown(args.questions)}`); embedder `{embedder.identity}`; k = {args.k}.\n"
    )
    write_markdown(args.out, "\n".join(lines) + "\n" + markdown_table(rows, tokenizer=tokenizer.identity))
    return 0


if __name__ == "__main__":
    sys.exit(main())
