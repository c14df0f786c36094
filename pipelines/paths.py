"""Paths and file patterns as the workers read them, and what a pattern matches."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from transforms.documents import glob_sets

__all__ = ["holds_set", "inside_pattern", "worker_path", "worker_pattern"]


def worker_path(path: str) -> str:
    """A local path made absolute: SDK workers (a portable runner's worker pool) have their own
    working directory, where a relative pattern would silently match nothing."""
    return path if "://" in path else os.path.abspath(path)


def worker_pattern(pattern: str) -> str:
    """A local file pattern made absolute as :func:`worker_path` makes a path, the current
    folder's own ``[ * ?`` written as sets (``[[]``, ``[*]``, ``[?]``) so that Beam reads them
    literally: run from a folder ``proj [v1]``, ``--input docs.parquet`` matches what it names
    there, in the launcher and in the workers alike."""
    if "://" in pattern:
        return pattern
    folder = "" if os.path.isabs(pattern) else re.sub(r"[\[*?]", r"[\g<0>]", os.getcwd())
    return os.path.normpath(os.path.join(folder, pattern))  # normalized as os.path.abspath does


def inside_pattern(output: str, pattern: str, written: Sequence[str]) -> bool:
    """Whether files a job writes under ``output`` (``written``: names relative to it) would match
    the input ``pattern``: the next run over the same pattern would read them as its input."""
    from apache_beam.io.filesystem import FileSystem

    regex = re.compile(FileSystem.translate_pattern(pattern))
    return any(regex.match(f"{output}/{name}") for name in written)


def holds_set(pattern: str) -> bool:
    """Whether ``pattern`` holds a ``[...]`` that Beam reads as a set of characters, other than
    ``[[]`` (a literal ``[``); an unclosed ``[`` (``data[2024/``) is literal and needs no escaping."""
    return any(pattern[start:end] != "[[]" for start, end in glob_sets(pattern))
