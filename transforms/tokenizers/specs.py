"""The command line's ``--tokenizer`` specs: ``tiktoken:ENCODING``, ``utf8-bytes``, ``hf:PATH``,
``hf-model:PATH``."""

from __future__ import annotations

from transforms.tokenizers.base import Tokenizer, TokenizerError
from transforms.tokenizers.huggingface import load_hf_tokenizer
from transforms.tokenizers.tiktoken_bpe import CUT_RULE_ENCODINGS, BpeTokenizer, TiktokenTokenizer
from transforms.tokenizers.utf8 import Utf8ByteTokenizer

__all__ = ["DEFAULT_TOKENIZER", "load_tokenizer"]

DEFAULT_TOKENIZER = "tiktoken:cl100k_base"


def load_tokenizer(spec: str) -> Tokenizer:
    """Build a tokenizer from a ``--tokenizer`` spec.

    Specs: ``tiktoken:ENCODING`` (``tiktoken:cl100k_base``, or ``tiktoken:o200k_base``, counted
    by whole encodings: :class:`~transforms.tokenizers.tiktoken_bpe.BpeTokenizer`), ``utf8-bytes``, ``hf:PATH`` (a
    ``tokenizer.json``, or a folder holding one: the text's own tokens) and ``hf-model:PATH``
    (the same file, counting what a sentence-transformers model reads: its default prompt from
    ``config_sentence_transformers.json`` in that folder, and its special tokens). Everything
    after the first ``:`` is the path, which may itself hold ``:`` (``gs://...``).

    Raises:
        TokenizerError: The spec has an unknown kind, or its tokenizer cannot be loaded.
    """
    if not isinstance(spec, str) or not spec:
        raise TokenizerError(f"tokenizer spec must be a non-empty string, got {spec!r}")
    kind, _, arg = spec.partition(":")
    if kind == "tiktoken" and arg:
        return TiktokenTokenizer(arg) if arg in CUT_RULE_ENCODINGS else BpeTokenizer(arg)
    if spec in ("utf8-bytes", "utf8-bytes:v1"):
        return Utf8ByteTokenizer()
    if kind in ("hf", "hf-model") and arg:
        return load_hf_tokenizer(arg, model=kind == "hf-model")
    raise TokenizerError(
        f"tokenizer must be 'tiktoken:cl100k_base', 'tiktoken:o200k_base', 'utf8-bytes', 'hf:PATH' or 'hf-model:PATH', got {spec!r}"
    )
