"""DoclingChunker: structure-aware chunks of a parsed DoclingDocument.

Beam-free. Wraps docling-core's own chunkers, which are the source of the algorithm:

* ``HierarchicalChunker`` (``docling_core/transforms/chunker/hierarchical_chunker.py``): one chunk
  per document element (paragraph, whole list, whole table as "row, column = value" triplets),
  with the path of enclosing headings; no size limit.
* ``HybridChunker`` (``docling_core/transforms/chunker/hybrid_chunker.py``): the hierarchical
  chunks, split along element boundaries and then as plain text (``semchunk``) until the
  *contextualized* text (heading path + text) fits ``max_tokens``, then neighbours under the same
  headings merged back up to the budget (``merge_peers``).

Token counts are those of the injected :class:`~transforms.tokenizers.Tokenizer` (its ``count``,
ordinary text: a literal ``<|endoftext|>`` is just characters), handed to docling-core through a
small ``BaseTokenizer`` adapter. The configuration follows ai4rag's ``DoclingChunker``
(``max_tokens=8192``, ``contextualize=True``, ``merge_peers=True``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator, Mapping
from functools import cached_property
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from transforms.chunkers.base import Chunker, ChunkingError, Piece
from transforms.documents import Document
from transforms.structure.normalizers.docling import parse_docling
from transforms.structure.tree import NormalizationError
from transforms.tokenizers import Tokenizer

if TYPE_CHECKING:  # docling-core is imported on first use (see _docling)
    from docling_core.types.doc import DoclingDocument

__all__ = ["DoclingChunker"]

_DOCLING_INSTALL_HINT = (
    "The 'docling-core' package (with its chunking-openai extra) is required by DoclingChunker. "
    "Install rechunk as its README says, or `pip install 'docling-core[chunking-openai]'`."
)
_CHUNKERS = ("hybrid", "hierarchical")
_DETAIL_CHARS = 200


@functools.lru_cache(maxsize=1)
def _docling() -> SimpleNamespace:
    """docling-core's chunker classes and semchunk, imported on first use.

    Not at module import: importing ``docling_core.transforms.chunker`` (any of its modules runs
    the package's ``__init__``) imports ``HybridChunker``'s Hugging Face tokenizer module, which
    imports transformers and, when the ``semantic`` extra is installed, torch: about 2 s in the
    launcher and in every worker, whether or not a DoclingDocument is ever chunked.

    Raises:
        ImportError: docling-core or semchunk is missing (with the install hint).
    """
    try:
        import semchunk.semchunk as semchunk_module
        from docling_core.transforms.chunker.hierarchical_chunker import HierarchicalChunker
        from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
        from docling_core.transforms.chunker.tokenizer.base import BaseTokenizer
        from docling_core.types.doc import RefItem
        from pydantic import ConfigDict
    except ImportError as err:
        raise ImportError(_DOCLING_INSTALL_HINT) from err

    class _BudgetTokenizer(BaseTokenizer):
        """docling-core's tokenizer interface over one of our tokenizers.

        ``count_tokens`` is our tokenizer's ``count`` (ordinary text; docling's own
        ``OpenAITokenizer`` calls ``encode``, which raises on a literal ``<|endoftext|>``).
        ``get_tokenizer`` returns that same counting callable: ``HybridChunker`` hands it to
        ``semchunk.chunkerify``, which accepts any ``Callable[[str], int]``.
        """

        model_config = ConfigDict(arbitrary_types_allowed=True)

        tokenizer: Any
        max_tokens: int

        def count_tokens(self, text: str) -> int:
            """Tokens of ``text`` under the wrapped tokenizer."""
            return self.tokenizer.count(text)

        def get_max_tokens(self) -> int:
            """The budget of one chunk's contextualized text, in tokens."""
            return self.max_tokens

        def get_tokenizer(self) -> Any:
            """The token counter given to ``semchunk.chunkerify``."""
            return self.tokenizer.count

    return SimpleNamespace(
        semchunk=semchunk_module,
        HierarchicalChunker=HierarchicalChunker,
        HybridChunker=HybridChunker,
        BudgetTokenizer=_BudgetTokenizer,
        RefItem=RefItem,
    )


def _one_line(text: str) -> str:
    """Collapse whitespace and cut ``text`` to about :data:`_DETAIL_CHARS` characters."""
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


