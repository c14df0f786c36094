"""The rechunk job: Parquet documents in; chunks, a dead letter, a manifest and report.json out.

    rechunk --input 'PATTERN' --output DIR [--config chunking.yaml] [--tokenizer SPEC]
            [--max-tokens N] [--column-map content=text,...] [--previous DIR] [any Beam pipeline option]
    python -m pipelines.rechunk ...

The graph (see ``transforms.beam``)::

    Read documents -> Admit -> [Compare with previous] -> Route, chunk and validate -> Write chunks, manifest
                        \\               \\_ kept chunks, manifest rows _______________________/
                         \\_________________________\\______________________\\_____-> Write dead letter
    [previous chunk ids, new chunk ids -> List deleted -> Write deleted]
    tokenizer identity (singleton side input) -> Admit, Compare, Route, chunk and validate

Each chunk is validated as the chunker makes it and goes on to the writer (a huge document's
chunks are never all held at once).

Every mistake in the options is found before the pipeline starts and reported as one line on
stderr with exit status 2. Without ``--runner`` (or with ``--runner=DirectRunner``) the job runs on
Beam's FnApiRunner, the DirectRunner's own engine, so that the DirectRunner's first choice, Prism,
never tries to download its binary.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import (
    DirectOptions,
    FlinkRunnerOptions,
    GoogleCloudOptions,
    PipelineOptions,
    PortableOptions,
    PrismRunnerOptions,
    SetupOptions,
    SparkRunnerOptions,
    StandardOptions,
    TestOptions,
    TypeOptions,
)
from apache_beam.options.pipeline_options_validator import PipelineOptionsValidator

from pipelines.config import MAX_TOKENS_LIMIT, ConfigError, load_config, resolve_config
from pipelines.report import build_report, write_report
from transforms.beam import (
    DEAD_LETTER,
    KEPT_CHUNKS,
    KEPT_MANIFEST,
    MANIFEST,
    PREVIOUS_IDS,
    AdmitDocuments,
    ChunkDocuments,
    CompareWithPrevious,
    ListDeleted,
    ReadDocumentIds,
    ReadDocuments,
    WriteChunks,
    WriteDeadLetter,
    WriteDeleted,
    WriteKeptChunks,
    WriteManifest,
    shared_tokenizer,
)
from transforms.chunkers.registry import build_router
from transforms.documents import CHUNK_SCHEMA, DOCUMENT_COLUMNS, FOLDER_FILES, folder_files, glob_sets
from transforms.incremental import MANIFEST_SCHEMA, previous_files
from transforms.tokenizers import TokenizerError

__all__ = ["RechunkOptions", "build_pipeline", "main", "run"]

_LOG = logging.getLogger("rechunk")
#: How many input files have their Parquet footer checked before the pipeline starts.
MAX_FILES_CHECKED = 1000
#: Default of --max-document-chars (code points): a 50 MB document is chunked.
DEFAULT_MAX_DOCUMENT_CHARS = 100_000_000
#: Above this, one document's UTF-8 could pass 2 GiB, which one Arrow string value cannot hold.
MAX_DOCUMENT_CHARS_LIMIT = 500_000_000
#: Default of --progress-seconds.
DEFAULT_PROGRESS_SECONDS = 30
#: Files the chunk job writes under --output (relative paths), which --input must not match.
OUTPUT_FILES = (
    "report.json",
    "chunks/chunks-00000-of-00001.parquet",
    "dead_letter/dead_letter-00000-of-00001.parquet",
    "documents/documents-00000-of-00001.parquet",
    "deleted/deleted-00000-of-00001.parquet",
)
#: --environment_type values of Beam's portable runners (Beam's own lookup is case-sensitive).
ENVIRONMENT_TYPES = ("DOCKER", "PROCESS", "EXTERNAL", "LOOPBACK")
#: Runners Beam knows that this job does not run on, and why.
UNSUPPORTED_RUNNERS = {
    # Measured (session 12): with --previous a side input of kept ids held the manifest's rows
    # instead (a crash, or the kept documents' chunks lost with exit 0), and its metrics gave the
    # report 0 documents read. Beam's own issue on its side inputs: apache/beam#18942 (open).
    "BundleBasedDirectRunner": (
        "its side inputs and metrics differ from the FnApiRunner's (kept chunks and report counts came out wrong)"
    ),
    "InteractiveRunner": "it is for notebooks and fails on this job's graph",
}


class OptionError(ValueError):
    """A command-line mistake: one line, exit status 2."""


class RechunkOptions(PipelineOptions):
    """The job's own options; every other Beam option passes through to the runner."""

    @classmethod
    def _add_argparse_args(cls, parser) -> None:
        parser.add_argument("--input", help="File pattern of document Parquet files (any Beam filesystem).")
        parser.add_argument(
            "--output",
            help="Output directory: chunks/, dead_letter/, documents/, deleted/ (with --previous), report.json.",
        )
        parser.add_argument("--config", help="YAML or JSON chunking configuration. Default: configs/default.yaml.")
        parser.add_argument(
            "--tokenizer",
            help="Budget tokenizer: tiktoken:cl100k_base (default), utf8-bytes, or hf:PATH to a tokenizer.json (local or gs://).",
        )
        parser.add_argument(
            "--max-tokens",
            "--max_tokens",
            dest="max_tokens",
            help="Hard budget for every chunk's embedding_text, in tokens of --tokenizer. Default 512.",
        )
        parser.add_argument(
            "--column-map",
            "--column_map",
            dest="column_map",
            help="Input column names, e.g. content=text,id=doc_id. Default: the contract's names.",
        )
        parser.add_argument(
            "--max-document-chars",
            "--max_document_chars",
            dest="max_document_chars",
            help=f"Longer documents (in code points) are dead-lettered as document_too_large. "
            f"Default {DEFAULT_MAX_DOCUMENT_CHARS:,}.",
        )
        parser.add_argument(
            "--progress-seconds",
            "--progress_seconds",
            dest="progress_seconds",
            help=f"Log documents and chunks per second every N seconds (per worker); 0: never. "
            f"Default {DEFAULT_PROGRESS_SECONDS}.",
        )
        parser.add_argument(
            "--previous",
            help="An earlier run's output directory: unchanged documents keep its chunks without being chunked again.",
        )


