"""Checks of the structure chunkers' options: each raises ``ValueError`` naming the bad value.

Token options are tokens of the budget tokenizer.
"""

from __future__ import annotations

from typing import Any

from transforms.structure.normalizers import NormalizerRegistry, default_normalizers

__all__ = [
    "OVERSIZED_BLOCK_POLICIES",
    "SEMANTIC_MODES",
    "check_oversized_block_policy",
    "check_semantic_mode",
    "checked_budgets",
    "checked_overlap",
    "flag",
    "html_exclude_registry",
    "normalizer_registry",
    "positive_int",
]

#: Values of ``oversized_block_policy``.
OVERSIZED_BLOCK_POLICIES = ("split_with_context", "reject")
#: Values of ``semantic_mode``.
SEMANTIC_MODES = ("heuristic", "refiner")


def positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """``value`` when it is an integer (not a bool) of at least ``minimum``.

    Raises:
        ValueError: It is not, naming ``name`` and the value.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def flag(name: str, value: Any) -> bool:
    """``value`` when it is a bool.

    Raises:
        ValueError: It is not, naming ``name`` and the value.
    """
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def checked_budgets(max_tokens: Any, target_tokens: Any, min_preferred_tokens: Any) -> tuple[int, int, int]:
    """``(max_tokens, target_tokens, min_preferred_tokens)`` checked, defaults filled in: the
    target is 400 or ``max_tokens`` when smaller, the preferred minimum 100 or the target when
    smaller; ``min_preferred_tokens <= target_tokens <= max_tokens``.

    Raises:
        ValueError: One is not an integer or out of range (the message names it and the value).
    """
    max_tokens = positive_int("max_tokens", max_tokens)
    target_tokens = positive_int("target_tokens", min(400, max_tokens) if target_tokens is None else target_tokens)
    if target_tokens > max_tokens:
        raise ValueError(f"target_tokens must be <= max_tokens ({max_tokens}), got {target_tokens}")
    min_preferred_tokens = positive_int(
        "min_preferred_tokens",
        min(100, target_tokens) if min_preferred_tokens is None else min_preferred_tokens,
        minimum=0,
    )
    if min_preferred_tokens > target_tokens:
        raise ValueError(f"min_preferred_tokens must be <= target_tokens ({target_tokens}), got {min_preferred_tokens}")
    return max_tokens, target_tokens, min_preferred_tokens


def checked_overlap(overlap_tokens: Any, max_overlap_tokens: Any, target_tokens: int) -> tuple[int, int]:
    """``(overlap_tokens, max_overlap_tokens)`` checked: ``0 <= overlap_tokens <=
    max_overlap_tokens`` and ``overlap_tokens < target_tokens``.

    Raises:
        ValueError: One is not an integer or out of range (the message names it and the value).
    """
    max_overlap_tokens = positive_int("max_overlap_tokens", max_overlap_tokens, minimum=0)
    overlap_tokens = positive_int("overlap_tokens", overlap_tokens, minimum=0)
    if overlap_tokens > max_overlap_tokens:
        raise ValueError(f"overlap_tokens must be <= max_overlap_tokens ({max_overlap_tokens}), got {overlap_tokens}")
    if overlap_tokens >= target_tokens:
        raise ValueError(f"overlap_tokens must be < target_tokens ({target_tokens}), got {overlap_tokens}")
    return overlap_tokens, max_overlap_tokens


def check_oversized_block_policy(oversized_block_policy: Any) -> None:
    """Raise ``ValueError`` unless ``oversized_block_policy`` is one of :data:`OVERSIZED_BLOCK_POLICIES`."""
    if oversized_block_policy not in OVERSIZED_BLOCK_POLICIES:
        raise ValueError(
            f"oversized_block_policy must be one of {OVERSIZED_BLOCK_POLICIES}, got {oversized_block_policy!r}"
        )


def check_semantic_mode(semantic_mode: Any, semantic_refiner: Any) -> None:
    """Check that ``semantic_mode`` is known and has a refiner exactly when it is ``"refiner"``.

    Raises:
        ValueError: An unknown mode, a refiner that is not a ``ChatBoundaryRefiner``, or a
            refiner with the heuristic mode.
    """
    if semantic_mode not in SEMANTIC_MODES:
        raise ValueError(f"semantic_mode must be one of {SEMANTIC_MODES}, got {semantic_mode!r}")
    from transforms.chunkers.refinement import ChatBoundaryRefiner

    if semantic_mode == "refiner" and not isinstance(semantic_refiner, ChatBoundaryRefiner):
        raise ValueError(
            f"semantic_mode 'refiner' needs a ChatBoundaryRefiner as semantic_refiner, got {semantic_refiner!r}"
        )
    if semantic_mode == "heuristic" and semantic_refiner is not None:
        raise ValueError("semantic_refiner is only used with semantic_mode 'refiner'")


def normalizer_registry(normalizers: Any) -> NormalizerRegistry:
    """``normalizers``, or every built-in normalizer when it is ``None``.

    Raises:
        ValueError: ``normalizers`` is not a ``NormalizerRegistry``.
    """
    if normalizers is not None and not isinstance(normalizers, NormalizerRegistry):
        raise ValueError(f"normalizers must be a NormalizerRegistry, got {normalizers!r}")
    return normalizers if normalizers is not None else default_normalizers()


def html_exclude_registry(registry: NormalizerRegistry, html_exclude_selectors: Any) -> NormalizerRegistry:
    """``registry`` with its ``html`` normalizer leaving out what ``html_exclude_selectors`` (CSS
    selectors) match too; ``registry`` itself when the list is empty or it has no ``html``.

    Raises:
        ValueError: ``html_exclude_selectors`` is not a list of accepted selectors (one line).
    """
    from transforms.structure.normalizers.html import html_normalizer

    if html_exclude_selectors is None:
        html_exclude_selectors = []
    normalizer = html_normalizer(html_exclude_selectors)
    if not html_exclude_selectors or "html" not in registry:
        return registry
    return NormalizerRegistry({**registry, "html": normalizer})
