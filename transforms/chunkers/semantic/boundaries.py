"""Validation of a chat model's answer ``{"boundaries": [...]}``: never trusted unchecked.

Beam-free. Used by :class:`~transforms.chunkers.semantic.SemanticChunker` and
:class:`~transforms.chunkers.refinement.ChatBoundaryRefiner`.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from transforms.models import ModelError

__all__ = ["parse_boundaries"]

#: Positions of ``{`` in a chat answer's prose tried as the start of its JSON object.
_MAX_OBJECT_STARTS = 100
_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n?(.*?)```", re.S)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key is repeated")  # {"boundaries": [1], "boundaries": [2]} is ambiguous
    return dict(pairs)


def _json_candidates(body: str) -> list[Any]:
    """What in a chat answer reads as the JSON asked for: the whole answer, else each fenced
    block, else each JSON object starting at a ``{`` in the prose (parsed strictly: no repeated
    keys)."""
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)

    def parse(text: str) -> list[Any]:
        try:
            return [decoder.decode(text.strip())]
        except (ValueError, RecursionError):
            return []

    whole = parse(body)
    if whole:
        return whole
    fenced = [value for block in _FENCE.findall(body) for value in parse(block)]
    if fenced:
        return fenced
    found = []
    for match in list(re.finditer(r"\{", body))[:_MAX_OBJECT_STARTS]:
        try:
            value, _ = decoder.raw_decode(body, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and "boundaries" in value:
            found.append(value)
    return found


def parse_boundaries(answer: str, count: int) -> list[int]:
    """Validate a chat answer ``{"boundaries": [...]}`` for ``count`` numbered items.

    Accepts the JSON alone, or else inside Markdown code fences, or else as a JSON object within
    prose; in each case exactly one (with no repeated key) must be found. Every boundary must be
    an integer in ``[1, count - 1]`` and the list strictly ascending.

    Raises:
        ModelError: (not transient) The answer is not that JSON (none, several, a repeated key,
            nested too deeply to parse), or a boundary is out of range or out of order.
    """
    if not isinstance(answer, str):
        raise ModelError(f"chat answer is {type(answer).__name__}, not text", transient=False)
    candidates = _json_candidates(answer.strip().lstrip("\ufeff"))
    if not candidates:
        raise ModelError("chat answer is not JSON (or repeats a key)", transient=False)
    if len(candidates) > 1:
        raise ModelError(f"chat answer holds {len(candidates)} JSON values, not one", transient=False)
    data = candidates[0]
    boundaries = data.get("boundaries") if isinstance(data, dict) else None
    if not isinstance(boundaries, list) or not all(isinstance(b, int) and not isinstance(b, bool) for b in boundaries):
        raise ModelError('chat answer has no "boundaries" list of integers', transient=False)
    if any(not 1 <= b < count for b in boundaries):
        raise ModelError(
            f"chat answer has a boundary out of range 1..{count - 1}: {boundaries[:20]}",
            transient=False,
        )
    if any(a >= b for a, b in itertools.pairwise(boundaries)):
        raise ModelError(
            f"chat answer's boundaries are not ascending: {boundaries[:20]}",
            transient=False,
        )
    return boundaries