@dataclass(frozen=True)
class Job:
    """Everything checked before the pipeline starts."""

    input: str
    output: str
    spec: dict[str, Any]
    tokenizer_identity: str
    column_map: dict[str, str]
    options: PipelineOptions
    previous: str | None = None
    max_document_chars: int = DEFAULT_MAX_DOCUMENT_CHARS
    progress_seconds: float = DEFAULT_PROGRESS_SECONDS


def _unknown_options(argv: Sequence[str], *, exclude: tuple[type, ...] = ()) -> list[str]:
    """Options no registered PipelineOptions class knows, leaving out the classes in ``exclude``
    (Beam itself would only warn and drop them)."""
    from apache_beam.options.pipeline_options import _BeamArgumentParser

    class _Parser(_BeamArgumentParser):
        def error(self, message):  # argparse would print Beam's whole usage and exit
            raise OptionError(message)

    parser = _Parser(allow_abbrev=False)
    seen: dict[str, type] = {}
    for cls in PipelineOptions.__subclasses__():
        if cls not in exclude:
            seen.setdefault(str(cls), cls)
    for cls in seen.values():
        cls._add_argparse_args(parser)
    _, unknown = parser.parse_known_args(list(argv))
    return unknown


def check_given_once(argv: Sequence[str], parser: argparse.ArgumentParser) -> None:
    """Each of ``parser``'s options at most once in ``argv`` (``--opt V`` or ``--opt=V``, under any
    of its names): argparse would keep the last of a repeated one silently.

    Raises:
        OptionError: Naming the repeated option and how many times it is given.
    """
    for action in parser._actions:
        given = [a for a in argv if a.split("=", 1)[0] in action.option_strings]
        if len(given) > 1:
            raise OptionError(f"{action.option_strings[0]} is given {len(given)} times; give it once")


