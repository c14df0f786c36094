"""Normalizers: one per content format, each turning content into a :class:`NormalizedDocument`.

A normalizer is a callable ``(content: str) -> NormalizedDocument`` that raises
:class:`~transforms.structure.tree.NormalizationError` for content it cannot read.
:class:`NormalizerRegistry` maps content formats to normalizers; a ``StructureAwareChunker``
accepts exactly the formats of its registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache

from transforms.structure.tree import NormalizedDocument

__all__ = ["Normalizer", "NormalizerRegistry", "default_normalizers"]

Normalizer = Callable[[str], NormalizedDocument]


class NormalizerRegistry(Mapping[str, Normalizer]):
    """An immutable mapping of content format -> normalizer.

    Args:
        normalizers: ``{format: callable}``.

    Raises:
        TypeError: A value is not callable or a key is not a string.
    """

    def __init__(self, normalizers: Mapping[str, Normalizer]) -> None:
        for name, fn in normalizers.items():
            if not isinstance(name, str) or not callable(fn):
                raise TypeError(f"a normalizer registry maps format names to callables, got {name!r}: {fn!r}")
        self._normalizers = dict(sorted(normalizers.items()))

    def __getitem__(self, content_format: str) -> Normalizer:
        return self._normalizers[content_format]

    def __iter__(self) -> Iterator[str]:
        return iter(self._normalizers)

    def __len__(self) -> int:
        return len(self._normalizers)

    @property
    def formats(self) -> frozenset[str]:
        """The content formats this registry can normalize."""
        return frozenset(self._normalizers)

    def normalize(self, content: str, content_format: str) -> NormalizedDocument:
        """Normalize ``content`` with the normalizer registered for ``content_format``.

        Raises:
            KeyError: No normalizer for ``content_format``.
            NormalizationError: The content cannot be read as that format.
        """
        return self._normalizers[content_format](content)


@lru_cache(maxsize=1)
def default_normalizers() -> NormalizerRegistry:
    """The registry of every built-in normalizer: docling, html, markdown, rst and text."""
    from transforms.structure.normalizers.docling import normalize_docling
    from transforms.structure.normalizers.html import normalize_html
    from transforms.structure.normalizers.markdown import normalize_markdown
    from transforms.structure.normalizers.rst import normalize_rst
    from transforms.structure.normalizers.text import normalize_text

    return NormalizerRegistry(
        {
            "docling": normalize_docling,
            "html": normalize_html,
            "markdown": normalize_markdown,
            "rst": normalize_rst,
            "text": normalize_text,
        }
    )
