"""Hugging Face fast tokenizers from a local or fsspec ``tokenizer.json``; never downloads a model.

Two views of one file: ``hf:PATH`` counts the text's own tokens; ``hf-model:PATH`` counts what an
embedding model reads, the model's default prompt and its special tokens included (see
:class:`HuggingFaceTokenizer`). :func:`load_hf_tokenizer` returns a
:class:`~transforms.tokenizers.wordpiece.WordPieceTokenizer` (one encoding per document, slices
counted from it) when the file is a BERT-style WordPiece tokenizer, a
:class:`~transforms.tokenizers.pretokens.SpaceCutTokenizer` (the same, with cuts before spaces)
when its pre-tokenizer splits at spaces (byte-level BPE, Metaspace, ...), else a
:class:`HuggingFaceTokenizer` (every slice encoded whole).
"""

from __future__ import annotations

import copy
import hashlib
import json
import posixpath
from typing import Any

from transforms.tokenizers.base import TokenizerError

__all__ = ["HuggingFaceTokenizer", "load_hf_tokenizer"]

#: The sentence-transformers file that names a model's prompts and its default one.
PROMPTS_FILE = "config_sentence_transformers.json"


class HuggingFaceTokenizer:
    """A Hugging Face fast tokenizer loaded from a ``tokenizer.json`` file; never downloads a model.

    With ``model=False`` (spec ``hf:PATH``) counts exclude special tokens
    (``add_special_tokens=False``): the budget is the text's own. With ``model=True`` (spec
    ``hf-model:PATH``) ``count(text)`` is ``len(encode(prompt + text, add_special_tokens=True).ids)``:
    the tokens a sentence-transformers model reads for ``text`` (``[CLS]`` and ``[SEP]`` for a
    BERT model), where ``prompt`` is ``prompts[default_prompt_name]`` of the
    ``config_sentence_transformers.json`` next to the ``tokenizer.json`` ("" when there is none),
    which sentence-transformers' ``encode()`` prepends to every text. Truncation and padding are
    always off. A lone surrogate (possible in a Python string, never in Parquet) counts as U+FFFD.

    Args:
        path: A ``tokenizer.json`` file, or a folder that holds one: a local path, or a URL that
            fsspec opens (``gs://bucket/tokenizers/model/``), which cluster workers can read too.
        model: Count what the model reads (special tokens and the default prompt) instead of
            the text's own tokens.

    Attributes:
        identity: ``hf:NAME:DIGEST8``, or ``hf-model:NAME:DIGEST8`` where the digest covers the
            prompt too; NAME is the file's folder.
        prompt: The text put before every counted text ("" for ``hf:``).
        special_tokens: Special tokens the post-processor adds to one text (0 for ``hf:``).

    Raises:
        TokenizerError: No such file, the file is not a tokenizer the ``tokenizers`` library
            loads, its model is a BPE with dropout (random counts), or the prompts file is unreadable or names a prompt it does not define.
    """

    def __init__(self, path: str, *, model: bool = False) -> None:
        from tokenizers import Tokenizer as _HFTokenizer

        fs, target, file, name = _find_tokenizer_json(path)
        data = _read(fs, target, file)
        try:
            tokenizer = _HFTokenizer.from_str(data.decode("utf-8"))
        except Exception as err:  # bad UTF-8, or the library's bare Exception on bad JSON
            raise TokenizerError(f"{file!r} is not a Hugging Face tokenizer.json: {err}") from err
        # BPE dropout drops merges at random on every encode: no count of it is a budget, and the
        # same input would give other chunks on every run.
        dropout = getattr(tokenizer.model, "dropout", None)
        if dropout:
            raise TokenizerError(f"{file!r} has BPE dropout {dropout:.3g}: its token counts are random")
        # A tokenizer.json may switch on truncation or padding; either would make count() report
        # the truncated or padded length instead of the text's own.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._json = data
        self.path = file
        self.model = model
        self.prompt = _default_prompt(fs, posixpath.dirname(target), file) if model else ""
        self.special_tokens = tokenizer.num_special_tokens_to_add(False) if model else 0
        if model:
            digest = hashlib.sha256(data + b"\0prompt\0" + self.prompt.encode("utf-8", "surrogatepass"))
            self.identity = f"hf-model:{name}:{digest.hexdigest()[:8]}"
        else:
            self.identity = f"hf:{name}:{hashlib.sha256(data).hexdigest()[:8]}"

    def _encode(self, text: str, special: bool):
        """The library's encoding of ``text`` (lone surrogates as U+FFFD, same length)."""
        try:
            return self._tokenizer.encode(text, add_special_tokens=special)
        except (UnicodeEncodeError, TypeError):  # the library refuses lone surrogates (TypeError)
            cleaned = _without_surrogates(text)
            if cleaned == text:
                raise
            return self._tokenizer.encode(cleaned, add_special_tokens=special)

    def count(self, text: str) -> int:
        """Return the tokens of ``text``: its own (``hf:``), or with the prompt and special tokens
        the model adds (``hf-model:``)."""
        return len(self._encode(self.prompt + text, self.model).ids)

    def independent(self) -> HuggingFaceTokenizer:
        """The validation recount's tokenizer: this file counted by whole encodes (this class's
        :meth:`count`), without the word memory and cut rules by which the one-encoding
        subclasses count; ``self`` when that is already how it counts. Shares the loaded file."""
        if type(self) is HuggingFaceTokenizer:
            return self
        twin = copy.copy(self)
        twin.__class__ = HuggingFaceTokenizer
        return twin

    def own_count(self, text: str) -> int:
        """Return the text's own tokens, without prompt or special tokens (``hf:``'s count)."""
        return len(self._encode(text, False).ids)

    def boundaries(self, text: str) -> list[int]:
        """Return the code-point offsets where a token of the text's own encoding starts, plus 0
        and ``len(text)``.

        The library reports character offsets; a byte-level token that starts inside a code point
        gets the offsets of the whole character, so a start is kept only when no earlier token
        reaches past it (no token straddles the cut).
        """
        encoding = self._encode(text, False)
        cuts = {0, len(text)}
        reach = 0
        for start, end in encoding.offsets:
            if start == end:  # a token with no source text (e.g. an added special token)
                continue
            if 0 < start < len(text) and start >= reach:
                cuts.add(start)
            reach = max(reach, end)
        return sorted(cuts)