def _parse_column_map(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    mapping: dict[str, str] = {}
    for item in text.split(","):
        target, sep, source = item.partition("=")
        if not sep or target.strip() not in DOCUMENT_COLUMNS or not source.strip():
            raise OptionError(
                f"--column-map: expected NAME=COLUMN with NAME one of {', '.join(DOCUMENT_COLUMNS)}, got {item!r}"
            )
        if target.strip() in mapping:
            raise OptionError(f"--column-map: {target.strip()} is mapped twice in {text!r}")
        mapping[target.strip()] = source.strip()
    if len(set(mapping.values())) < len(mapping):
        raise OptionError(f"--column-map: two names map to the same column in {text!r}")
    for target, source in mapping.items():
        if source in DOCUMENT_COLUMNS and source != target and source not in mapping:
            raise OptionError(
                f"--column-map: {target}={source} would read the {source} column as {target}; "
                f"map {source} elsewhere too, or choose another column"
            )
    return mapping


def _has_files(folder: str, names: str = "*") -> bool:
    """Whether ``folder`` is a folder holding a file that ``names`` (a pattern under it) matches
    (for an error's hint; never raises)."""
    try:
        return bool(FileSystems.match([f"{folder}/{names}"], limits=[1])[0].metadata_list)
    except Exception:  # no such folder, or a filesystem error: no hint
        return False


def _check_input_schema(pattern: str, path: str, column_map: dict[str, str], *, alone: bool = False) -> None:
    """Read the footer of one input file: it must be Parquet with the id and content columns.
    ``alone``: ``path`` is what the pattern names, no glob (a folder there gets a hint).

    Raises:
        OptionError: The file is not readable Parquet, or lacks a required column.
    """
    import pyarrow.parquet as pq

    try:
        with FileSystems.open(path) as f, pq.ParquetFile(f) as parquet:
            all_names = list(parquet.schema_arrow.names)
    except Exception as err:  # pyarrow's ArrowInvalid, or an IO error by scheme
        hint = f"; for the files in a folder write {pattern}/" if alone and _has_files(path) else ""
        if os.path.basename(path).startswith((".", "_")) and not pattern.endswith("/"):
            folder = path[: len(path) - len(os.path.basename(path))]
            hint = f"; {folder} skips names starting with . or _ (Spark's _SUCCESS, Hadoop's .crc files)"
        raise OptionError(
            f"--input {pattern}: {path} is not a readable Parquet file ({_one_line(err, 160)}){hint}"
        ) from None
    names = set(all_names)
    has = ", ".join(sorted(names)) or "no columns"
    for column in ("id", "content"):
        source = column_map.get(column, column)
        if source not in names:
            raise OptionError(
                f"--input {pattern}: {path} has no column {source!r} (it has {has}); "
                f"name yours with --column-map {column}=COLUMN"
            )
    for column, source in sorted(column_map.items()):
        if source not in names:
            raise OptionError(f"--column-map {column}={source}: {path} has no column {source!r} (it has {has})")
    for column in DOCUMENT_COLUMNS:
        source = column_map.get(column, column)
        if all_names.count(source) > 1:
            raise OptionError(f"--input {pattern}: {path} has {all_names.count(source)} columns named {source!r}")


def _one_line(err: BaseException, limit: int = 200) -> str:
    return " ".join(str(err).split())[:limit]


def _max_document_chars(value: str | None) -> int:
    if value is None:
        return DEFAULT_MAX_DOCUMENT_CHARS
    try:
        chars = int(value)
    except ValueError:
        chars = 0
    if not 0 < chars <= MAX_DOCUMENT_CHARS_LIMIT:
        raise OptionError(
            f"--max-document-chars must be an integer from 1 to {MAX_DOCUMENT_CHARS_LIMIT:,} "
            f"(one document's text must stay under Arrow's 2 GiB), got {value!r}"
        )
    return chars


def _progress_seconds(value: str | None) -> float:
    if value is None:
        return DEFAULT_PROGRESS_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise OptionError(f"--progress-seconds must be a number of seconds >= 0 (0: never), got {value!r}")
    return seconds


def _max_tokens(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        max_tokens = int(value)
    except ValueError:
        raise OptionError(f"--max-tokens must be a positive integer, got {value!r}") from None
    if max_tokens <= 0:
        raise OptionError(f"--max-tokens must be a positive integer, got {max_tokens}")
    if max_tokens > MAX_TOKENS_LIMIT:
        raise OptionError(f"--max-tokens must be at most {MAX_TOKENS_LIMIT:,}, got {max_tokens:,}")
    return max_tokens


def _load_spec(job_opts: RechunkOptions) -> tuple[dict[str, Any], Any]:
    """The resolved configuration and the loaded tokenizer; every chunker is built once to check it."""
    where = f"--config {job_opts.config}" if job_opts.config else "default config"
    max_tokens = _max_tokens(job_opts.max_tokens)
    try:
        spec = resolve_config(
            load_config(job_opts.config), tokenizer=job_opts.tokenizer, max_tokens=max_tokens, source=where
        )
    except ConfigError as err:
        raise OptionError(str(err)) from None
    except (TypeError, ValueError, AttributeError, KeyError) as err:  # a shape no check foresaw
        raise OptionError(f"{where}: malformed configuration ({type(err).__name__}: {err})") from None
    kind, _, path = spec["tokenizer"].partition(":")
    if kind == "hf" and path and "://" not in path:  # workers load it again, from their own working directory
        spec["tokenizer"] = f"hf:{os.path.abspath(path)}"
    if kind == "hf":
        _check_reachable("--tokenizer" if job_opts.tokenizer else f"{where}: tokenizer", path, spec["tokenizer"])
    try:
        # The workers' per-process cache: in-process runners (in_memory) reuse this instance
        # instead of loading the vocabulary a second time (0.4 s for cl100k_base).
        tokenizer = shared_tokenizer(spec["tokenizer"])
    except TokenizerError as err:
        raise OptionError(f"--tokenizer: {err}") from None
    try:
        build_router(spec, tokenizer=tokenizer)
    except (TypeError, ValueError, ImportError) as err:
        raise OptionError(f"{where}: {_one_line(err, 400)}") from None
    return spec, tokenizer


def _check_input(given: str, pattern: str, column_map: dict[str, str]) -> None:
    """The files of ``pattern`` (``--input`` as ``given``, which the messages quote; the pattern the
    workers read, local paths made absolute) exist and are Parquet with the id and content columns
    (up to :data:`MAX_FILES_CHECKED` files)."""
    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except Exception as err:  # BeamIOError and friends, by scheme
        raise OptionError(f"--input {given}: cannot list files ({_one_line(err)})") from None
    if not matched:
        hint = ""
        if given.endswith("/"):
            hint = " (names starting with . or _ are skipped"
            # what the hint reads: a subfolder's _SUCCESS or part-0.txt alone gets no such hint
            if _has_files(pattern[: -len(FOLDER_FILES) - 1], "**/*.parquet"):
                hint += f"; files in its subfolders are read with '{given}**.parquet'"
            hint += ")"
        if _holds_set(given):
            hint += "; [...] is a set of characters in a pattern: write [[] for a literal ["
        raise OptionError(f"--input {given}: no file matches{hint}")
    for m in matched:
        _check_utf8("--input", given, m.path)
    # Every file's footer, up to a bound: a non-Parquet file in the glob would otherwise fail the
    # job mid-pipeline. Past the bound only the first files are checked (listing cost on GCS).
    for path in sorted(m.path for m in matched)[:MAX_FILES_CHECKED]:
        _check_input_schema(given, path, column_map, alone=path == pattern)


def _holds_set(pattern: str) -> bool:
    """Whether ``pattern`` holds a ``[...]`` that Beam reads as a set of characters, other than
    ``[[]`` (a literal ``[``); an unclosed ``[`` (``data[2024/``) is literal and needs no escaping."""
    return any(pattern[start:end] != "[[]" for start, end in glob_sets(pattern))


def _check_utf8(flag: str, given: str, path: str) -> None:
    """``path`` (``flag``'s value ``given``, or a file it matched) must be UTF-8 text: a local name
    of other bytes (Python holds them as surrogates) failed the job in Beam's graph with a
    traceback (UnicodeEncodeError).

    Raises:
        OptionError: It is not; the message shows its bytes escaped.
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        where = f"{flag} {given.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace')}"
        raise OptionError(
            f"{where}: the name {shown} is not UTF-8; Beam takes file names as UTF-8 text, rename it"
        ) from None


def _check_filesystem(flag: str, path: str) -> None:
    """``path`` must be on a filesystem Beam has here (a typo such as ``gcs://`` would otherwise
    pass the checks and fail mid-pipeline), and not look like a URL missing a slash (``gs:/b/x``
    is a local folder named ``gs:``, written to silently), nor start with an unexpanded ``~``
    (``--output=~/x`` wrote to a folder ``./~/x``)."""
    if path.startswith("~"):
        raise OptionError(
            f"{flag} {path}: ~ is not expanded here (a shell expands it only at the start of a "
            f"word, not after --flag=); give the full path, or ./{path} for a local folder so named"
        )
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):/(?!/)", path)
    if scheme and "://" not in path:
        raise OptionError(
            f"{flag} {path}: a local path starting with {scheme.group(1)}:, "
            f"did you mean {scheme.group(1)}://...? (write ./{path} for a local folder so named)"
        )
    try:
        FileSystems.get_filesystem(path)
    except Exception as err:  # ValueError for an unknown scheme
        raise OptionError(f"{flag} {path}: no Beam filesystem for this path ({_one_line(err, 120)})") from None


def _check_reachable(flag: str, path: str, shown: str | None = None) -> None:
    """A gs:// path's service must answer as an HTTP service within 5 s: otherwise Beam's GCS
    client retries for minutes (credentials, then listing) before failing. Other schemes are left
    to Beam.

    The check asks for a bucket listing (``GET {endpoint}/storage/v1/b``) as Beam's client would:
    through the proxy the environment names (``https_proxy``, ``no_proxy``, ...), with the
    certificates Python trusts (a self-signed emulator that Beam's client would reject fails
    here too), at the path ``STORAGE_EMULATOR_HOST`` gives. Any HTTP status below 500 (for Cloud
    Storage itself, 401 without credentials) is an answer. ``STORAGE_EMULATOR_HOST`` must name
    its scheme, as Beam's client takes it as given.

    Raises:
        OptionError: No answer in time, no HTTP answer, a server error, or
            ``STORAGE_EMULATOR_HOST`` is not ``http[s]://host[:port]``; the message names ``flag``
            and ``shown`` (default ``path``).
    """
    import http.client
    import urllib.error
    import urllib.request
    from urllib.parse import urlsplit

    if not path.startswith("gs://"):
        return
    endpoint = os.environ.get("STORAGE_EMULATOR_HOST")
    if endpoint:
        # (user and password, if the value holds them, are not printed)
        safe = re.sub(r"^([^/]*//)?[^/@]*@", lambda m: (m.group(1) or "") + "***@", endpoint)
        where = f"{flag} {shown or path}: STORAGE_EMULATOR_HOST={safe!r}"
        try:
            url = urlsplit(endpoint)
            host, port = url.hostname, url.port
        except ValueError as err:  # a port that is no number or out of range, a broken IPv6 address
            raise OptionError(f"{where} is not a host and port ({_one_line(err)})") from None
        if url.scheme.lower() not in ("http", "https") or not host:
            raise OptionError(
                f"{where} needs its scheme, e.g. http://{safe.split('://')[-1]} (Beam's GCS client takes it as given)"
            )
        base = endpoint.strip().rstrip("/")
        port = port or (443 if url.scheme.lower() == "https" else 80)
    else:
        host, port, base = "storage.googleapis.com", 443, "https://storage.googleapis.com"

    def ask() -> None:
        # A new opener: it reads the proxy variables now (urlopen's is built once per process).
        try:
            with urllib.request.build_opener().open(f"{base}/storage/v1/b?project=rechunk-check", timeout=5):
                pass
        except urllib.error.HTTPError as err:  # an HTTP answer: the service is there unless it failed
            err.close()
            if err.code >= 500:
                raise OSError(f"HTTP {err.code} from the service") from None
        except urllib.error.URLError as err:
            raise OSError("no reply in 5 s" if isinstance(err.reason, TimeoutError) else str(err.reason)) from None
        except TimeoutError:
            raise OSError("no reply in 5 s") from None

    err = _in_time(ask, 12)
    if err is not None:
        # An OSError says why; anything else is no HTTP (http.client's BadStatusLine, or
        # RemoteDisconnected, an OSError too), or a host name IDNA rejects.
        if isinstance(err, OSError) and not isinstance(err, http.client.HTTPException):
            why = _one_line(err)
        else:
            why = f"no HTTP answer: {type(err).__name__}: {_one_line(err, 80)}"
        raise OptionError(f"{flag} {shown or path}: cannot reach Cloud Storage at {host}:{port} ({why})")


def _in_time(call, seconds: float) -> BaseException | None:
    """Run ``call()`` in a daemon thread for at most ``seconds`` (name resolution has no timeout of
    its own): ``None`` when it returned, the exception it raised, or a ``TimeoutError`` ("no reply
    in N s") when it had not finished."""
    import threading

    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            outcome.append(None)
        except Exception as err:
            outcome.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return outcome[0] if outcome else TimeoutError(f"no reply in {seconds:g} s")


def _inside_pattern(output: str, pattern: str, written: Sequence[str]) -> bool:
    """Whether files a job writes under ``output`` (``written``: names relative to it) would match
    the input ``pattern``: the next run over the same pattern would read them as its input."""
    from apache_beam.io.filesystem import FileSystem

    regex = re.compile(FileSystem.translate_pattern(pattern))
    return any(regex.match(f"{output}/{name}") for name in written)


def _check_folder_name(flag: str, folder: str) -> None:
    """``folder`` (``--output``, ``--previous``) is a folder, not a pattern: Beam's file sinks find
    their own temporary files by pattern (a folder "out [1]" failed the job at its very end), and a
    later run could not take such an output as --previous. A relative name is checked as the
    workers get it, under the current folder, whose own name must then be free of them too.

    Raises:
        OptionError: ``folder``, or the current folder it is relative to, holds ``* ? [ ] { }``.
    """
    if any(c in folder for c in "*?[]{}"):
        raise OptionError(f"{flag} {folder}: a directory, not a pattern; its name must not hold * ? [ ] {{ }}")
    if any(c in _worker_path(folder) for c in "*?[]{}"):
        raise OptionError(
            f"{flag} {folder}: the current folder {os.getcwd()} holds * ? [ ] {{ }}, which Beam reads as a "
            "pattern in the absolute path; give an absolute path elsewhere"
        )


def _check_output(output: str) -> None:
    _check_filesystem("--output", output)
    _check_folder_name("--output", output)
    if "://" not in output and os.path.exists(output) and not os.path.isdir(output):
        raise OptionError(f"--output {output}: is a file, not a directory")
    for sub in ("chunks", "dead_letter", "documents", "deleted"):
        try:
            existing = FileSystems.match([f"{output}/{sub}/**"])[0].metadata_list
        except Exception:  # nothing there yet
            existing = []
        if existing:
            raise OptionError(
                f"--output {output}: {sub}/ already holds files from another run; choose an empty directory"
            )


def create_output(output: str) -> None:
    """Create a local ``--output`` (the writers would anyway): a path that cannot be a directory
    (under a file, or where the user may not write) is an option error here, not a traceback at
    the first write. Used by both jobs once their other checks of it have passed."""
    if "://" not in output:
        try:
            os.makedirs(output, exist_ok=True)
        except OSError as err:
            raise OptionError(f"--output {output}: cannot create the directory ({_one_line(err)})") from None


def _check_previous(previous: str, output: str) -> str:
    """The ``--previous`` directory, checked: another directory than ``--output``, holding a
    finished rechunk run (its ``report.json``) whose ``chunks/`` and ``documents/`` are whole.

    Every Parquet footer there is read: each file must be Parquet with the columns the job reads,
    and ``chunks/`` must hold as many rows as the report says were written (a missing shard would
    otherwise lose the kept documents' chunks, in this run and every later one).

    Raises:
        OptionError: Any of that is not so.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not previous.strip():
        raise OptionError("--previous: empty path; give an earlier run's output directory, or leave the option out")
    previous = previous.rstrip("/") or "/"
    _check_filesystem("--previous", previous)
    _check_folder_name("--previous", previous)
    if _worker_path(previous) == _worker_path(output):
        raise OptionError(f"--previous {previous}: must be another directory than --output")
    if _worker_path(output).startswith(_worker_path(previous).rstrip("/") + "/"):
        raise OptionError(f"--output {output}: must not be inside --previous {previous}")
    try:
        with FileSystems.open(f"{previous}/report.json") as f:
            written = json.loads(f.read())["chunks_written"]
    except Exception:  # missing (an unfinished run, or not a rechunk output), or not a report
        raise OptionError(
            f"--previous {previous}: no readable report.json there; expected the output of a finished rechunk run"
        ) from None
    if type(written) is not int or written < 0:
        raise OptionError(
            f"--previous {previous}: report.json's chunks_written is {written!r}, not a count; the output was changed"
        )
    rows = {}
    for sub, expected in (("chunks", CHUNK_SCHEMA), ("documents", MANIFEST_SCHEMA)):
        try:
            matched = FileSystems.match([previous_files(previous, sub)])[0].metadata_list
        except Exception:  # no such directory, by scheme
            matched = []
        if not matched:
            hint = " (an output of rechunk 0.1.0 or later)" if sub == "documents" else ""
            raise OptionError(
                f"--previous {previous}: no {sub}/*.parquet there (names starting with . or _ are skipped); "
                f"expected a rechunk run's output{hint}"
            )
        rows[sub] = 0
        for path in sorted(m.path for m in matched):
            try:
                with FileSystems.open(path) as f, pq.ParquetFile(f) as parquet:
                    types = {field.name: field.type for field in parquet.schema_arrow}
                    rows[sub] += parquet.metadata.num_rows
            except Exception as err:
                raise OptionError(
                    f"--previous {previous}: {path} is not a readable Parquet file ({_one_line(err, 160)})"
                ) from None
            for field in expected:
                if field.name not in types:
                    raise OptionError(
                        f"--previous {previous}: {path} lacks column {field.name!r}; expected a rechunk run's {sub}/"
                    )
                found = types[field.name]
                # A list column may name its items otherwise ("element") and still be right.
                if not pa.types.is_list(found) and found != field.type:
                    raise OptionError(
                        f"--previous {previous}: {path} column {field.name!r} is {found}, "
                        f"not {field.type}; expected a rechunk run's {sub}/"
                    )
    if rows["chunks"] != written:
        raise OptionError(
            f"--previous {previous}: chunks/ holds {rows['chunks']} rows but report.json says {written} "
            "were written; the output is incomplete or was changed"
        )
    return previous


def _check_runner(options: PipelineOptions, *, tokenizer: str | None = None) -> None:
    """Pick FnApiRunner for the DirectRunner (no Prism download); check the runner and the files it ships."""
    standard = options.view_as(StandardOptions)
    short = (standard.runner or "direct").strip().rsplit(".", 1)[-1].lower().removesuffix("runner")
    if short in ("direct", "switchingdirect"):
        # Beam 2.77's SwitchingDirectRunner (what any other spelling of DirectRunner gives) tries
        # Prism first, downloading its binary from GitHub; FnApiRunner is what it falls back to.
        standard.runner = "FnApiRunner"
    # By name, before Beam imports it (InteractiveRunner's import fails with this pandas).
    for name, why in UNSUPPORTED_RUNNERS.items():
        if short == name.lower().removesuffix("runner"):
            raise OptionError(f"--runner {standard.runner}: not supported, {why}; use DirectRunner (FnApiRunner)")
    try:
        from apache_beam.runners.runner import create_runner

        runner = create_runner(standard.runner)
    except (ValueError, ImportError) as err:
        raise OptionError(f"--runner {standard.runner}: {_one_line(err)}") from None
    except Exception as err:  # a runner module that fails on import with these libraries
        raise OptionError(f"--runner {standard.runner}: Beam cannot load it ({_one_line(err)})") from None
    setup = options.view_as(SetupOptions)
    for flag, path in (("--setup_file", setup.setup_file), ("--requirements_file", setup.requirements_file)):
        if path and "://" not in path and not os.path.isfile(path):
            raise OptionError(f"{flag} {path}: no such file")
    workers = options.view_as(DirectOptions).direct_num_workers
    if workers is not None and workers < 0:
        raise OptionError(f"--direct_num_workers must be >= 0 (0: one per core), got {workers}")
    if options.view_as(TypeOptions).runtime_type_check:
        raise OptionError(
            "--runtime_type_check: Beam 2.77's own file sink fails it when the job ends (its "
            "WriteImpl/FinalizeWrite step); use --performance_runtime_type_check"
        )
    _check_cluster_runner(options, runner, tokenizer)
    # Beam's own checks of every option view, which beam.Pipeline() would raise as a traceback.
    errors = PipelineOptionsValidator(options, runner).validate()
    if errors:
        raise OptionError(f"--runner {standard.runner}: {_one_line(errors[0])}")


def _check_job_endpoint(endpoint: str | None, runner: str) -> None:
    """A portable runner's job service must be given and answer Beam's job API (``GetJobs``)
    within 5 s: Beam itself would wait 300 s for a silent address, or end in a gRPC traceback at
    another gRPC server."""
    import socket

    import grpc

    if not endpoint:
        raise OptionError(f"--job_endpoint is required with {runner}: HOST:PORT of the job service (or 'embed')")
    if endpoint == "embed":
        return
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise OptionError(f"--job_endpoint {endpoint}: expected HOST:PORT of the job service (or 'embed')")
    # A refused or unresolvable address (or a host name IDNA rejects) fails at once, with its reason.
    err = _in_time(lambda: socket.create_connection((host.strip("[]"), int(port)), timeout=5).close(), 6)
    if err is not None:
        raise OptionError(f"--job_endpoint {endpoint}: no job service answers there ({_one_line(err, 120)})")
    from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc

    channel = grpc.insecure_channel(endpoint)
    grpc_log = logging.getLogger("grpc._common")  # it logs a traceback for a reply it cannot decode
    level = grpc_log.level
    grpc_log.setLevel(logging.CRITICAL)
    try:
        grpc.channel_ready_future(channel).result(timeout=5)
        # Any gRPC server gets this far (an artifact service, say); a Beam job service lists its jobs.
        beam_job_api_pb2_grpc.JobServiceStub(channel).GetJobs(beam_job_api_pb2.GetJobsRequest(), timeout=5)
    except grpc.FutureTimeoutError:
        raise OptionError(f"--job_endpoint {endpoint}: no job service answers there (no gRPC reply in 5 s)") from None
    except grpc.RpcError as err:
        raise OptionError(
            f"--job_endpoint {endpoint}: no Beam job service answers there "
            f"({err.code().name}: {_one_line(err.details() or '', 120)})"
        ) from None
    finally:
        grpc_log.setLevel(level)
        channel.close()


def _check_embedded_environment(environment_type: str | None) -> None:
    """``--job_endpoint embed`` runs the SDK workers on this machine: Beam's default environment
    there is DOCKER (a container of Beam's SDK image, pulled if missing), which fails with a
    traceback where Docker is absent, so the environment must be named."""
    import shutil
    import subprocess

    if environment_type is None:
        raise OptionError(
            "--job_endpoint embed: give --environment_type LOOPBACK (workers in this process), or DOCKER "
            "(Beam's SDK container: needs Docker, and the image or the network to pull it)"
        )
    if environment_type == "DOCKER":
        if shutil.which("docker") is None:
            raise OptionError("--environment_type DOCKER: no docker command on this machine; use LOOPBACK")
        try:
            subprocess.run(["docker", "info"], capture_output=True, timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            raise OptionError(
                "--environment_type DOCKER: Docker does not answer here (docker info failed); start it, or use LOOPBACK"
            ) from None


def _check_runner_binary(options: PipelineOptions, runner) -> None:
    """Runners that would download a binary at start (Prism's Go binary from GitHub, Flink's and
    Spark's job-server jars from Maven) must be given a local one, or a running job service: offline
    the download fails after a long wait, with a traceback."""
    from apache_beam.runners.portability.flink_runner import FlinkRunner
    from apache_beam.runners.portability.prism_runner import PrismRunner
    from apache_beam.runners.portability.spark_runner import SparkRunner

    name = type(runner).__name__
    if isinstance(runner, PrismRunner):
        location = options.view_as(PrismRunnerOptions).prism_location
        if not location or not os.path.isfile(location):
            raise OptionError(
                f"--prism_location {location}: {name} downloads its binary from GitHub unless this is a local "
                "file; give the path of a prism binary, or leave --runner out (the DirectRunner runs offline)"
                if location
                else f"--prism_location is required with {name}: the path of a local prism binary (else Beam downloads "
                "it from GitHub); or leave --runner out (the DirectRunner runs offline)"
            )
        return
    for runner_class, options_class, flag in (
        (FlinkRunner, FlinkRunnerOptions, "flink_job_server_jar"),
        (SparkRunner, SparkRunnerOptions, "spark_job_server_jar"),
    ):
        if not isinstance(runner, runner_class):
            continue
        endpoint = options.view_as(PortableOptions).job_endpoint
        if endpoint:
            _check_job_endpoint(endpoint, name)
            return
        jar = getattr(options.view_as(options_class), flag)
        if not jar or not os.path.isfile(jar):
            raise OptionError(
                f"--{flag}{' ' + jar if jar else ''}: {name} downloads its job-server jar from Maven unless "
                f"--{flag} is a local file; give one, or --job_endpoint HOST:PORT of a running job server"
            )


def _check_cluster_runner(options: PipelineOptions, runner, tokenizer: str | None) -> None:
    """The options a cluster runner needs, checked before Beam would fail on them mid-submission."""
    from apache_beam.runners.dataflow.dataflow_runner import DataflowRunner
    from apache_beam.runners.portability.portable_runner import PortableRunner

    name = type(runner).__name__
    dry_run = options.view_as(TestOptions).dry_run
    if dry_run not in (False, True, "True", "true"):  # Beam takes any string as true
        raise OptionError(f"--dry_run={dry_run}: give --dry_run=True, or leave the option out")
    if dry_run and type(runner) is not DataflowRunner:
        raise OptionError(f"--dry_run: only DataflowRunner has a dry run; {name} would run the job")
    portable = options.view_as(PortableOptions)
    if isinstance(runner, PortableRunner) and portable.environment_type is not None:
        from apache_beam.portability.common_urns import environments

        # Beam takes the names in upper case, or the URNs of its registered environments.
        urns = {getattr(environments, kind).urn: kind for kind in ENVIRONMENT_TYPES if kind != "LOOPBACK"}
        kind = urns.get(portable.environment_type, portable.environment_type)
        if kind not in ENVIRONMENT_TYPES:
            raise OptionError(
                f"--environment_type {portable.environment_type}: one of {', '.join(ENVIRONMENT_TYPES)} (upper case)"
            )
        portable.environment_type = kind
    if type(runner) is PortableRunner:
        _check_job_endpoint(portable.job_endpoint, name)
        if portable.job_endpoint == "embed":
            _check_embedded_environment(portable.environment_type)
    _check_runner_binary(options, runner)
    if not isinstance(runner, DataflowRunner):
        return
    cloud = options.view_as(GoogleCloudOptions)
    if not cloud.project:
        raise OptionError(f"--project is required with {name}: the Google Cloud project to run in")
    if not cloud.region and not os.environ.get("CLOUDSDK_COMPUTE_REGION"):
        raise OptionError(f"--region is required with {name}: the Dataflow region, e.g. europe-west1")
    # Beam falls back from one location to the other; with neither valid it would try to create a bucket.
    validator = PipelineOptionsValidator(options, runner)
    errors = {flag: validator.validate_gcs_path(cloud, flag) for flag in ("temp_location", "staging_location")}
    if all(errors.values()):
        if cloud.temp_location is None and cloud.staging_location is None:
            raise OptionError(f"--temp_location is required with {name}: a gs://BUCKET/PATH for temporary files")
        flag = "temp_location" if cloud.temp_location is not None else "staging_location"
        raise OptionError(
            f"--{flag} {getattr(cloud, flag)}: {name} needs a gs://BUCKET/PATH here ({_one_line(errors[flag][0], 200)})"
        )
    job_opts = options.view_as(RechunkOptions)
    hf_path = tokenizer[3:] if tokenizer and tokenizer.startswith("hf:") else None
    for where, path in (
        (f"--input {job_opts.input}", job_opts.input),
        (f"--output {job_opts.output}", job_opts.output),
        (f"--previous {job_opts.previous}", job_opts.previous),
        (f"--tokenizer {tokenizer}", hf_path),
    ):
        if path is not None and ("://" not in path or path.startswith("file://")):
            raise OptionError(f"{where}: {name} workers cannot reach local paths; use gs://")


def parse_job(argv: Sequence[str]) -> Job:
    """Parse and check the command line, the configuration, the tokenizer, input and output.

    Raises:
        OptionError: Any mistake, as one line naming the option.
    """
    unknown = _unknown_options(argv)
    if unknown:
        kind = "option" if unknown[0].startswith("-") else "argument"
        raise OptionError(f"unrecognized {kind} {unknown[0]} (see rechunk --help)")
    own = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    RechunkOptions._add_argparse_args(own)
    check_given_once(argv, own)
    options = PipelineOptions(list(argv))
    job_opts = options.view_as(RechunkOptions)
    if not job_opts.input:
        raise OptionError("--input is required: a file pattern of document Parquet files")
    if not job_opts.output:
        raise OptionError(
            "--output is required: the directory to write chunks/, dead_letter/, documents/ and report.json"
        )
    for flag, path in (("--input", job_opts.input), ("--output", job_opts.output), ("--previous", job_opts.previous)):
        if path is not None:
            _check_utf8(flag, path, path)
    column_map = _parse_column_map(job_opts.column_map)
    max_document_chars = _max_document_chars(job_opts.max_document_chars)
    progress_seconds = _progress_seconds(job_opts.progress_seconds)
    # A gs:// path whose service does not answer: one line in 5 s, not minutes of Beam's retries
    # (the tokenizer's, from the flag or the configuration, in _load_spec).
    for flag, path in (
        ("--input", job_opts.input),
        ("--output", job_opts.output),
        ("--previous", job_opts.previous),
        ("--config", job_opts.config),
    ):
        if path:
            _check_reachable(flag, path)
    spec, tokenizer = _load_spec(job_opts)
    _check_utf8("--tokenizer", spec["tokenizer"], spec["tokenizer"])  # hf:PATH goes into the graph as text
    # The runner's own options first: they need no filesystem, and listing gs:// without them
    # (no project, no credentials) can take minutes.
    _check_runner(options, tokenizer=spec["tokenizer"])
    # A trailing "/" is the folder's data files: say so before the workers' absolute path drops
    # the "/" (which left the folder itself, read as a file mid-pipeline).
    pattern = folder_files(job_opts.input) if job_opts.input.endswith("/") else job_opts.input
    # The pattern the workers read: Beam lists a relative pattern from the folder before its first
    # glob character, so '*.parquet' (no folder before it) matched nothing here but did there.
    _check_filesystem("--input", job_opts.input)  # (Beam's own error would quote FOLDER_FILES)
    _check_input(job_opts.input, _worker_pattern(pattern), column_map)
    output = job_opts.output.rstrip("/") or "/"
    _check_output(output)
    if _inside_pattern(_worker_path(output), _worker_pattern(pattern), OUTPUT_FILES):
        raise OptionError(
            f"--output {job_opts.output}: inside --input {job_opts.input}; its chunk files would be read as "
            "documents by the next run"
        )
    previous = _check_previous(job_opts.previous, output) if job_opts.previous is not None else None
    create_output(output)
    return Job(
        input=pattern,
        output=output,
        spec=spec,
        tokenizer_identity=tokenizer.identity,
        column_map=column_map,
        options=options,
        previous=previous,
        max_document_chars=max_document_chars,
        progress_seconds=progress_seconds,
    )


def build_pipeline(pipeline: beam.Pipeline, job: Job) -> None:
    """Add the job's transforms to ``pipeline``."""
    identity = pipeline | "Tokenizer identity" >> beam.Create([job.tokenizer_identity])
    output = _worker_path(job.output)
    rows = pipeline | "Read documents" >> ReadDocuments(_worker_pattern(job.input), column_map=job.column_map)
    ids = pipeline | "Read document ids" >> ReadDocumentIds(_worker_pattern(job.input), column_map=job.column_map)
    admitted = rows | "Admit documents" >> AdmitDocuments(identity, ids=ids, max_document_chars=job.max_document_chars)
    documents = admitted.documents
    manifest = []
    if job.previous:
        compared = documents | "Compare with previous" >> CompareWithPrevious(
            _worker_path(job.previous), job.spec, identity, progress_seconds=job.progress_seconds
        )
        documents = compared["documents"]
        manifest.append(compared[KEPT_MANIFEST])
        _ = compared[KEPT_CHUNKS] | "Write kept chunks" >> WriteKeptChunks(f"{output}/chunks/kept")
    validated = documents | "Route, chunk and validate" >> ChunkDocuments(
        job.spec, identity, progress_seconds=job.progress_seconds
    )
    manifest.append(validated[MANIFEST])
    _ = validated.chunks | "Write chunks" >> WriteChunks(f"{output}/chunks/chunks")
    _ = (
        manifest
        | "Collect manifest" >> beam.Flatten()
        | "Write manifest" >> WriteManifest(f"{output}/documents/documents")
    )
    if job.previous:
        _ = (
            {"previous": compared[PREVIOUS_IDS], "chunks": validated.chunks}
            | "List deleted" >> ListDeleted()
            | "Write deleted" >> WriteDeleted(f"{output}/deleted/deleted")
        )
    _ = (
        (admitted[DEAD_LETTER], validated[DEAD_LETTER])
        | "Collect dead letter" >> beam.Flatten()
        | "Write dead letter" >> WriteDeadLetter(f"{output}/dead_letter/dead_letter")
    )


def _worker_path(path: str) -> str:
    """A local path made absolute: SDK workers (a portable runner's worker pool) have their own
    working directory, where a relative pattern would silently match nothing."""
    return path if "://" in path else os.path.abspath(path)


def _worker_pattern(pattern: str) -> str:
    """A local file pattern made absolute as :func:`_worker_path` makes a path, the current
    folder's own ``[ * ?`` written as sets (``[[]``, ``[*]``, ``[?]``) so that Beam reads them
    literally: run from a folder ``proj [v1]``, ``--input docs.parquet`` matched nothing in the
    workers (a traceback once the checks had passed)."""
    if "://" in pattern:
        return pattern
    folder = "" if os.path.isabs(pattern) else re.sub(r"[\[*?]", r"[\g<0>]", os.getcwd())
    return os.path.normpath(os.path.join(folder, pattern))  # normalized as os.path.abspath does


def run(job: Job, *, started: float | None = None) -> dict[str, Any] | None:
    """Run the job to completion and write ``report.json``; return the report.

    ``started`` (``time.monotonic()``) is when the command started, for the report's
    ``wall_seconds`` (by default, now). With ``--dry_run`` (DataflowRunner) the runner only
    translates and checks the graph: nothing runs, nothing is written, and there is no report
    (``None``).
    """
    started = time.monotonic() if started is None else started
    pipeline = beam.Pipeline(options=job.options)
    build_pipeline(pipeline, job)
    result = pipeline.run()
    if job.options.view_as(TestOptions).dry_run:
        return None
    result.wait_until_finish()
    report = build_report(
        result,
        output=job.output,
        spec=job.spec,
        tokenizer_identity=job.tokenizer_identity,
        wall_seconds=time.monotonic() - started,
        previous=job.previous,
    )
    write_report(report, f"{job.output}/report.json")
    return report


def _count(n: int, noun: str) -> str:
    """``n`` (thousands separated, as the progress lines give it) and ``noun``, the noun without its
    ``s`` when ``n`` is 1 (``1 document``, ``48,384 chunks``)."""
    return f"{n:,} {noun[:-1] if n == 1 else noun}"


def _summary(report: dict[str, Any], output: str) -> str:
    reasons = ", ".join(f"{k} {v:,}" for k, v in report["dead_letter_by_reason"].items()) or "none"
    tokens = report["token_count"]
    sizes = (
        f"tokens min {tokens['min']:,}, p50 {tokens['p50']:,}, p95 {tokens['p95']:,}, max {tokens['max']:,} "
        if tokens["max"] is not None
        else "no chunk, "
    )
    return "\n".join(
        [
            f"rechunk: {_count(report['documents_read'], 'documents')} read, {report['documents_chunked']:,} chunked, "
            f"{report['documents_dead_lettered']:,} dead-lettered ({report['documents_partially_rejected']:,} partly)",
            f"rechunk: {_count(report['chunks_written'], 'chunks')} written to {output}/chunks/ "
            f"({sizes}of max {report['max_tokens']:,}, {report['tokenizer']})",
            f"rechunk: {_count(report['dead_letter_rows'], 'dead-letter rows')} in {output}/dead_letter/ ({reasons})",
            *(
                [
                    f"rechunk: {_count(report['documents_skipped_unchanged'], 'unchanged documents')} kept from "
                    f"{inc['previous']} without chunking ({inc['documents_new']:,} new, {inc['documents_changed']:,} "
                    f"changed, {inc['documents_deleted']:,} deleted); {_count(inc['chunks_deleted'], 'previous chunk ids')} "
                    f"listed in {output}/deleted/"
                ]
                if (inc := report.get("incremental"))
                else []
            ),
            f"rechunk: report in {output}/report.json ({report['wall_seconds']} s)",
        ]
    )


_HELP = """usage: rechunk --input PATTERN --output DIR [--config FILE] [--tokenizer SPEC]
               [--max-tokens N] [--column-map NAME=COLUMN,...] [--previous DIR]
               [--max-document-chars N] [--progress-seconds N]
               [Beam pipeline options]

Chunk parsed documents (Parquet) for RAG ingestion with Apache Beam.

  --input PATTERN      document Parquet files (local path, gs://, any Beam filesystem)
  --output DIR         writes DIR/chunks/, DIR/dead_letter/, DIR/documents/ (Parquet), DIR/report.json
  --config FILE        YAML/JSON chunkers and routes (default: configs/default.yaml, in the README)
  --tokenizer SPEC     tiktoken:cl100k_base (default) | utf8-bytes | hf:PATH (tokenizer.json, local or gs://)
  --max-tokens N       hard budget for each chunk's embedding_text (default 512)
  --column-map MAP     input column names, e.g. content=text,id=doc_id
  --max-document-chars N  longer documents are dead-lettered as document_too_large (100,000,000)
  --progress-seconds N    log documents and chunks per second every N seconds (30; 0: never)
  --previous DIR       an earlier run's output: unchanged documents keep its chunks (not chunked
                       again); DIR/deleted/ lists its chunk ids this run no longer has

Any Apache Beam option passes through: --runner, --direct_running_mode, --direct_num_workers,
--setup_file, ... A mistake in the options exits with status 2 before the pipeline starts.

rechunk parse --input PATTERN --output DIR ...   raw files (HTML, Markdown, DOCX, PPTX, XLSX, PDF)
                       into this job's input with Docling (rechunk parse --help)
"""


class _WorkerProgress(logging.Filter):
    """Worker processes' log entries reach the launcher through Beam's logging service as one text
    per entry (``multi_processing``): of those below WARNING, pass rechunk's progress lines only,
    shown as the ``rechunk`` logger's own."""

    _MESSAGE = re.compile(r'message: "(progress: [^"]*)"')

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        found = self._MESSAGE.search(record.getMessage())
        if found is None:
            return False
        record.name, record.msg, record.args = "rechunk", found.group(1), ()
        return True


def say(text: str, end: str = "\n") -> None:
    """Print to stdout; a reader that has gone (``rechunk ... | head -1``) is not an error: the
    job's outcome stands and its report is in report.json, so the rest of stdout is dropped."""
    try:
        print(text, end=end, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job from command-line arguments; return the exit status (0 ok, 2 option error)."""
    started = time.monotonic()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["parse"]:  # rechunk parse ...: raw files into this job's input
        from pipelines.parse import main as parse_main

        return parse_main(argv[1:])
    if any(a in ("-h", "--help") for a in argv):
        say(_HELP, end="")
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _LOG.setLevel(logging.INFO)  # progress lines (transforms.progress) show; Beam's INFO does not
    forwarded = logging.getLogger("apache_beam.runners.portability.local_job_service")
    forwarded.setLevel(logging.INFO)
    forwarded.addFilter(_WorkerProgress())
    try:
        job = parse_job(argv)
    except OptionError as err:
        print(f"rechunk: error: {err}", file=sys.stderr)
        return 2
    report = run(job, started=started)
    if report is None:
        runner = job.options.view_as(StandardOptions).runner
        say(f"rechunk: dry run: {runner} built the job graph; nothing ran and nothing was written to {job.output}")
        return 0
    say(_summary(report, job.output))
    return 0


def cli(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``rechunk``, and ``rechunk parse`` for :mod:`pipelines.parse`).

    Exits with ``os._exit`` once the output and report are written: at interpreter finalization a
    native thread left by Arrow or gRPC can abort the process (exit 134, about one run in ten
    here), which would turn a finished job into a failure.
    """
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    cli()
