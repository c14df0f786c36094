"""Checks of the jobs' paths before any pipeline starts: input files, output and ``--previous``
folders, file names, filesystems and the reachability of Cloud Storage.

Each check raises :class:`~pipelines.options.OptionError` with one line naming the option, so that
a mistake costs the user no pipeline start and no traceback mid-run.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence

import pyarrow as pa
from apache_beam.io.filesystem import FileMetadata
from apache_beam.io.filesystems import FileSystems

from pipelines.options import OptionError, one_line
from pipelines.paths import holds_set, worker_path
from transforms.documents import CHUNK_SCHEMA, DOCUMENT_COLUMNS, FOLDER_FILES
from transforms.incremental import MANIFEST_SCHEMA, previous_files

__all__ = [
    "MAX_FILES_CHECKED",
    "call_with_deadline",
    "check_filesystem",
    "check_folder_name",
    "check_input",
    "check_output",
    "check_output_empty",
    "check_output_is_no_file",
    "check_previous",
    "check_reachable",
    "check_utf8",
    "create_output",
    "matched_input",
]

#: How many input files have their Parquet footer checked before the pipeline starts.
MAX_FILES_CHECKED = 1000


# -- names and filesystems ------------------------------------------------------------------------


def check_utf8(flag: str, given: str, path: str) -> None:
    """``path`` (``flag``'s value ``given``, or a file it matched) must be UTF-8 text: a local name
    of other bytes (Python holds them as surrogates) would fail the job in Beam's graph with a
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


def matched_input(
    given: str, pattern: str, *, no_match_hint: Callable[[str, str], str] | None = None
) -> list[FileMetadata]:
    """The files ``pattern`` matches (``--input`` as ``given``, which the messages quote), each
    with a UTF-8 name (see :func:`check_utf8`).

    Args:
        given: ``--input`` as written.
        pattern: The pattern the workers read.
        no_match_hint: Called with ``(given, pattern)`` when nothing matches; its text ends the
            message.

    Raises:
        OptionError: The pattern cannot be listed, matches nothing, or matches a name that is not
            UTF-8.
    """
    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except Exception as err:  # BeamIOError and friends, by scheme
        raise OptionError(f"--input {given}: cannot list files ({one_line(err)})") from None
    if not matched:
        hint = no_match_hint(given, pattern) if no_match_hint is not None else ""
        raise OptionError(f"--input {given}: no file matches{hint}")
    for m in matched:
        check_utf8("--input", given, m.path)
    return matched


def check_filesystem(flag: str, path: str) -> None:
    """``path`` must be on a filesystem Beam has here (a typo such as ``gcs://`` would otherwise
    pass the checks and fail mid-pipeline), and not look like a URL missing a slash (``gs:/b/x``
    is a local folder named ``gs:``, written to silently), nor start with an unexpanded ``~``
    (``--output=~/x`` would write to a folder ``./~/x``).

    Raises:
        OptionError: Any of those, naming ``flag`` and ``path``.
    """
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
        raise OptionError(f"{flag} {path}: no Beam filesystem for this path ({one_line(err, 120)})") from None


def check_folder_name(flag: str, folder: str) -> None:
    """``folder`` (``--output``, ``--previous``) is a folder, not a pattern: Beam's file sinks find
    their own temporary files by pattern (a folder "out [1]" fails the job at its very end), and a
    later run could not take such an output as --previous. A relative name is checked as the
    workers get it, under the current folder, whose own name must then be free of them too.

    Raises:
        OptionError: ``folder``, or the current folder it is relative to, holds ``* ? [ ] { }``.
    """
    if any(c in folder for c in "*?[]{}"):
        raise OptionError(f"{flag} {folder}: a directory, not a pattern; its name must not hold * ? [ ] {{ }}")
    if any(c in worker_path(folder) for c in "*?[]{}"):
        raise OptionError(
            f"{flag} {folder}: the current folder {os.getcwd()} holds * ? [ ] {{ }}, which Beam reads as a "
            "pattern in the absolute path; give an absolute path elsewhere"
        )


# -- Cloud Storage within a deadline --------------------------------------------------------------


def check_reachable(flag: str, path: str, shown: str | None = None) -> None:
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

    if not path.startswith("gs://"):
        return
    where = f"{flag} {shown or path}"
    host, port, base = _storage_endpoint(where)
    err = call_with_deadline(lambda: _ask_storage(base), 12)
    if err is not None:
        # An OSError says why; anything else is no HTTP (http.client's BadStatusLine, or
        # RemoteDisconnected, an OSError too), or a host name IDNA rejects.
        if isinstance(err, OSError) and not isinstance(err, http.client.HTTPException):
            why = one_line(err)
        else:
            why = f"no HTTP answer: {type(err).__name__}: {one_line(err, 80)}"
        raise OptionError(f"{where}: cannot reach Cloud Storage at {host}:{port} ({why})")


def _storage_endpoint(where: str) -> tuple[str | None, int, str]:
    """Host, port and base URL of Cloud Storage: ``STORAGE_EMULATOR_HOST`` when set, else Google's.

    Raises:
        OptionError: ``STORAGE_EMULATOR_HOST`` is not ``http[s]://host[:port]`` (``where`` starts
            the message).
    """
    from urllib.parse import urlsplit

    endpoint = os.environ.get("STORAGE_EMULATOR_HOST")
    if not endpoint:
        return "storage.googleapis.com", 443, "https://storage.googleapis.com"
    # (user and password, if the value holds them, are not printed)
    safe = re.sub(r"^([^/]*//)?[^/@]*@", lambda m: (m.group(1) or "") + "***@", endpoint)
    where = f"{where}: STORAGE_EMULATOR_HOST={safe!r}"
    try:
        url = urlsplit(endpoint)
        host, port = url.hostname, url.port
    except ValueError as err:  # a port that is no number or out of range, a broken IPv6 address
        raise OptionError(f"{where} is not a host and port ({one_line(err)})") from None
    if url.scheme.lower() not in ("http", "https") or not host:
        raise OptionError(
            f"{where} needs its scheme, e.g. http://{safe.split('://')[-1]} (Beam's GCS client takes it as given)"
        )
    return host, port or (443 if url.scheme.lower() == "https" else 80), endpoint.strip().rstrip("/")


def _ask_storage(base: str) -> None:
    """Ask ``base`` for a bucket listing, waiting 5 s for the reply.

    Raises:
        OSError: No reply, or an HTTP status of 500 or more; the message says which.
        Exception: Anything else the HTTP client raises (no HTTP answer).
    """
    import urllib.error
    import urllib.request

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


def call_with_deadline(call: Callable[[], object], seconds: float) -> BaseException | None:
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


# -- the chunk job's input ------------------------------------------------------------------------


def check_input(given: str, pattern: str, column_map: dict[str, str]) -> int | None:
    """The files of ``pattern`` (``--input`` as ``given``, which the messages quote; the pattern the
    workers read, local paths made absolute) exist and are Parquet with the id and content columns
    (up to :data:`MAX_FILES_CHECKED` files, in path order; listing costs on GCS).

    Returns:
        The rows of the matched files by their footers (the documents the job will read), or
        ``None`` when more than :data:`MAX_FILES_CHECKED` files matched (not every footer read).

    Raises:
        OptionError: The pattern cannot be listed, matches nothing, matches a name that is not
            UTF-8, or a checked file is not Parquet with the columns ``column_map`` names.
    """
    matched = matched_input(given, pattern, no_match_hint=_no_match_hint)
    # Every file's footer, up to a bound: a non-Parquet file in the glob would otherwise fail the
    # job mid-pipeline.
    rows = 0
    for path in sorted(m.path for m in matched)[:MAX_FILES_CHECKED]:
        rows += _check_input_schema(given, path, column_map, alone=path == pattern)
    return rows if len(matched) <= MAX_FILES_CHECKED else None


def _no_match_hint(given: str, pattern: str) -> str:
    """Why ``--input given`` may match nothing: a folder's skipped names and subfolders, or a set."""
    hint = ""
    if given.endswith("/"):
        hint = " (names starting with . or _ are skipped"
        # what the hint reads: a subfolder's _SUCCESS or part-0.txt alone gets no such hint
        if _has_files(pattern[: -len(FOLDER_FILES) - 1], "**/*.parquet"):
            hint += f"; files in its subfolders are read with '{given}**.parquet'"
        hint += ")"
    if holds_set(given):
        hint += "; [...] is a set of characters in a pattern: write [[] for a literal ["
    return hint


def _has_files(folder: str, names: str = "*") -> bool:
    """Whether ``folder`` is a folder holding a file that ``names`` (a pattern under it) matches
    (for an error's hint; never raises)."""
    try:
        return bool(FileSystems.match([f"{folder}/{names}"], limits=[1])[0].metadata_list)
    except Exception:  # no such folder, or a filesystem error: no hint
        return False


def _check_input_schema(pattern: str, path: str, column_map: dict[str, str], *, alone: bool = False) -> int:
    """Read the footer of one input file: it must be Parquet with the id and content columns.
    ``alone``: ``path`` is what the pattern names, no glob (a folder there gets a hint). Returns
    the file's rows (its footer's ``num_rows``).

    Raises:
        OptionError: The file is not readable Parquet, lacks a required column, or holds one of
            the document columns twice.
    """
    import pyarrow.parquet as pq

    try:
        with FileSystems.open(path) as f, pq.ParquetFile(f) as parquet:
            all_names = list(parquet.schema_arrow.names)
            rows = parquet.metadata.num_rows
    except Exception as err:  # pyarrow's ArrowInvalid, or an IO error by scheme
        hint = f"; for the files in a folder write {pattern}/" if alone and _has_files(path) else ""
        if os.path.basename(path).startswith((".", "_")) and not pattern.endswith("/"):
            folder = path[: len(path) - len(os.path.basename(path))]
            hint = f"; {folder} skips names starting with . or _ (Spark's _SUCCESS, Hadoop's .crc files)"
        raise OptionError(
            f"--input {pattern}: {path} is not a readable Parquet file ({one_line(err, 160)}){hint}"
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
    return rows


# -- output folders -------------------------------------------------------------------------------


def check_output(output: str, subfolders: Sequence[str]) -> None:
    """``--output`` (without its trailing ``/``) is a folder name on a Beam filesystem, not a file,
    and none of its ``subfolders`` holds files yet.

    Raises:
        OptionError: As :func:`check_filesystem`, :func:`check_folder_name`,
            :func:`check_output_is_no_file` and :func:`check_output_empty` raise it.
    """
    check_filesystem("--output", output)
    check_folder_name("--output", output)
    check_output_is_no_file(output)
    check_output_empty(output, subfolders)


def check_output_is_no_file(output: str) -> None:
    """A local ``--output`` must not be a file.

    Raises:
        OptionError: It is one.
    """
    if "://" not in output and os.path.exists(output) and not os.path.isdir(output):
        raise OptionError(f"--output {output}: is a file, not a directory")


def check_output_empty(output: str, subfolders: Sequence[str]) -> None:
    """None of ``output``'s ``subfolders`` holds a file (another run's output would mix with this one's).

    Raises:
        OptionError: Naming the first subfolder that does.
    """
    for sub in subfolders:
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
    the first write. Used by both jobs once their other checks of it have passed.

    Raises:
        OptionError: The directory cannot be created.
    """
    if "://" not in output:
        try:
            os.makedirs(output, exist_ok=True)
        except OSError as err:
            raise OptionError(f"--output {output}: cannot create the directory ({one_line(err)})") from None


# -- the previous run -----------------------------------------------------------------------------


def check_previous(previous: str, output: str) -> str:
    """The ``--previous`` directory, checked: another directory than ``--output``, holding a
    finished rechunk run (committed: :func:`pipelines.commit.unfinished_reason` finds nothing, so
    its ``_SUCCESS`` lists exactly its data files) whose ``chunks/`` and ``documents/`` are whole.

    Every Parquet footer there is read: each file must be Parquet with the columns the job reads,
    and ``chunks/`` must hold as many rows as the report says were written (a missing shard would
    otherwise lose the kept documents' chunks, in this run and every later one).

    Returns:
        ``previous`` without its trailing ``/``.

    Raises:
        OptionError: Any of that is not so.
    """
    if not previous.strip():
        raise OptionError("--previous: empty path; give an earlier run's output directory, or leave the option out")
    previous = previous.rstrip("/") or "/"
    _check_previous_folder(previous, output)
    _check_previous_committed(previous)
    written = _chunks_written(previous)
    rows = {sub: _count_previous_rows(previous, sub, schema) for sub, schema in _PREVIOUS_FILES}
    if rows["chunks"] != written:
        raise OptionError(
            f"--previous {previous}: chunks/ holds {rows['chunks']} rows but report.json says {written} "
            "were written; the output is incomplete or was changed"
        )
    return previous


#: The subfolders of a previous run that the job reads, and the columns it needs there. An
#: output of a rechunk version without ``chunk_key`` is a valid previous run: its documents'
#: input fingerprints name that version, so none of its chunks is kept, only its ids are read.
_PREVIOUS_FILES = (
    ("chunks", pa.schema([field for field in CHUNK_SCHEMA if field.name != "chunk_key"])),
    ("documents", MANIFEST_SCHEMA),
)


def _check_previous_folder(previous: str, output: str) -> None:
    """``previous`` is a folder name on a Beam filesystem, neither ``output`` nor holding it."""
    check_filesystem("--previous", previous)
    check_folder_name("--previous", previous)
    if worker_path(previous) == worker_path(output):
        raise OptionError(f"--previous {previous}: must be another directory than --output")
    if worker_path(output).startswith(worker_path(previous).rstrip("/") + "/"):
        raise OptionError(f"--output {output}: must not be inside --previous {previous}")


def _check_previous_committed(previous: str) -> None:
    """``previous`` is a committed run's output (its ``_SUCCESS`` and the files it lists)."""
    from pipelines.commit import unfinished_reason

    reason = unfinished_reason(previous)
    if reason is not None:
        raise OptionError(
            f"--previous {previous}: not a finished run: {reason}; give a committed run's output, "
            "or run without --previous"
        )


def _chunks_written(previous: str) -> int:
    """``chunks_written`` of the previous run's ``report.json``."""
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
    return written


def _count_previous_rows(previous: str, sub: str, expected) -> int:
    """The rows of the Parquet files in ``previous``'s ``sub``/, each checked to hold the columns
    of the ``expected`` schema (a list column may name its items otherwise)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

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
    rows = 0
    for path in sorted(m.path for m in matched):
        try:
            with FileSystems.open(path) as f, pq.ParquetFile(f) as parquet:
                types = {field.name: field.type for field in parquet.schema_arrow}
                rows += parquet.metadata.num_rows
        except Exception as err:
            raise OptionError(
                f"--previous {previous}: {path} is not a readable Parquet file ({one_line(err, 160)})"
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
    return rows