def load_hf_tokenizer(path: str, *, model: bool = False) -> HuggingFaceTokenizer:
    """Build the tokenizer of ``hf:PATH`` (``model=False``) or ``hf-model:PATH`` (``model=True``).

    A BERT-style WordPiece ``tokenizer.json`` (see
    :func:`transforms.tokenizers.wordpiece.is_word_local`) gives a
    :class:`~transforms.tokenizers.wordpiece.WordPieceTokenizer`, which counts slices of a
    document from one encoding (and gives the structure packer token ends); one whose
    pre-tokenizer splits at spaces (byte-level BPE, Metaspace, whitespace splitters; see
    :func:`transforms.tokenizers.pretokens.is_space_local`) a
    :class:`~transforms.tokenizers.pretokens.SpaceCutTokenizer`, which counts slices from one
    encoding; any other a :class:`HuggingFaceTokenizer` (whole encodes). All count the same.

    Raises:
        TokenizerError: As :class:`HuggingFaceTokenizer`.
    """
    from transforms.tokenizers.pretokens import SpaceCutTokenizer, is_space_local
    from transforms.tokenizers.wordpiece import WordPieceTokenizer, is_word_local

    plain = HuggingFaceTokenizer(path, model=model)
    if is_word_local(plain):
        return WordPieceTokenizer.of(plain)
    if is_space_local(plain):
        return SpaceCutTokenizer.of(plain)
    return plain


def _without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (same length)."""
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


def _read(fs: Any, target: str, file: str) -> bytes:
    try:
        with fs.open(target, "rb") as f:
            return f.read()
    except Exception as err:  # OSError locally; a filesystem's own errors (gcsfs HttpError) remotely
        raise TokenizerError(f"cannot read {file!r}: {err}") from err


def _default_prompt(fs: Any, folder: str, file: str) -> str:
    """``prompts[default_prompt_name]`` of the folder's ``config_sentence_transformers.json``,
    or "" when the file is absent or names no default prompt.

    Raises:
        TokenizerError: The file cannot be read or parsed, or its default prompt is not one of its
            ``prompts``.
    """
    target = posixpath.join(folder, PROMPTS_FILE)
    try:
        if not fs.isfile(target):
            return ""
    except Exception:  # a filesystem that cannot tell: no prompts file
        return ""
    try:
        config = json.loads(_read(fs, target, target).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise TokenizerError(f"{PROMPTS_FILE} next to {file!r} is not JSON: {err}") from err
    if not isinstance(config, dict):
        raise TokenizerError(f"{PROMPTS_FILE} next to {file!r} is not a JSON object")
    name = config.get("default_prompt_name")
    if name is None:
        return ""
    prompts = config.get("prompts") or {}
    prompt = prompts.get(name) if isinstance(prompts, dict) else None
    if not isinstance(prompt, str):
        raise TokenizerError(f"{PROMPTS_FILE} next to {file!r}: default_prompt_name {name!r} is not in its prompts")
    return prompt


def _find_tokenizer_json(path: str) -> tuple[Any, str, str, str]:
    """Find the ``tokenizer.json`` at ``path`` (a local path or a URL fsspec opens): the file, or
    the one in that folder.

    Returns:
        The fsspec filesystem, the file's path on it, the file as shown in messages (the local
        path, or the URL), and the name of its folder.

    Raises:
        TokenizerError: fsspec has no filesystem for the URL, it cannot be listed, or no such file.
    """
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
