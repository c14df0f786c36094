"""ChunkerRouter: pick a chunker for each document by content format and metadata.

Beam-free. Routes are tried in order; the first whose conditions all hold wins; a document that
matches none goes to the default chunker, or is refused with ``no_route`` when there is none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from transforms.chunkers.base import Chunker, ChunkingError
from transforms.documents import Document

__all__ = ["ChunkerRouter", "Route"]


@dataclass(frozen=True)
class Route:
    """One routing rule: all conditions must hold.

    Attributes:
        chunker: The name of the chunker instance to use.
        content_formats: Accepted ``content_format`` values; empty means any.
        metadata: ``key -> accepted values``; the document's metadata value under ``key`` must be
            one of them.
    """

    chunker: str
    content_formats: frozenset[str] = frozenset()
    metadata: Mapping[str, frozenset[Any]] = field(default_factory=dict)

    def matches(self, document: Document) -> bool:
        if self.content_formats and document.content_format not in self.content_formats:
            return False
        return all(
            any(_same(document.metadata.get(key), value) for value in accepted)
            for key, accepted in self.metadata.items()
        )


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type: ``1`` does not match ``True`` or ``1.0``; lists never match."""
    return type(a) is type(b) and isinstance(a, (str, int, float, bool, type(None))) and a == b


class ChunkerRouter:
    """Routes each document to the first matching route's chunker, or to the default.

    Args:
        chunkers: Named chunker instances.
        routes: Rules tried in order.
        default: The name of the chunker for documents matching no route; ``None`` refuses them.
        models: The named models the chunkers were built with (``models:`` of a configuration,
            shared by the chunkers that name them); the router owns them and :meth:`close`
            releases them.

    Raises:
        ValueError: A route or the default names a chunker that is not in ``chunkers``.
    """

    def __init__(
        self,
        *,
        chunkers: Mapping[str, Chunker],
        routes: Sequence[Route] = (),
        default: str | None = None,
        models: Mapping[str, Any] | None = None,
    ) -> None:
        for route in routes:
            if route.chunker not in chunkers:
                raise ValueError(f"route names chunker {route.chunker!r}, which is not one of {sorted(chunkers)}")
        if default is not None and default not in chunkers:
            raise ValueError(f"default names chunker {default!r}, which is not one of {sorted(chunkers)}")
        self.chunkers = dict(chunkers)
        self.routes = tuple(routes)
        self.default = default
        self.models = dict(models or {})

    def select(self, document: Document) -> tuple[str, Chunker]:
        """Return ``(name, chunker)`` for ``document``.

        Raises:
            ChunkingError: ``no_route`` when nothing matches and there is no default.
        """
        for route in self.routes:
            if route.matches(document):
                return route.chunker, self.chunkers[route.chunker]
        if self.default is None:
            raise ChunkingError(
                "no_route",
                f"no route matches content_format {document.content_format!r} and there is no default chunker",
            )
        return self.default, self.chunkers[self.default]

    def close(self) -> None:
        """Release what the chunkers and models hold (HTTP sessions, thread pools, loaded models).

        Calls ``close()`` of every chunker, then of every model that has one. Idempotent; a
        closed router still chunks (its models open what they need again on use).
        """
        for chunker in self.chunkers.values():
            chunker.close()
        for model in self.models.values():
            close = getattr(model, "close", None)
            if callable(close):
                close()
