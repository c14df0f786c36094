"""The Chunker base class: pieces in, numbered chunks with deterministic ids out.

Beam-free. A chunker subclass implements :meth:`Chunker.split`, yielding :class:`Piece` objects
for one :class:`~transforms.documents.Document`; :meth:`Chunker.chunk` owns everything else a
chunk is (its index, id, document hash, metadata, the chunker's name and configuration hash), so no
implementation can get identity wrong. This follows the ``Chunker`` base of the reference API.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from transforms.documents import Chunk, ChunkKeys, Document, chunk_id, document_hash

__all__ = ["Chunker", "ChunkingError", "Piece"]


class ChunkingError(Exception):
    """A document cannot be chunked; ``reason`` is the dead-letter code (see ``documents.REASONS``)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Piece:
    """What a chunker's ``split`` yields for one chunk.

    Attributes:
        text: The chunk's text as a reader sees it.
        start_offset: Code-point offset of ``text`` in the document's content, or ``None`` when
            ``text`` is not a verbatim slice (then ``end_offset`` is ``None`` too).
        end_offset: ``start_offset + len(text)``, or ``None``.
        embedding_text: What is embedded, when it differs from ``text`` (e.g. with a heading
            path); ``None`` means ``text``.
        headings: The heading path, outermost first.
        page_no: First page of the chunk's source items, where the source has pages.
        metadata: Chunker-specific keys merged over the document's metadata.
        content_format: The chunk's own format when it differs from the document's and the
            chunker's (e.g. Markdown rendered from HTML); ``None`` keeps theirs.
    """

    text: str
    start_offset: int | None = None
    end_offset: int | None = None
    embedding_text: str | None = None
    headings: tuple[str, ...] = ()
    page_no: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    content_format: str | None = None


