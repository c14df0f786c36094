"""Plain-text splitters: one separator, a separator hierarchy, and token windows.

Beam-free. Each yields verbatim slices of the document (``content[start:end] == text``) with
code-point offsets. Lengths are measured either in characters (code points) or in tokens of an
injected :class:`~transforms.tokenizers.Tokenizer` (``length="tokens"``: the token-sized
splitting known from LangChain's ``from_tiktoken_encoder``, but with every chunk's count exact).

The separator semantics follow LangChain's ``CharacterTextSplitter`` and
``RecursiveCharacterTextSplitter`` (``langchain_text_splitters/character.py``): separators are
literal strings, or regular expressions with ``is_separator_regex`` (a separator occurs where a
match starts: :mod:`~transforms.chunkers.text.separators`), the recursive splitter keeps each
separator at the start of the piece that follows it, and chunks are stripped of surrounding
whitespace. In characters both merge pieces
greedily up to ``chunk_size`` with up to ``chunk_overlap`` carried over, and the recursive splitter
gives exactly LangChain's chunks. In tokens the recursive splitter does not merge pieces: it
encodes the document once and, from each chunk's start, searches back from where the budget runs
out for the highest-priority separator (see ``RecursiveCharacterTextSplitter``), so its chunk
boundaries differ from LangChain's (whose token mode sums separately counted pieces and is
inexact anyway). The departures common to both units: a chunk's length is the exact length of
its whole stripped text, never a sum of separately measured pieces, and a chunk that is still
too long is cut further when ``""`` allows it, so a token-sized chunk never exceeds
``chunk_size`` unless it is one code point that alone needs more tokens; chunks are verbatim
slices (``CharacterTextSplitter`` keeps a doubled separator inside a chunk instead of dropping
the empty piece); and a chunk equal to the one before it is not repeated.

A DoclingDocument is split through its Markdown rendering, with null offsets and the chunk's
span of the rendering in its metadata (:mod:`~transforms.chunkers.text.source`).

Modules: :mod:`~transforms.chunkers.text.source` (the text split: content or rendering),
:mod:`~transforms.chunkers.text.separators` (literal and regular-expression separators),
:mod:`~transforms.chunkers.text.spans` (sizes, stripping, token indices and the
longest-fit search shared by all three), :mod:`~transforms.chunkers.text.merging` (the greedy
merge of the separator splitters), :mod:`~transforms.chunkers.text.character`,
:mod:`~transforms.chunkers.text.recursive` and :mod:`~transforms.chunkers.text.token_windows`.
"""

from transforms.chunkers.text.character import CharacterTextSplitter
from transforms.chunkers.text.recursive import RecursiveCharacterTextSplitter
from transforms.chunkers.text.spans import DEFAULT_SEPARATORS
from transforms.chunkers.text.token_windows import TokenTextSplitter

__all__ = ["DEFAULT_SEPARATORS", "CharacterTextSplitter", "RecursiveCharacterTextSplitter", "TokenTextSplitter"]
