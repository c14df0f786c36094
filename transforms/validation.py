"""Validation of chunks against the contract's promises, as data: keep, or reject with a reason.

Beam-free. :func:`validate_chunks` recounts every chunk's ``embedding_text`` with the budget
tokenizer (never trusting the chunker's own count) and checks the tokenizer identity, emptiness and
verbatim offsets. Chunks of the structure chunkers are also checked as a whole by
:func:`transforms.structure.validation.validate_structure_chunks` (spans, embedding text,
overlap, coverage of the source). The Beam layer turns the verdicts into the main output and the
dead letter, and the structure counts into the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from transforms.documents import Chunk, DeadLetter, Document, dumps_metadata
from transforms.stores.limits import store_limit_problem
from transforms.structure.validation import ChunkValidation, StructureValidator, has_structure
from transforms.tokenizers import Tokenizer

__all__ = ["DocumentValidator", "ValidationResult", "validate_chunks"]


@dataclass(frozen=True)
class ValidationResult:
    """The chunks of one document that passed (with recounted ``token_count``) and the rejected ones.

    ``rejected`` holds one row per rejected chunk, then any document-level row (``chunk_id``
    null, payload the whole content, e.g. ``incomplete_coverage``). ``structure`` is the
    structure validation when the chunks came from a structure chunker.
    """

    accepted: list[Chunk]
    rejected: list[DeadLetter]
    structure: ChunkValidation | None = None


def _is_slice(content: str, start: int, end: int, text: str) -> bool:
    """``content[start:end] == text``, compared in place (Python's slice semantics for the offsets)."""
    if not 0 <= start <= end <= len(content):
        return content[start:end] == text  # negative or out-of-range offsets: as slicing has them
    return end - start == len(text) and content.startswith(text, start)


def _spans_problem(source: str, spans: object, text: str) -> str:
    """Why ``spans`` (``[[start, end], ...]`` of ``source``) do not give ``text``; ``""`` when they do."""
    if not isinstance(spans, list) or not spans:
        return f"source_spans must be a non-empty list of [start, end], got {str(spans)[:80]}"
    pieces = []
    for span in spans:
        if not (
            isinstance(span, list)
            and len(span) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in span)
            and 0 <= span[0] <= span[1] <= len(source)
        ):
            return f"source_spans holds {str(span)[:80]}, not [start, end] within the {len(source)}-character rendering"
        pieces.append(source[span[0] : span[1]])
    if "".join(pieces) != text:
        return f"the rendering's source_spans {str(spans)[:80]} are not the chunk's text ({len(text)} characters)"
    return ""


def _problem(
    chunk: Chunk, content: str, *, tokenizer: Tokenizer, tokenizer_identity: str, max_tokens: int
) -> tuple[str, str, int]:
    """``(reason, detail, token_count)`` of one chunk; ``reason`` is ``""`` when it passes."""
    if chunk.tokenizer != tokenizer_identity or tokenizer.identity != tokenizer_identity:
        return (
            "tokenizer_mismatch",
            f"chunk made for tokenizer {chunk.tokenizer}, worker has {tokenizer.identity}, "
            f"job expects {tokenizer_identity}",
            0,
        )
    text = chunk.text
    if not text or text.isspace():  # (no stripped copy of the text)
        return "empty_chunk", "chunk text is empty or whitespace only", 0
    start, end = chunk.start_offset, chunk.end_offset
    if (start is None) != (end is None) or (
        start is not None and end is not None and not _is_slice(content, start, end, text)
    ):
        return (
            "offset_mismatch",
            f"content[{start}:{end}] is not the chunk's text ({len(chunk.text)} characters)",
            0,
        )
    count = tokenizer.count(chunk.embedding_text)
    if count > max_tokens:
        return "token_budget_exceeded", f"{count} tokens > max {max_tokens}", count
    return "", "", count


def _store_problem(store: str, chunk: Chunk) -> str | None:
    """Why the configured vector store cannot hold ``chunk`` (:mod:`transforms.stores.limits`)."""
    return store_limit_problem(
        store,
        document_id=chunk.document_id,
        chunk_id=chunk.chunk_id,
        text=chunk.text,
        embedding_text=chunk.embedding_text,
        metadata=dumps_metadata(chunk.metadata),
    )