class Chunker(ABC):
    """Splits one document into the units that get embedded.

    Subclasses set :attr:`accepted_content_formats`, implement :meth:`split` and :meth:`to_dict`,
    and check their parameters in ``__init__`` (keyword-only), raising ``ValueError`` with the
    value received.
    """

    #: Content formats this chunker accepts; ``None`` accepts any.
    accepted_content_formats: ClassVar[frozenset[str] | None] = None
    #: Overrides the document's ``content_format`` on every chunk (``None`` keeps it).
    content_format: ClassVar[str | None] = None
    #: Installed distributions, beyond ``transforms.incremental.CHUNKING_LIBRARIES``, whose version
    #: can change this chunker's chunks: in the input fingerprint of the documents routed to it.
    fingerprint_libraries: ClassVar[tuple[str, ...]] = ()
    #: Parameters that take a model; in a configuration file they name one under ``models:``.
    model_parameters: ClassVar[tuple[str, ...]] = ()

    def close(self) -> None:
        """Release what the chunker holds: ``close()`` of each model in :attr:`model_parameters`.

        Idempotent. Models are shared by the chunkers that name them, so each model's ``close()``
        is idempotent too, and a closed model opens what it needs again if it is used.
        """
        for parameter in self.model_parameters:
            close = getattr(getattr(self, parameter, None), "close", None)
            if callable(close):
                close()

    @property
    def name(self) -> str:
        """The chunker's class name, written in every chunk's ``chunker`` column."""
        return type(self).__name__

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """Return the keyword arguments that rebuild this chunker with :meth:`from_dict`.

        The tokenizer is not among them: it is injected, and its identity is in :meth:`config`.
        """

    @classmethod
    def from_dict(cls, params: Mapping[str, Any], *, tokenizer=None) -> Chunker:
        """Build a chunker from :meth:`to_dict` output and an injected tokenizer.

        Raises:
            TypeError: A parameter name is unknown.
            ValueError: A parameter value is out of range.
        """
        # A subclass's own keyword-only constructor, not ABC's (which takes no arguments).
        build: Callable[..., Chunker] = cls
        if cls.uses_tokenizer():
            return build(**params, tokenizer=tokenizer)
        return build(**params)

    @classmethod
    def budget_parameter(cls, params: Mapping[str, Any]) -> str | None:
        """The parameter that holds a token budget under ``params``, if any (``None`` here).

        The job fills it with its own ``max_tokens`` when a configuration leaves it out.
        """
        return None

    @classmethod
    def uses_tokenizer(cls) -> bool:
        """Whether the constructor takes a ``tokenizer`` keyword."""
        import inspect

        return "tokenizer" in inspect.signature(cls.__init__).parameters

    def config(self) -> dict[str, Any]:
        """The configuration that decides this chunker's output: parameters plus tokenizer identity."""
        config = dict(self.to_dict())
        tokenizer = getattr(self, "tokenizer", None)
        if tokenizer is not None:
            config["tokenizer"] = tokenizer.identity
        return config

    @cached_property
    def config_hash(self) -> str:
        """sha256 hex of the class name and :meth:`config` as canonical JSON; stable across processes."""
        blob = json.dumps({"class": self.name, "config": self.config()}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def validate_input(self, document: Document) -> None:
        """Refuse a document whose content format this chunker does not accept.

        Raises:
            ChunkingError: ``unsupported_content_format``.
        """
        accepted = self.accepted_content_formats
        if accepted is not None and document.content_format not in accepted:
            raise ChunkingError(
                "unsupported_content_format",
                f"{self.name} accepts {sorted(accepted)}, not {document.content_format!r}",
            )

    @abstractmethod
    def split(self, document: Document) -> Iterator[Piece]:
        """Yield the pieces of ``document`` in reading order.

        Whitespace-only pieces are dropped by :meth:`chunk` before numbering.

        Raises:
            ChunkingError: The document cannot be split (with its reason code).
        """

    def chunk(self, document: Document, *, tokenizer_identity: str) -> list[Chunk]:
        """Split ``document`` and build its chunks, numbered from 0 in reading order.

        Args:
            document: The document to chunk.
            tokenizer_identity: The identity of the tokenizer the chunks' budget is meant for;
                written in every chunk's ``tokenizer`` column and checked again by validation.

        Returns:
            The chunks, with ``token_count`` 0 until validation recounts it. An empty list means
            the document had no text to chunk.

        Raises:
            ChunkingError: The document is refused or cannot be split.
        """
        return self.chunk_with_source(document, tokenizer_identity=tokenizer_identity)[0]

    def chunk_with_source(self, document: Document, *, tokenizer_identity: str) -> tuple[list[Chunk], str]:
        """Like :meth:`chunk`, and also return the text the chunks were cut from.

        That is ``document.content`` here; a chunker that renders the document first (e.g. HTML
        or a DoclingDocument as Markdown) returns its rendering, which validation needs to check
        the chunks' source intervals.
        """
        chunks, source = self.stream_with_source(document, tokenizer_identity=tokenizer_identity)
        return list(chunks), source

    def stream_with_source(self, document: Document, *, tokenizer_identity: str) -> tuple[Iterator[Chunk], str]:
        """Like :meth:`chunk_with_source`, with the chunks as an iterator that builds them one by one.

        The job validates and writes each chunk as it comes, so that a huge document's chunks are
        never all held at once. The document is refused here, before any chunk is built; other
        errors (``ChunkingError`` included) may come from the iterator, at any chunk.

        Raises:
            ChunkingError: ``unsupported_content_format``, or what the chunker finds before
                its first chunk.
        """
        self.validate_input(document)
        return self.iter_chunks(document, self.split(document), tokenizer_identity), document.content

    def build_chunks(self, document: Document, pieces: Iterable[Piece], tokenizer_identity: str) -> list[Chunk]:
        """Number ``pieces`` into chunks with ids, hashes and metadata; whitespace-only pieces are dropped."""
        return list(self.iter_chunks(document, pieces, tokenizer_identity))

    def iter_chunks(self, document: Document, pieces: Iterable[Piece], tokenizer_identity: str) -> Iterator[Chunk]:
        """:meth:`build_chunks`, one chunk at a time."""
        doc_hash = document_hash(document.content)
        config_hash = self.config_hash
        default_format = self.content_format or document.content_format
        index = 0
        keys = ChunkKeys(document.id)
        new, name = object.__new__, self.name
        for piece in pieces:
            if not piece.text or piece.text.isspace():  # (not piece.text.strip(), without a copy)
                continue
            # Chunk(**fields) without the frozen dataclass's __init__ (one object.__setattr__ per
            # field): the same object, a few microseconds less per chunk.
            embedding_text = piece.text if piece.embedding_text is None else piece.embedding_text
            chunk = new(Chunk)
            chunk.__dict__.update(
                chunk_id=chunk_id(document.id, index, piece.text),
                document_id=document.id,
                chunk_index=index,
                text=piece.text,
                embedding_text=embedding_text,
                token_count=0,
                tokenizer=tokenizer_identity,
                start_offset=piece.start_offset,
                end_offset=piece.end_offset,
                headings=tuple(piece.headings),
                page_no=piece.page_no,
                content_format=piece.content_format or default_format,
                chunker=name,
                chunker_config_hash=config_hash,
                document_hash=doc_hash,
                metadata={**document.metadata, **piece.metadata},
                chunk_key=keys.next(embedding_text),
            )
            yield chunk
            index += 1
