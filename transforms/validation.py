"""Validation of chunks against the contract's promises, as data: keep, or reject with a reason.

Beam-free. :func:`validate_chunks` recounts every chunk's ``embedding_text`` with the budget
tokenizer (never trusting the chunker's own count) and checks the tokenizer identity, emptiness and
verbatim offsets. The Beam layer turns its verdicts into the main output and the dead letter.
"""

from __future__ import annotations

from dataclasses import dataclass

from transforms.documents import Chunk, DeadLetter, Document
from transforms.tokenizers import Tokenizer

__all__ = ["ValidationResult", "validate_chunks"]


@dataclass(frozen=True)
class ValidationResult:
    """The chunks of one document that passed (with recounted ``token_count``) and the rejected ones."""

    accepted: list[Chunk]
    rejected: list[DeadLetter]


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
    if not chunk.text.strip():
        return "empty_chunk", "chunk text is empty or whitespace only", 0
    start, end = chunk.start_offset, chunk.end_offset
    if (start is None) != (end is None) or (start is not None and content[start:end] != chunk.text):
        return (
            "offset_mismatch",
            f"content[{start}:{end}] is not the chunk's text ({len(chunk.text)} characters)",
            0,
        )
    count = tokenizer.count(chunk.embedding_text)
    if count > max_tokens:
        return "token_budget_exceeded", f"{count} tokens > max {max_tokens}", count
    return "", "", count


def validate_chunks(
    document: Document,
    chunks: list[Chunk],
    *,
    tokenizer: Tokenizer,
    tokenizer_identity: str,
    max_tokens: int,
) -> ValidationResult:
    """Check each chunk of ``document``; the first failing check decides its reason.

    Checks, in order: ``tokenizer_mismatch`` (the chunk's ``tokenizer`` is not
    ``tokenizer_identity``, or ``tokenizer`` itself is not), ``empty_chunk`` (text empty or
    whitespace only), ``offset_mismatch`` (only one offset set, or
    ``document.content[start_offset:end_offset] != text``), ``token_budget_exceeded``
    (``tokenizer.count(embedding_text) > max_tokens``).

    Args:
        document: The chunks' source document.
        chunks: Its chunks, in order.
        tokenizer: The budget tokenizer that recounts ``embedding_text``.
        tokenizer_identity: The job's tokenizer identity (the side input).
        max_tokens: The hard budget, in tokens of ``tokenizer``.

    Returns:
        Accepted chunks with ``token_count`` set to the recount, and dead-letter rows (stage
        ``validate``, payload the chunk's text).
    """
    accepted: list[Chunk] = []
    rejected: list[DeadLetter] = []
    for chunk in chunks:
        reason, detail, count = _problem(
            chunk, document.content, tokenizer=tokenizer, tokenizer_identity=tokenizer_identity,
            max_tokens=max_tokens,
        )
        if not reason:
            accepted.append(chunk.with_token_count(count))
            continue
        rejected.append(
            DeadLetter(
                document_id=chunk.document_id,
                chunk_id=chunk.chunk_id,
                stage="validate",
                reason=reason,
                detail=detail,
                payload=chunk.text,
                chunker=chunk.chunker,
                tokenizer=tokenizer_identity,
            )
        )
    return ValidationResult(accepted=accepted, rejected=rejected)
