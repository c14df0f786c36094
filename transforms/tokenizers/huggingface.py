"""Hugging Face fast tokenizers from a local or fsspec ``tokenizer.json``; never downloads a model."""

from __future__ import annotations

import hashlib
from typing import Any

from transforms.tokenizers.base import TokenizerError

__all__ = ["HuggingFaceTokenizer"]


class HuggingFaceTokenizer:
    """A Hugging Face fast tokenizer loaded from a ``tokenizer.json`` file; never downloads a model.

    Counts exclude special tokens (``add_special_tokens=False``): the budget is the text's own.

    Args:
        path: A ``tokenizer.json`` file, or a folder that holds one: a local path, or a URL that
            fsspec opens (``gs://bucket/tokenizers/model/``), which cluster workers can read too.

    Raises:
        TokenizerError: No such file, or the file is not a tokenizer the ``tokenizers`` library loads.
    """

    def __init__(self, path: str) -> None:
        from tokenizers import Tokenizer as _HFTokenizer

        fs, target, file, name = _find_tokenizer_json(path)
        try:
            with fs.open(target, "rb") as f:
                data = f.read()
        except Exception as err:  # OSError locally; a filesystem's own errors (gcsfs HttpError) remotely
            raise TokenizerError(f"cannot read {file!r}: {err}") from err
        try:
            tokenizer = _HFTokenizer.from_str(data.decode("utf-8"))
        except Exception as err:  # bad UTF-8, or the library's bare Exception on bad JSON
            raise TokenizerError(f"{file!r} is not a Hugging Face tokenizer.json: {err}") from err
        # A tokenizer.json may switch on truncation or padding; either would make count() report
        # the truncated or padded length instead of the text's own.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self.path = file
        self.identity = f"hf:{name}:{hashlib.sha256(data).hexdigest()[:8]}"

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text``, without special tokens."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def boundaries(self, text: str) -> list[int]:
        """Return the code-point offsets where a token starts, plus 0 and ``len(text)``.

        The library reports character offsets; a byte-level token that starts inside a code point
        gets the offsets of the whole character, so a start is kept only when no earlier token
        reaches past it (no token straddles the cut).
        """
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        cuts = {0, len(text)}
        reach = 0
        for start, end in encoding.offsets:
            if start == end:  # a token with no source text (e.g. an added special token)
                continue
            if 0 < start < len(text) and start >= reach:
                cuts.add(start)
            reach = max(reach, end)
        return sorted(cuts)


def _find_tokenizer_json(path: str) -> tuple[Any, str, str, str]:
    """Find the ``tokenizer.json`` at ``path`` (a local path or a URL fsspec opens): the file, or
    the one in that folder.

    Returns:
        The fsspec filesystem, the file's path on it, the file as shown in messages (the local
        path, or the URL), and the name of its folder.

    Raises:
        TokenizerError: fsspec has no filesystem for the URL, it cannot be listed, or no such file.
    """
    import posixpath

    import fsspec

    try:
        fs, root = fsspec.core.url_to_fs(path)
        target = posixpath.join(root, "tokenizer.json") if fs.isdir(root) else root
        found = fs.isfile(target)
    except Exception as err:  # unknown protocol (ValueError), its package missing (ImportError), IO errors
        raise TokenizerError(f"cannot open {path!r}: {' '.join(str(err).split())[:200]}") from err
    if not found:
        raise TokenizerError(f"no tokenizer.json at {path!r}")
    shown = fs.unstrip_protocol(target) if "://" in path else target
    return fs, target, shown, posixpath.basename(posixpath.dirname(target)) or "tokenizer"
