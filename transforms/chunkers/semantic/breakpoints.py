"""Breakpoint statistics, cosine distances and checked embedder answers for the semantic chunkers.

Beam-free. :func:`breakpoint_threshold` reproduces LangChain Experimental's thresholds bit for
bit; :func:`checked_vectors` refuses any embedder answer that is not ``count`` finite vectors of
one dimension.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from transforms.models import ModelError

__all__ = [
    "BREAKPOINT_DEFAULTS",
    "THRESHOLD_TYPES",
    "breakpoint_threshold",
    "checked_vectors",
    "cosine_distance",
]

THRESHOLD_TYPES = ("percentile", "standard_deviation", "interquartile", "gradient")
#: LangChain Experimental's defaults for ``breakpoint_threshold_amount``.
BREAKPOINT_DEFAULTS: Mapping[str, float] = {
    "percentile": 95,
    "standard_deviation": 3,
    "interquartile": 1.5,
    "gradient": 95,
}


def breakpoint_threshold(distances: Sequence[float], threshold_type: str, amount: float) -> tuple[float, list[float]]:
    """LangChain Experimental's ``SemanticChunker._calculate_breakpoint_threshold``.

    Source: ``langchain_experimental/text_splitter.py`` (langchain-experimental 0.4), reproduced
    with the same numpy calls so the thresholds are bit-identical:

    * ``percentile``: ``np.percentile(distances, amount)``;
    * ``standard_deviation``: ``mean + amount * std`` (population standard deviation);
    * ``interquartile``: ``mean + amount * (q3 - q1)`` with ``q1, q3 = np.percentile(distances, [25, 75])``;
    * ``gradient``: ``np.percentile(g, amount)`` over ``g = np.gradient(distances)``, and ``g``
      is what is compared with the threshold.

    Returns:
        ``(threshold, array)``: a breakpoint is every index ``i`` with ``array[i] > threshold``.
    """
    import numpy as np

    if threshold_type == "percentile":
        return float(np.percentile(distances, amount)), list(distances)
    if threshold_type == "standard_deviation":
        return float(np.mean(distances) + amount * np.std(distances)), list(distances)
    if threshold_type == "interquartile":
        q1, q3 = np.percentile(distances, [25, 75])
        return float(np.mean(distances) + amount * (q3 - q1)), list(distances)
    if threshold_type == "gradient":
        gradient = np.gradient(distances, range(0, len(distances)))
        return float(np.percentile(gradient, amount)), [float(g) for g in gradient]
    raise ValueError(f"breakpoint_threshold_type must be one of {THRESHOLD_TYPES}, got {threshold_type!r}")


def cosine_distance(a: Sequence[float], b: Sequence[float]) -> float:
    """``1 - cos(a, b)``; a zero vector has similarity 0 (as LangChain's ``cosine_similarity``).

    Vectors whose squares overflow or underflow a float are scaled to a largest component of 1
    first (the cosine does not change), so the distance is finite for every finite input.
    """
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if not (math.isfinite(dot) and math.isfinite(norm)) or (not norm and any(a) and any(b)):
        scale_a, scale_b = max(abs(x) for x in a), max(abs(y) for y in b)
        a, b = [x / scale_a for x in a], [y / scale_b for y in b]
        dot = sum(x * y for x, y in zip(a, b))
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - (dot / norm if norm else 0.0)


def checked_vectors(got: Any, count: int, dimensions: int | None = None) -> list[list[float]]:
    """An embedder's answer for ``count`` texts as float lists, or ModelError: never trusted unchecked.

    Accepts any sequence of ``count`` non-empty sequences of finite real numbers (bools are not
    numbers), all of one dimension (``dimensions`` when given, e.g. from an earlier batch).

    Raises:
        ModelError: (not transient) Anything else: a wrong count, a missing vector, a string, NaN,
            infinity, mixed dimensions.
    """
    import numbers

    try:
        vectors = [list(v) for v in got]
    except TypeError:
        raise ModelError(
            f"embedder answered {type(got).__name__} instead of {count} vectors",
            transient=False,
        ) from None
    if len(vectors) != count:
        raise ModelError(
            f"embedder answered {len(vectors)} vectors for {count} texts",
            transient=False,
        )
    for vector in vectors:
        if not vector or not all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in vector):
            raise ModelError(
                "embedder answered a vector that is empty or not all numbers",
                transient=False,
            )
        try:
            finite = all(math.isfinite(x) for x in vector)
        except OverflowError:  # an int beyond float range
            finite = False
        if not finite:
            raise ModelError(
                "embedder answered a vector with NaN or infinite values",
                transient=False,
            )
    dims = sorted({len(v) for v in vectors} | ({dimensions} if dimensions is not None else set()))
    if len(dims) > 1:
        raise ModelError(f"embedder answered vectors of dimensions {dims}", transient=False)
    return [[float(x) for x in v] for v in vectors]