class DoclingChunker(Chunker):
    """Split a DoclingDocument (``content_format="docling"``) with docling-core's own chunkers.

    Wraps docling-core's ``HybridChunker`` (``chunker="hybrid"``) or ``HierarchicalChunker``
    (``chunker="hierarchical"``); the algorithm is theirs. Each docling chunk becomes one
    :class:`~transforms.chunkers.base.Piece`:

    * ``text``: the chunk's text (docling's chunking serialization: Markdown-ish lists, tables as
      ``"row, column = value"`` triplets), not a slice of ``content``, so both offsets are ``None``.
    * ``embedding_text``: ``contextualize(chunk)``, i.e. the heading path and the text joined by
      ``"\\n"``, when ``contextualize`` is true; else the text itself.
    * ``headings``: the heading path, outermost first (empty outside any heading).
    * ``page_no``: the first ``page_no`` in the provenance of the chunk's items, ``None`` when they
      have none (DOCX, HTML).
    * ``metadata``: ``{"doc_items": [self_ref, ...]}`` (e.g. ``"#/texts/12"``), plus
      ``"captions": [str, ...]`` when the chunk's tables or pictures have captions.

    Chunks carry ``content_format="text"``: the serialization is not reliable Markdown. An
    oversized table is cut as plain text (docling-core's ``repeat_table_header`` is off: it
    expects Markdown tables, and with triplets it only adds a fake ``"| - |"`` header).

    Args:
        chunker: ``"hybrid"`` (token-bounded) or ``"hierarchical"`` (one chunk per element).
        max_tokens: Hybrid only. Budget of a chunk's *contextualized* text (heading path + text),
            in tokens of ``tokenizer``. docling-core keeps to it except where it cannot (see
            :meth:`split`); the job's validation rejects what is over.
        merge_peers: Hybrid only. Merge neighbouring chunks under the same headings while the
            merged chunk fits ``max_tokens``.
        contextualize: Embed the heading path with the text (``True``) or the text alone.
        tokenizer: The budget tokenizer; required for ``"hybrid"``, ignored (and not part of the
            configuration) for ``"hierarchical"``.

    Raises:
        ValueError: A parameter is out of range, or ``"hybrid"`` has no tokenizer.
        ImportError: docling-core (or semchunk, for ``"hybrid"``) is not installed; raised when
            the docling chunker is first built.
    """

    accepted_content_formats = frozenset({"docling"})
    content_format = "text"

    def __init__(
        self,
        *,
        chunker: str = "hybrid",
        max_tokens: int = 8192,
        merge_peers: bool = True,
        contextualize: bool = True,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if chunker not in _CHUNKERS:
            raise ValueError(f"chunker must be one of {_CHUNKERS}, got {chunker!r}")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        for name, value in (("merge_peers", merge_peers), ("contextualize", contextualize)):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be a bool, got {value!r}")
        if chunker == "hybrid":
            if tokenizer is None:
                raise ValueError("chunker='hybrid' needs a tokenizer, got None")
            if not isinstance(tokenizer, Tokenizer):
                raise ValueError(f"tokenizer must implement transforms.tokenizers.Tokenizer, got {tokenizer!r}")
        self.chunker = chunker
        self.max_tokens = max_tokens
        self.merge_peers = merge_peers
        self.contextualize = contextualize
        # The hierarchical chunker never counts tokens: its output does not depend on a tokenizer.
        self.tokenizer = tokenizer if chunker == "hybrid" else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunker": self.chunker,
            "max_tokens": self.max_tokens,
            "merge_peers": self.merge_peers,
            "contextualize": self.contextualize,
        }

    @classmethod
    def budget_parameter(cls, params: Mapping[str, Any]) -> str | None:
        """``max_tokens`` for the hybrid chunker; the hierarchical one has no budget."""
        return "max_tokens" if params.get("chunker", "hybrid") == "hybrid" else None

    def config(self) -> dict[str, Any]:
        """Parameters that decide the output: the hierarchical chunker ignores the budget ones."""
        config = super().config()
        if self.chunker == "hierarchical":
            config.pop("max_tokens")
            config.pop("merge_peers")
        return config

    def __getstate__(self) -> dict[str, Any]:
        # The docling chunker is rebuilt on first use after unpickling (e.g. on a Beam worker).
        state = dict(self.__dict__)
        state.pop("_docling_chunker", None)
        return state

    @cached_property
    def _docling_chunker(self):
        """docling-core's chunker for this configuration, built once per instance.

        Raises:
            ImportError: docling-core or semchunk is missing.
        """
        dl = _docling()
        if self.chunker == "hierarchical":
            return dl.HierarchicalChunker()
        adapter = dl.BudgetTokenizer(tokenizer=self.tokenizer, max_tokens=self.max_tokens)
        # repeat_table_header=False: the chunking serializer writes tables as triplets, not
        # Markdown, so docling-core finds no header to repeat and, with it on, wraps the pieces of
        # an oversized table in a fake one-column Markdown table ("| - |\n| ... |").
        return dl.HybridChunker(tokenizer=adapter, merge_peers=self.merge_peers, repeat_table_header=False)

    def _forget_semchunk_memo(self) -> None:
        """Drop semchunk's memo of our token counter.

        ``semchunk.chunkerify`` memoizes every token counter it is given in a module-global dict
        of *unbounded* ``lru_cache``s, keyed by the counter; in a long-lived worker that cache
        would keep every text segment ever counted. Our counter is the tokenizer's bound
        ``count`` (one key per tokenizer), so dropping that key after each document keeps the
        memo's benefit within a document and frees it afterwards.
        """
        memo = getattr(_docling().semchunk, "_memoized_token_counters", None)
        if isinstance(memo, dict) and self.tokenizer is not None:
            memo.pop(self.tokenizer.count, None)

    def _parse(self, document: Document) -> DoclingDocument:
        """Parse ``document.content`` as DoclingDocument JSON.

        Raises:
            ChunkingError: ``invalid_docling_json``.
        """
        try:
            return parse_docling(document.content)
        except NormalizationError as err:
            raise ChunkingError(err.reason, err.detail) from err

    def split(self, document: Document) -> Iterator[Piece]:
        """Yield one piece per docling-core chunk of ``document``, in reading order.

        ``"hybrid"`` keeps each piece's contextualized text within ``max_tokens`` as docling-core
        measures it (no excess found on the reference corpus, budgets 8 to 8192), but two
        docling-core behaviours show through: when the heading path alone leaves no room, the
        chunk's headings are dropped (``headings == ()``, and docling-core warns with the
        chunk's text); and when one character has more tokens than the room left, semchunk
        recurses without end. ``"hierarchical"`` has no budget at all. The job's validation
        recounts every piece and dead-letters any over the budget (``token_budget_exceeded``).

        Raises:
            ChunkingError: ``invalid_docling_json`` when the content does not parse as a
                DoclingDocument; ``empty_document`` when it yields no chunk text (no items, or only
                headings and empty items); ``chunker_error`` when docling-core hits the
                recursion limit (semchunk, on a character longer than the budget left for it).
            ImportError: docling-core is not installed.
        """
        chunker = self._docling_chunker
        doc = self._parse(document)
        try:
            # docling-core warns with a chunk's whole text (and pandas with deprecations) once per
            # affected chunk; in a worker's log that is noise, and the job's validation reports
            # what matters.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                chunks = list(chunker.chunk(dl_doc=doc))
        except RecursionError as err:
            # semchunk 3.2.5 recurses without end when one character has more tokens than the
            # budget left after the heading path (e.g. a 3-token emoji or Hangul syllable).
            raise ChunkingError(
                "chunker_error",
                f"docling-core's {type(chunker).__name__} hit the recursion limit; with "
                f"chunker='hybrid' this means max_tokens={self.max_tokens} leaves fewer tokens than "
                "one character needs after the headings",
            ) from err
        finally:
            self._forget_semchunk_memo()
        if not any(chunk.text.strip() for chunk in chunks):
            item_count = sum(1 for _ in doc.iterate_items(with_groups=False))
            raise ChunkingError(
                "empty_document",
                f"DoclingDocument {doc.name!r} has no items"
                if item_count == 0
                else f"DoclingDocument {doc.name!r} has no text to chunk: its {item_count} item(s) are headings or empty",
            )
        for chunk in chunks:
            text = chunk.text
            embedding_text = chunker.contextualize(chunk=chunk) if self.contextualize else text
            items = _resolve_items(chunk, doc)
            yield Piece(
                text=text,
                embedding_text=embedding_text,
                headings=tuple(chunk.meta.headings or ()),
                page_no=_first_page_no(items),
                metadata=_chunk_metadata(chunk, items, doc),
            )


