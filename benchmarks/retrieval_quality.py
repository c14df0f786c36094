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
  no range of the file could be compared. For the same reason ``DoclingChunker``, which accepts
  only DoclingDocuments, refuses every corpus; its row says so.
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

Output: a Markdown table (one row per chunker and budget) printed and written to ``--output``.

    python benchmarks/retrieval_quality.py --max-tokens 200 400 --output results.md

Exit status 2 with one line on stderr for a bad option or input.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

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
    """One retrieved chunk: its corpus and its source ranges (one for a verbatim slice)."""

    corpus_id: str
    ranges: tuple[Range, ...]


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
    precision_denominator = sum(sum_of_ranges(chunk.ranges) for chunk in retrieved)
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
                        f"{where}: reference [{start}:{end}] of {corpus_id} is not its content "
                        f"{ref['content'][:60]!r}"
                    )
                ranges.append((start, end))
        except (ValueError, TypeError, KeyError) as err:
            if isinstance(err, InputError):
                raise
            raise InputError(f"{where}: references must be a JSON list of {{content, start_index, end_index}} ({err})") from err
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


@dataclass
class ChunkedCorpora:
    label: str
    chunks: list[IndexedChunk]
    over_budget: int
    refused: dict[str, str]  # corpus_id -> reason of the ChunkingError
    located: int = 0  # chunks without offsets or spans, found by text search
    unlocated: int = 0  # such chunks not found (left out)


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


def chunk_corpora(spec: Mapping[str, Any], documents: Mapping[str, Document], tokenizer: Tokenizer) -> ChunkedCorpora:
    """Chunk every corpus with the routed chunker of ``spec``; keep chunks within its budget."""
    router = build_router(spec, tokenizer=tokenizer)
    chunks: list[IndexedChunk] = []
    over = located = unlocated = 0
    refused: dict[str, str] = {}
    used: list[str] = []
    for corpus_id in sorted(documents):
        document = documents[corpus_id]
        try:
            _, chunker = router.select(document)
            if chunker.name not in used:
                used.append(chunker.name)
            produced = chunker.chunk(document, tokenizer_identity=tokenizer.identity)
        except ChunkingError as err:
            refused[corpus_id] = f"{err.reason}: {err.detail}"
            continue
        previous_end = 0
        for chunk in produced:
            ranges = chunk_ranges(chunk)
            if ranges is None:
                found = locate(document.content, chunk.text, previous_end)
                if found is None:
                    unlocated += 1
                    continue
                located += 1
                ranges = (found,)
            previous_end = ranges[-1][1]
            tokens = tokenizer.count(chunk.embedding_text)
            if tokens > spec["max_tokens"]:
                over += 1
                continue
            chunks.append(IndexedChunk(corpus_id, ranges, chunk.embedding_text, tokens))
    return ChunkedCorpora(" + ".join(used), chunks, over, refused, located, unlocated)


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
    if not chunks:
        return Row(corpora.label, max_tokens, 0, 0.0, corpora.over_budget, k, None, None, None, note or "no chunks")
    chunk_vectors = embed([c.embedding_text for c in chunks])
    best = top_k(question_vectors, chunk_vectors, k)
    scores = np.array(
        [
            question_scores(
                q.references, q.corpus_id, [Retrieved(chunks[i].corpus_id, chunks[i].ranges) for i in best[n]]
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
        f"| chunker | max tokens | chunks | mean tokens | over budget (left out) | recall % | precision % | IoU % | k |",
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
            out.append((args.config, resolve_config(data, tokenizer=args.tokenizer, max_tokens=budget, source=args.config)))
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
            out.append((name, resolve_config(data, tokenizer=args.tokenizer, max_tokens=budget, source=f"--chunker {name}")))
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
    parser.add_argument("--corpora", type=Path, default=DATA / "corpora", help="folder of corpus files (default: the shipped set)")
    parser.add_argument("--questions", type=Path, default=DATA / "questions.csv", help="Chroma-layout questions CSV (default: the shipped set)")
    parser.add_argument("--config", help="a rechunk configuration file (instead of --chunker)")
    parser.add_argument("--chunker", action="append", help="a chunker class name; repeatable (default: every chunker)")
    parser.add_argument("--params", help="JSON parameters for the --chunker classes (default: see the module docstring)")
    parser.add_argument("--tokenizer", default=None, help="as rechunk --tokenizer (default: the configuration's, tiktoken:cl100k_base)")
    parser.add_argument("--max-tokens", type=int, nargs="+", default=[200, 400], help="budgets to run each chunker at (default: 200 400)")
    parser.add_argument("--k", type=int, default=5, help="chunks retrieved per question (default: 5, Chroma's)")
    parser.add_argument("--output", type=Path, help="also write the table to this file")
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
        print(f"retrieval_quality: {row.chunker} @ {row.max_tokens}: {row.chunks} chunks, recall {_pct(row.recall)}", file=sys.stderr)
    header = (
        f"{len(questions)} questions over {len(documents)} corpora ({args.questions.name}); "
        f"embedder `{embedder.identity}`; k = {args.k}; Python {platform.python_version()}\n\n"
    )
    table = header + markdown_table(rows, tokenizer=tokenizer.identity)
    print(table)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
