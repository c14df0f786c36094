"""What the plain-text splitters split: the content, or a DoclingDocument's Markdown rendering.

Beam-free. A document in ``docling`` format (DoclingDocument JSON) is rendered as Markdown by
the structure engine's normalizer (:func:`~transforms.structure.normalizers.docling.normalize_docling`,
the rendering the structure chunkers cut DoclingDocuments from), and that rendering is split as
text. Its chunks are slices of the rendering, not of the JSON, so, as for the structure chunkers'
HTML and DoclingDocument chunks, their offsets are null, their metadata names the span they
were cut from (``source_spans``: ``[[start, end]]``, code points of the rendering), and their
``content_format`` is ``markdown``. :meth:`TextSplitter.stream_with_source` hands the rendering
to validation, which checks every chunk against its span.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator
from typing import ClassVar

from transforms.chunkers.base import Chunker, ChunkingError, Piece
from transforms.chunkers.text.spans import PLAIN_FORMATS
from transforms.documents import Chunk, Document

__all__ = ["SOURCE_SPANS", "SPLITTER_FORMATS", "TextSplitter", "render_docling"]

#: The formats the plain-text splitters accept: the plain ones as text, ``docling`` rendered.
SPLITTER_FORMATS = PLAIN_FORMATS | {"docling"}
#: The metadata key naming a rendered chunk's span of the rendering.
SOURCE_SPANS = "source_spans"
_RENDERED_FORMAT = "markdown"


def render_docling(content: str) -> str:
    """The Markdown rendering of a DoclingDocument given as JSON (``""`` when nothing renders).

    Raises:
        ChunkingError: ``invalid_docling_json`` when the content is not a valid DoclingDocument.
    """
    from transforms.structure.normalizers.docling import normalize_docling
    from transforms.structure.tree import NormalizationError

    try:
        return normalize_docling(content).text
    except NormalizationError as err:
        raise ChunkingError(err.reason, err.detail) from err


def _rendered(pieces: Iterable[Piece]) -> Iterator[Piece]:
    """``pieces`` of a rendering as chunks of the document: offsets moved into ``source_spans``."""
    for piece in pieces:
        yield Piece(
            text=piece.text,
            metadata={SOURCE_SPANS: [[piece.start_offset, piece.end_offset]]},
            content_format=_RENDERED_FORMAT,
        )


class TextSplitter(Chunker):
    """A splitter of plain text that also takes DoclingDocuments, through their Markdown rendering.

    Subclasses implement :meth:`split_text` over a string, yielding verbatim slices with offsets.
    """

    accepted_content_formats: ClassVar[frozenset[str] | None] = SPLITTER_FORMATS

    @abstractmethod
    def split_text(self, text: str) -> Iterator[Piece]:
        """Yield the pieces of ``text`` in order, each a slice with its code-point offsets."""

    def split(self, document: Document) -> Iterator[Piece]:
        """The pieces of ``document.content``; for ``docling``, of its rendering (offsets in ``source_spans``).

        Raises:
            ChunkingError: ``invalid_docling_json``; ``chunker_error`` when a separator's
                regular expression runs out of time on the document.
        """
        if document.content_format == "docling":
            yield from _rendered(self.split_text(render_docling(document.content)))
        else:
            yield from self.split_text(document.content)

    def stream_with_source(self, document: Document, *, tokenizer_identity: str) -> tuple[Iterator[Chunk], str]:
        """As :meth:`Chunker.stream_with_source`; a DoclingDocument is rendered here, once, and the
        rendering is the source returned (what ``source_spans`` index).

        Raises:
            ChunkingError: ``unsupported_content_format``; ``invalid_docling_json``.
        """
        if document.content_format != "docling":
            return super().stream_with_source(document, tokenizer_identity=tokenizer_identity)
        self.validate_input(document)
        rendering = render_docling(document.content)
        return self.iter_chunks(document, _rendered(self.split_text(rendering)), tokenizer_identity), rendering