def _resolve_items(chunk, doc) -> list:
    """The chunk's items as the document's own objects, in order.

    ``HybridChunker`` rebuilds many chunks from their JSON dump, which turns every ``TableItem``,
    ``ListItem`` ... in ``meta.doc_items`` into a bare ``DocItem`` (no captions); the item's
    ``self_ref`` survives, so it is resolved against the document again.
    """
    ref_item = _docling().RefItem
    items = []
    for item in chunk.meta.doc_items:
        try:
            items.append(ref_item(cref=item.self_ref).resolve(doc))
        except (IndexError, KeyError, ValueError):  # a ref the document does not hold: keep the copy
            items.append(item)
    return items


def _first_page_no(items) -> int | None:
    """The first ``page_no`` in the provenance of ``items``, in order; ``None`` if none has any."""
    for item in items:
        for prov in getattr(item, "prov", None) or ():
            if prov.page_no is not None:
                return int(prov.page_no)
    return None


def _chunk_metadata(chunk, items, doc) -> dict[str, Any]:
    """JSON-ready metadata of one docling chunk: its items' refs and any captions, in order."""
    # HybridChunker can list an item twice (a table split into windows and merged back), so refs
    # and captions are deduplicated, keeping first occurrences in order.
    refs = dict.fromkeys(item.self_ref for item in chunk.meta.doc_items)
    metadata: dict[str, Any] = {"doc_items": list(refs)}
    # DocMeta.captions is deprecated (reading the attribute warns) and left unset by both chunkers
    # in docling-core 2.104; the captions of the chunk's own tables and pictures are used instead.
    captions = dict.fromkeys(str(c) for c in vars(chunk.meta).get("captions") or ())
    if not captions:
        for item in items:
            if getattr(item, "captions", None):  # tables, pictures, code (FloatingItem)
                caption = item.caption_text(doc).strip()
                if caption:
                    captions[caption] = None
    if captions:
        metadata["captions"] = list(captions)
    return metadata