class DocumentValidator:
    """Running validation of one document's chunks, fed one at a time in reading order.

    Each chunk gets its verdict as it comes (:meth:`check`), so a document's chunks never have to
    be held together; :meth:`finish` gives the document-level rows (``incomplete_coverage``) and
    the structure validation. Feeding a document's chunks gives exactly what
    :func:`validate_chunks` returns for them, with one difference for a chunker that mixes
    chunks with and without structure metadata: the first chunk decides whether the structure
    checks run (``validate_chunks`` runs them when every chunk has structure metadata), and a
    later chunk without it is then rejected (``offset_mismatch``).

    Args: as :func:`validate_chunks`, without ``chunks``, and ``store``: the configured vector
    store's type, whose limits (:func:`transforms.stores.limits.store_limit_problem`) a chunk must
    keep, else it is rejected as ``exceeds_store_limit``; ``None`` for no store.
    """

    def __init__(
        self,
        document: Document,
        *,
        tokenizer: Tokenizer,
        tokenizer_identity: str,
        max_tokens: int,
        source: str | None = None,
        structure_limits: Mapping[str, int] | None = None,
        store: str | None = None,
    ) -> None:
        self._document = document
        self._store = store
        self._tokenizer = tokenizer
        self._identity = tokenizer_identity
        self._max_tokens = max_tokens
        self._source = document.content if source is None else source
        # Chunks cut from a rendering (not the content) name their spans of it: checked here.
        self._rendered = source is not None and source is not document.content
        self._limits = dict(structure_limits or {})
        self._structure: StructureValidator | None = None
        self._chunker: str | None = None

    def check(self, chunk: Chunk) -> tuple[Chunk | None, DeadLetter | None]:
        """``(accepted chunk with token_count recounted, None)`` or ``(None, dead-letter row)``.

        Raises:
            Exception: Whatever the tokenizer raises on the chunk's text.
        """
        tokenizer = self._tokenizer
        reason, detail, count = _problem(
            chunk,
            self._document.content,
            tokenizer=tokenizer,
            tokenizer_identity=self._identity,
            max_tokens=self._max_tokens,
        )
        if self._chunker is None:
            self._chunker = chunk.chunker
            if has_structure(chunk):
                self._structure = StructureValidator(
                    self._source, tokenizer=tokenizer, max_tokens=self._max_tokens, **self._limits
                )
        if self._structure is not None:
            problems = self._structure.check(
                chunk, count if count or not reason else tokenizer.count(chunk.embedding_text)
            )
            if problems and not reason:
                reason, detail = problems[0].reason, problems[0].detail
        elif not reason and self._rendered and chunk.start_offset is None and "source_spans" in chunk.metadata:
            detail = _spans_problem(self._source, chunk.metadata["source_spans"], chunk.text)
            reason = "offset_mismatch" if detail else ""
        if not reason and self._store is not None:
            problem = _store_problem(self._store, chunk)
            if problem:
                reason, detail = "exceeds_store_limit", problem
        if not reason:
            return chunk.with_token_count(count), None
        return None, DeadLetter(
            document_id=chunk.document_id,
            chunk_id=chunk.chunk_id,
            stage="validate",
            reason=reason,
            detail=detail,
            payload=chunk.text,
            chunker=chunk.chunker,
            tokenizer=self._identity,
        )

    def finish(self) -> tuple[list[DeadLetter], ChunkValidation | None]:
        """Document-level dead-letter rows (payload the whole content) and the structure validation."""
        if self._structure is None:
            return [], None
        structure = self._structure.finish()
        rows = [
            DeadLetter(
                self._document.id,
                "validate",
                problem.reason,
                problem.detail,
                self._document.content,
                self._identity,
                chunker=self._chunker,
            )
            for problem in structure.problems
            if problem.chunk_index is None
        ]
        return rows, structure


def validate_chunks(
    document: Document,
    chunks: list[Chunk],
    *,
    tokenizer: Tokenizer,
    tokenizer_identity: str,
    max_tokens: int,
    source: str | None = None,
    structure_limits: Mapping[str, int] | None = None,
) -> ValidationResult:
    """Check each chunk of ``document``; the first failing check decides its reason.

    Checks, in order: ``tokenizer_mismatch`` (the chunk's ``tokenizer`` is not
    ``tokenizer_identity``, or ``tokenizer`` itself is not), ``empty_chunk`` (text empty or
    whitespace only), ``offset_mismatch`` (only one offset set, or
    ``document.content[start_offset:end_offset] != text``), ``token_budget_exceeded``
    (``tokenizer.count(embedding_text) > max_tokens``), then for structure chunks the checks of
    :class:`~transforms.structure.validation.StructureValidator`, and for other chunks cut from
    ``source`` (null offsets, a ``source_spans`` metadata key) ``offset_mismatch`` when those
    spans of ``source`` are not the chunk's text. The chunks are fed to a
    :class:`DocumentValidator`; the job does that itself, a chunk at a time.

    Args:
        document: The chunks' source document.
        chunks: Its chunks, in order.
        tokenizer: The budget tokenizer that recounts ``embedding_text``.
        tokenizer_identity: The job's tokenizer identity (the side input).
        max_tokens: The hard budget, in tokens of ``tokenizer``.
        source: The text the chunks were cut from when it is not ``document.content`` (a
            rendering of HTML or a DoclingDocument); used for structure chunks and ``source_spans``.
        structure_limits: ``max_overlap_tokens`` and ``min_preferred_tokens`` of the structure
            chunker, for :func:`validate_structure_chunks` (its defaults otherwise).

    Returns:
        Accepted chunks with ``token_count`` set to the recount, and dead-letter rows (stage
        ``validate``, payload the chunk's text).
    """
    validator = DocumentValidator(
        document,
        tokenizer=tokenizer,
        tokenizer_identity=tokenizer_identity,
        max_tokens=max_tokens,
        source=source,
        structure_limits=structure_limits,
    )
    accepted: list[Chunk] = []
    rejected: list[DeadLetter] = []
    for chunk in chunks:
        ok, row = validator.check(chunk)
        if ok is not None:
            accepted.append(ok)
        elif row is not None:
            rejected.append(row)
    document_rows, structure = validator.finish()
    return ValidationResult(accepted=accepted, rejected=rejected + document_rows, structure=structure)
